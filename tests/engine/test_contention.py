"""Hand-computed contention cases on hand-built topologies (shortest-path routing)."""

import numpy as np
import pytest

from engine_helpers import NVLINK_BW, gpu_ring, star, step
from fabricsim.engine import time_traffic
from fabricsim.engine.protocols import BASE_LATENCY_US, HW_LATENCY_US, US
from fabricsim.hardware import get_link

EFF = get_link("nvlink4").efficiency
LINK = NVLINK_BW * EFF  # effective bytes/s of one NVLink 4 link
LAT = 1e-7  # per hop in the hand-built topologies
RING_SIMPLE = BASE_LATENCY_US["Ring"][2] * US
HOP_SIMPLE = HW_LATENCY_US["nvlink"]["Ring"][2] * US
S = 64 << 20

pytestmark = pytest.mark.usefixtures("bfs_routing")


@pytest.mark.parametrize("level", ["flow", "analytical"])
def test_two_gpus_over_one_link(level):
    topo = gpu_ring(2)
    r = time_traffic(topo, [step([0], [1], S)], collective="sendrecv", algorithm="direct", nranks=2, nbytes=S, level=level)
    assert r.time == pytest.approx(RING_SIMPLE + HOP_SIMPLE + LAT + S / LINK, rel=1e-9)
    assert r.busbw == pytest.approx(r.algbw)
    assert r.bottlenecks[0].link == 0 and r.bottlenecks[0].tech == "nvlink4" and r.bottlenecks[0].flows == 1
    assert r.bound == "bandwidth-bound" and r.level == level
    assert r.link_bytes[0] == S and r.link_bytes[1] == 0


@pytest.mark.parametrize("level", ["flow", "analytical"])
def test_ring_on_a_uniform_ring(level):
    n = 4
    topo = gpu_ring(n, count=2)
    src = np.arange(n)
    steps = [step(src, (src + 1) % n, S / n, repeat=2 * (n - 1))]
    r = time_traffic(topo, steps, collective="all_reduce", algorithm="ring", nranks=n, nbytes=S, level=level)
    # 64 MiB on 2 channels, a loop of 4 ranks x 2 MiB chunks: 4 loops, each after the first waiting one step at
    # its boundary (engine.chunking.drains_every_loop)
    expect = RING_SIMPLE + (2 * (n - 1) + 3) * (HOP_SIMPLE + LAT) + 2 * (n - 1) * S / n / (2 * LINK)
    assert r.time == pytest.approx(expect, rel=1e-9)
    assert r.busbw == pytest.approx(S / expect * 2 * (n - 1) / n)
    assert r.bottleneck_count == n  # every forward link equally loaded
    assert r.timeline.step_end.shape == (2 * (n - 1),) and r.timeline.step_end[-1] == pytest.approx(r.time)


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_incast_k_flows_share_one_link(k):
    topo = star(k + 1)
    steps = [step(np.arange(k), np.full(k, k), S)]
    r = time_traffic(topo, steps, collective="sendrecv", algorithm="direct", nranks=k + 1, nbytes=S)
    bw_time = r.time - r.latency_time
    assert bw_time == pytest.approx(k * S / LINK, rel=1e-9)  # each flow gets 1/k of the link
    fl = r.timeline
    assert np.allclose(fl.flow_end - fl.flow_start, fl.flow_end[0] - fl.flow_start[0])
    assert r.bottlenecks[0].flows == k


def test_unequal_flows_finish_in_turn_at_flow_level_only():
    topo = star(3)
    steps = [step([0, 1], [2, 2], [S, 3 * S])]
    flow = time_traffic(topo, steps, collective="sendrecv", algorithm="direct", nranks=3, nbytes=S)
    ana = time_traffic(topo, steps, collective="sendrecv", algorithm="direct", nranks=3, nbytes=S, level="analytical")
    # 4S cross the shared link either way: uncongested elsewhere, both levels agree
    assert flow.bandwidth_time == pytest.approx(4 * S / LINK, rel=1e-9)
    assert ana.bandwidth_time == pytest.approx(flow.bandwidth_time, rel=1e-9)
    ends = flow.timeline.flow_end - flow.timeline.flow_start
    assert ends[0] < ends[1]  # the small flow finishes first (at 2S / link)


def test_chain_broadcast_is_pipelined_not_store_and_forward():
    n = 4
    topo = gpu_ring(n)
    steps = [step([i], [i + 1], S) for i in range(n - 1)]  # each hop forwards the whole buffer
    r = time_traffic(topo, steps, collective="broadcast", algorithm="ring", nranks=n, nbytes=S)
    store_and_forward = (n - 1) * S / LINK
    assert r.slices > 1
    assert r.bandwidth_time < 0.5 * store_and_forward
    assert r.bandwidth_time == pytest.approx(S / LINK * (1 + (n - 2) / r.slices), rel=1e-9)


def test_protocols_change_wire_bytes_and_latency():
    topo = gpu_ring(2)
    small, big = 4096, S
    times = {p: [time_traffic(topo, [step([0], [1], b)], collective="sendrecv", algorithm="ring", nranks=2, nbytes=b,
                              protocol=p).time for b in (small, big)] for p in ("ll", "ll128", "simple")}
    assert times["ll"][0] < times["simple"][0] < times["ll128"][0]  # NCCL base + hop latencies: LL lowest, LL128 highest
    assert times["simple"][1] < times["ll128"][1] < times["ll"][1]  # and half the bandwidth


def test_background_flow_halves_the_bandwidth():
    topo = star(3)
    alone = time_traffic(topo, [step([0], [2], S)], collective="sendrecv", algorithm="direct", nranks=3, nbytes=S)
    loaded = time_traffic(topo, [step([0], [2], S)], collective="sendrecv", algorithm="direct", nranks=3, nbytes=S,
                          background=([1], [2]))
    assert loaded.bandwidth_time == pytest.approx(2 * alone.bandwidth_time, rel=1e-9)


def test_nvls_uses_switch_links_at_nvls_efficiency():
    n = 4
    topo = star(n)
    ranks = np.arange(n)
    chunk = S / n
    innet = [("nvls", ranks, ranks, chunk)]
    r = time_traffic(topo, [step([], [], [], innet=innet)], collective="all_reduce", algorithm="nvls", nranks=n, nbytes=S)
    assert r.bandwidth_time == pytest.approx(chunk / (LINK * 0.85), rel=1e-9)  # Hopper nvlsEfficiency
    up = np.flatnonzero(r.link_bytes > 0)
    assert up.shape[0] == 2 * n

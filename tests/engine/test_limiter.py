"""Result.limiter names what really bounds the bandwidth time: the busiest links, the per-peer p2p cap on
transfers across the network, or NCCL's per-channel bus bandwidth cap, with its value and source."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.cli.main import main
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best

GIB = 1 << 30


@pytest.fixture(scope="module")
def eight_nodes():
    return load_cluster("dgx-h100", nodes=8)


def test_sendrecv_across_nodes_is_limited_by_the_per_peer_cap(eight_nodes):
    choice = best(eight_nodes, "sendrecv", GIB)
    res, cap = choice.result, choice.job.net_peer_bw
    assert res.limiter.kind == "peer cap" and res.limiter.rate == cap
    assert "p2p" in res.limiter.source or "point-to-point" in res.limiter.source
    assert res.limiter.time == pytest.approx(res.bandwidth_time, rel=1e-6)  # the cap binds
    assert res.nbytes / res.bandwidth_time == pytest.approx(cap, rel=1e-6)
    assert res.bottlenecks[0].utilisation < 0.9  # the busiest link is not what limits


def test_sendrecv_between_two_nodes_is_limited_by_the_nic(eight_nodes):
    res = best(eight_nodes, "sendrecv", GIB, ranks=np.arange(16, dtype=np.int32)).result
    assert res.limiter.kind == "links" and res.limiter.rate == res.bottlenecks[0].effective_capacity


def test_ll_is_limited_by_ncclss_per_channel_cap():
    res = best(load_cluster("dgx-h100"), "all_reduce", 1 << 20, algos=["ring"], protos=["ll"]).result
    assert res.limiter.kind == "channel cap" and "llMaxBws" in res.limiter.source
    assert res.limiter.time == pytest.approx(res.bandwidth_time, rel=1e-9)
    assert res.limiter.rate == pytest.approx(res.nbytes / res.bandwidth_time, rel=1e-9)


def test_a_link_bound_collective_names_its_bottleneck():
    res = best(load_cluster("dgx-h100"), "all_reduce", GIB, algos=["ring"], protos=["simple"]).result
    assert res.limiter.kind == "links" and res.bottlenecks[0].name in res.limiter.what
    assert "efficiency" in res.limiter.source


@pytest.mark.parametrize("collective,algos", [("all_reduce", None), ("all_gather", ["ring"]), ("alltoall", None),
                                              ("sendrecv", None), ("all_reduce", ["tree"])])
def test_the_limiter_is_a_lower_bound_and_the_largest(eight_nodes, collective, algos):
    res = best(eight_nodes, collective, GIB, algos=algos).result
    assert res.limiter.time <= res.bandwidth_time * (1 + 1e-9)
    assert res.limiter.rate > 0 and res.limiter.source and str(res.limiter)


def test_explain_keeps_fabricsims_reason_where_nccls_model_has_none(capsys):
    rc = main(["perf", "sendrecv", "--cluster", "dgx-h100", "--nodes", "8", "-b", "1G", "-e", "1G", "--explain"])
    out = capsys.readouterr().out
    line = out.strip().splitlines()[-1]
    assert rc == 0 and "per-peer network cap 28.0 GB/s" in line
    assert "NCCL's model cannot price this call (unknown collective 'sendrecv'" in line

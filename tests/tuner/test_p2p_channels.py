"""NCCL point-to-point channels per network peer (paths.cc) and the engine's cap on network p2p transfers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricsim import schedules
from fabricsim.engine import simulate
from fabricsim.errors import FabricsimError
from fabricsim.topology import build
from fabricsim.topology.presets import preset_spec
from fabricsim.tuner import nccl_model
from fabricsim.tuner.select import P2P_PER_CHANNEL_NET_BW, best, p2p_channels_per_net_peer


def _system(nodes: int, preset: str = "dgx-h100"):
    return nccl_model.system_from_topology(build(preset_spec(preset, nodes=nodes)))


@pytest.mark.parametrize("nodes, version, expected", [
    (2, (2, 30), 4),   # ceil(50 GB/s / 14) = 4 channels; 4 x ceil(16/8) fits the p2p channels
    (10, (2, 30), 1),  # 80 ranks: halved until channels x ceil(80/8) fit 16 p2p channels
    (2, (2, 28), 2),   # v2.20-2.28: 2 per net peer while 2 x nRanks <= 4 x comm channels
    (8, (2, 28), 1),
    (10, (2, 18), 2),  # before v2.20: NCCL_NCHANNELS_PER_NET_PEER default 2
])
def test_channels_per_net_peer_follow_nccl_versions(nodes, version, expected):
    assert p2p_channels_per_net_peer(_system(nodes), version) == expected


def test_sendrecv_across_nodes_is_capped_by_the_p2p_channels():
    topo = build(preset_spec("dgx-h100", nodes=10))
    ranks = np.arange(80, dtype=np.int32)
    choice = best(topo, "sendrecv", 1 << 30, ranks=ranks, level="analytical", nccl_version=(2, 29))
    assert choice.result.busbw == pytest.approx(P2P_PER_CHANNEL_NET_BW, rel=0.02)
    one_node = best(topo, "sendrecv", 1 << 30, ranks=ranks[:8], level="analytical")
    assert one_node.result.busbw > 10 * P2P_PER_CHANNEL_NET_BW  # NVLink peers: no network cap


def test_net_peer_bw_caps_only_network_transfers_and_is_checked():
    topo = build(preset_spec("dgx-h100", nodes=2))
    sched = schedules.build_schedule("sendrecv", "direct", 16)
    free = simulate(topo, sched, 1 << 28, level="analytical")
    capped = simulate(topo, sched, 1 << 28, level="analytical", net_peer_bw=10e9)
    assert capped.busbw == pytest.approx(10e9, rel=0.02) and free.busbw > capped.busbw
    flow = simulate(topo, sched, 1 << 28, level="flow", net_peer_bw=10e9)
    assert flow.busbw == pytest.approx(capped.busbw, rel=0.02)
    with pytest.raises(FabricsimError, match="net_peer_bw"):
        simulate(topo, sched, 1 << 20, net_peer_bw=0.0)


def test_collnet_chain_channels_leave_each_node_on_their_own_head():
    s = schedules.Structure(nranks=32, ranks_per_node=8, has_nvswitch=True, has_sharp=True)
    sched = schedules.build_schedule("all_reduce", "collnet_chain", 32, structure=s, channels=8)
    heads = sorted({int(r) for st in sched.steps for op in st.innet for r in np.asarray(op.inputs).tolist()})
    assert sched.channels == 8 and heads == sorted(n * 8 + c for n in range(4) for c in range(8))
    spec = dataclasses.replace(preset_spec("dgx-b200", nodes=4), sharp=True)
    topo = build(spec)
    one = simulate(topo, schedules.build_schedule("all_reduce", "collnet_chain", 32, structure=s), 1 << 30,
                   level="analytical")
    eight = simulate(topo, sched, 1 << 30, level="analytical")
    assert eight.busbw > 6 * one.busbw  # one NIC per channel instead of one per node

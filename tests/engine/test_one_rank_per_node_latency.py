"""With one rank per node every step of an algorithm crosses the network and NCCL prices its latency as the
Tree's network hop (tuning.cc: "With ppn=1 latencies are fully exposed"); with several ranks per node each
algorithm keeps its own network hop latency."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.engine import protocols
from fabricsim.engine.protocols import HOP_NET, HW_LATENCY_US, ONE_RANK_PER_NODE_NET_FAMILY, protocol_model
from fabricsim.topology import load_cluster
from fabricsim.tuner.select import best
from fabricsim.units import US

PROTOS = ("ll", "ll128", "simple")


@given(nodes=st.integers(2, 64), ppn=st.integers(1, 8), proto=st.sampled_from(PROTOS),
       algo=st.sampled_from(["ring", "tree"]))
def test_the_network_hop_is_the_trees_exactly_when_each_node_has_one_rank(nodes, ppn, proto, algo):
    m = protocol_model(algo, proto, "Hopper", nodes, 8, "all_reduce", nranks=nodes * ppn)
    family = "Ring" if algo == "ring" else "Tree"
    expected = ONE_RANK_PER_NODE_NET_FAMILY if ppn == 1 else family
    assert m.hop_latency[HOP_NET] == pytest.approx(HW_LATENCY_US["net"][expected][PROTOS.index(proto)] * US)


def test_a_transports_own_step_cost_is_kept_with_one_rank_per_node():
    own = (1e-6, 2e-6, 3e-6)
    m = protocol_model("ring", "ll", "Hopper", 4, 8, "all_reduce", nranks=4, net_step=own)
    assert m.hop_latency[HOP_NET] == own[0]


def _ring_ll_latency(ranks: list[int]) -> float:
    topo = load_cluster("dgx-h100", nodes=2)  # a fresh topology: nothing it derived is shared between the runs
    gpus = np.array([n * topo.spec.gpus_per_node + g for n, g in ranks], dtype=np.int32)
    return best(topo, "all_reduce", 1024, ranks=gpus, algos=["ring"], protos=["ll"], level="analytical").result.latency_time


def test_a_ring_across_single_gpu_nodes_pays_the_trees_network_latency_on_each_network_step(monkeypatch):
    exposed = _ring_ll_latency([(0, 0), (1, 0)])
    monkeypatch.setattr(protocols, "ONE_RANK_PER_NODE_NET_FAMILY", "Ring")
    hidden = _ring_ll_latency([(0, 0), (1, 0)])
    # 2(n-1) = 2 ring steps, both across the network
    assert exposed - hidden == pytest.approx(2 * (HW_LATENCY_US["net"]["Tree"][0] - HW_LATENCY_US["net"]["Ring"][0]) * US)
    assert exposed > hidden

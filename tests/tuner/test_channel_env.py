"""The run's channel bounds (NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS: engine.chunking.ChannelEnv) as NCCL applies
them: ncclTopoPostset keeps min(maxNchannels, n, maxCTAs) channels and copies them up to max(minNchannels, minCTAs)
(v2.30.7-1 src/graph/connect.cc:492-506), only the CTA pair bounds the NVLS channels (src/transport/nvls.cc:235), and
a release without a pair leaves it open; the engine follows the bounded communicator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricsim import schedules
from fabricsim.engine import chunking
from fabricsim.engine.chunking import ChannelEnv, ChunkEnv
from fabricsim.errors import FabricsimError
from fabricsim.topology import build, preset_spec
from fabricsim.tuner import nccl_graph
from fabricsim.tuner.nccl_model import nccl_times, system_from_topology
from fabricsim.tuner.select import best, channel_plan

H100 = build(preset_spec("dgx-h100"))
A100_2 = build(preset_spec("dgx-a100", nodes=2))


def _system(topo, version=None, **bounds):
    return dataclasses.replace(system_from_topology(topo, version=version), channel_env=ChannelEnv(**bounds))


def _bounded(n: int, **bounds) -> tuple[int, int]:
    return nccl_graph.bounded_channels(_system(H100, **bounds), n)


@pytest.mark.parametrize("bounds, kept_runs", [
    ({}, (16, 16)),
    ({"max_nchannels": 1}, (1, 1)),
    ({"max_nchannels": 4, "max_ctas": 2}, (2, 2)),  # the smaller maximum
    ({"min_nchannels": 24}, (16, 24)),  # copies of the 16 up to 24
    ({"max_nchannels": 2, "min_nchannels": 8}, (2, 8)),  # 'combining max, then min': the first 2, copied to 8
    ({"max_ctas": 2, "min_nchannels": 8}, (2, 8)),
    ({"min_ctas": 20}, (16, 20)),
    ({"max_nchannels": 1000}, (16, 16)),  # above MAXCHANNELS: NCCL caps it (connect.cc:353)
    ({"min_nchannels": 1000}, (16, 64)),  # ... the minimum too (connect.cc:338-341): MAXCHANNELS 64
])
def test_postset_keeps_the_first_channels_then_copies_them(bounds, kept_runs):
    assert _bounded(16, **bounds) == kept_runs


def test_a_release_without_the_variables_leaves_its_bounds_open():
    assert nccl_graph.bounded_channels(_system(H100, version="2.16", max_ctas=1), 16) == (16, 16)  # CTAs: 2.17.1
    assert nccl_graph.bounded_channels(_system(H100, version="2.17", max_ctas=1), 16) == (1, 1)
    a100 = build(preset_spec("dgx-a100"))
    assert nccl_graph.bounded_channels(_system(a100, version="2.4", max_nchannels=1), 16) == (16, 16)  # from 2.5.6
    assert nccl_graph.bounded_channels(_system(a100, version="2.5", max_nchannels=1), 16) == (1, 1)
    # MAXCHANNELS of the release caps a bound: 32 before 2.25
    assert nccl_graph.bounded_channels(_system(a100, version="2.24", min_nchannels=1000), 16) == (16, 32)


def test_only_the_cta_pair_bounds_the_nvls_channels():
    assert nccl_graph.nvls_channels(_system(H100)) == 16
    assert nccl_graph.nvls_channels(_system(H100, max_nchannels=1, min_nchannels=40)) == 16
    assert nccl_graph.nvls_channels(_system(H100, max_ctas=4)) == 4
    assert nccl_graph.nvls_channels(_system(H100, min_ctas=20)) == 20


def test_nccl_2_22_to_2_27_copy_the_bounded_channels_up_to_the_nvls_channels():
    graphs = nccl_graph.search_graphs(_system(H100))
    # connect.cc copyChannels up to comm->nvlsChannels after the bounds (v2.22.3-1 src/graph/connect.cc:486-494)
    assert nccl_graph.comm_channels(_system(H100, version="2.26", max_nchannels=1), graphs) == 16
    assert nccl_graph.comm_channels(_system(H100, version="2.26", max_ctas=1), graphs) == 1  # NVLS bounded too
    assert nccl_graph.comm_channels(_system(H100, version="2.28", max_nchannels=1), graphs) == 1


def test_the_communicator_keeps_its_unbounded_counts_for_the_caps():
    graphs = nccl_graph.search_graphs(_system(H100))
    plain = nccl_graph.comm_plan(_system(H100), graphs)
    one = nccl_graph.comm_plan(_system(H100, max_ctas=1), graphs)
    assert (plain.natural_channels, plain.natural_nvls_channels) == (0, 0)
    assert (one.channels, one.nvls_channels) == (1, 1)
    assert (one.natural_channels, one.natural_nvls_channels) == (plain.channels, plain.nvls_channels)
    # a call on the one channel left gets that share of the per-channel caps NCCL prices on the unbounded channels
    for family, full in (("Ring", plain.channels), ("NVLS", plain.nvls_channels)):
        cut = chunking.call_chunks(one, family, "simple", "all_reduce", 1 << 30, 8, 1)
        assert cut.channels == 1 and cut.share == pytest.approx(1 / full)
    assert chunking.call_chunks(plain, "Ring", "simple", "all_reduce", 1 << 30, 8, 1).share == 1.0


def test_a_ring_across_nodes_leaves_each_node_on_the_channels_kept():
    ranks = np.arange(16, dtype=np.int32)
    structure = schedules.structure_from_topology(A100_2, ranks)
    sched, channels = channel_plan(A100_2, "all_reduce", "ring", ranks, structure)
    assert sched == 8  # one channel per NIC rail
    assert channel_plan(A100_2, "all_reduce", "ring", ranks, structure, channel_env=ChannelEnv(max_nchannels=2)) == \
        (2, channels)
    one = best(A100_2, "all_reduce", 1 << 30, ranks=ranks, algos=["ring"], protos=["simple"],
               chunk_env=ChunkEnv(channels=ChannelEnv(max_nchannels=1)))
    full = best(A100_2, "all_reduce", 1 << 30, ranks=ranks, algos=["ring"], protos=["simple"])
    assert one.channels == 1 and full.channels == channels
    # one HDR NIC per node against eight: the ring's network share falls with the NICs it uses
    assert one.result.busbw < full.result.busbw / 6


def test_nccls_model_counts_the_bounded_channels():
    # the ring plateau of ncclTopoGetAlgoTime reads comm->nChannels (src/graph/tuning.cc:648): with one channel it
    # starts at a 64th of the size
    system = system_from_topology(A100_2)
    size = 64 * 16 * 4  # 64 B per channel and rank on 4 channels, under 64 on NCCL's 16
    plain = nccl_times(system, "all_reduce", size)
    one = nccl_times(dataclasses.replace(system, channel_env=ChannelEnv(max_nchannels=1)), "all_reduce", size)
    assert one[("Ring", "Simple")] > plain[("Ring", "Simple")] and one[("Tree", "LL")] == plain[("Tree", "LL")]


def test_a_tree_bounded_to_its_search_channels_runs_tree_0_alone():
    # connectTrees: tree 0 on the search channels, tree 1 on their duplicates (src/graph/connect.cc:149-174)
    four = build(preset_spec("dgx-a100", nodes=4))
    ranks = np.arange(32, dtype=np.int32)
    search = nccl_graph.search_graphs(system_from_topology(four))["Tree"].n_channels

    def tree(**bounds):
        env = ChunkEnv(channels=ChannelEnv(**bounds)) if bounds else None
        return best(four, "all_reduce", 1 << 30, ranks=ranks, algos=["tree"], protos=["simple"], chunk_env=env)

    both, kept_all, kept_search = tree(), tree(max_nchannels=2 * search), tree(max_nchannels=search)
    assert both.job.schedule.meta == kept_all.job.schedule.meta and kept_all.result.time == both.result.time
    # one binary tree: an inner node's NICs carry its parent's and both children's traffic, which the mirrored tree
    # balances in the double binary tree
    assert kept_search.result.time > 1.3 * both.result.time
    single = schedules.build_schedule("all_reduce", "tree", 32, structure=schedules.structure_from_topology(
        four, ranks), channels=3, trees=1)
    assert single.channels == 3 and schedules.built_channels("tree", 3, trees=1) == 3
    assert schedules.built_channels("tree", 3) == 3  # each channel runs both trees (connectTrees)
    with pytest.raises(FabricsimError, match="trees=3"):
        schedules.build_schedule("all_reduce", "tree", 32, channels=2, trees=3)

"""The one vocabulary: its tables agree with what the engine, tuner and schedules can do, and its NCCL_ALGO /
NCCL_PROTO parser follows NCCL's documented syntax (comma list, any case, a leading '^' excludes)."""

import pytest

from fabricsim import vocab
from fabricsim.engine import nccl_constants as K
from fabricsim.engine.protocols import WIRE_EFFICIENCY
from fabricsim.errors import FabricsimError
from fabricsim.schedules import Structure, applicable, build_schedule


def test_every_algorithm_row_is_consistent():
    for name, a in vocab.ALGORITHMS.items():
        assert a.name == name
        assert set(a.collectives) <= set(vocab.COLLECTIVES) and set(a.nccl_collectives) <= set(vocab.COLLECTIVES)
        assert set(a.protocols) <= set(vocab.PROTOCOLS) and "simple" in a.protocols
        assert a.family in K.BASE_LAT and a.graph in K.BASE_LAT
        assert (a.nccl is None) == (a.nccl_id is None)
        assert a.protocols == ("simple",) or a.family in WIRE_EFFICIENCY  # LL/LL128 only where their constants exist


def test_every_scheduled_pair_builds_somewhere():
    """A row of the table is enough for the tuner: each (collective, algorithm) it lists has a schedule."""
    structures = [Structure(nranks=16, ranks_per_node=8, has_nvswitch=True, has_sharp=True),
                  Structure(nranks=8, ranks_per_node=8, has_nvswitch=True, has_sharp=True),
                  Structure(nranks=4, ranks_per_node=1, has_nvswitch=False, has_sharp=False)]
    for coll, algos in vocab.ALGORITHMS_BY_COLLECTIVE.items():
        for algo in algos:
            s = next(s for s in structures if algo in applicable(coll, s))
            assert build_schedule(coll, algo, s.nranks, structure=s).collective == coll


def test_nccl_tables_follow_nccl_order():
    assert list(vocab.NCCL_FUNCS.values()) == ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]
    assert list(vocab.NCCL_ALGO_NAMES.values()) == ["Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                                    "NVLSTree", "PAT"]
    assert vocab.NCCL_TUNED_ALGOS["all_gather"] == ("Ring", "CollNetDirect", "NVLS", "PAT")
    assert vocab.NCCL_ALGORITHMS_BY_COLLECTIVE["alltoall"] == ("direct", "pxn")
    assert vocab.P2P_COLLECTIVES == ("alltoall", "sendrecv")


@pytest.mark.parametrize("coll, n, factor", [("all_reduce", 8, 14 / 8), ("all_gather", 8, 7 / 8),
                                             ("gather", 4, 3 / 4), ("broadcast", 8, 1.0), ("sendrecv", 2, 1.0)])
def test_bus_factors(coll, n, factor):
    assert vocab.bus_factor(coll, n) == pytest.approx(factor)


@pytest.mark.parametrize("spec, names, exclude", [
    ("ring,tree", ("ring", "tree"), False),
    (" Ring , TREE ", ("ring", "tree"), False),
    ("^nvls", ("nvls",), True),
    ("^ NVLS,NVLSTree", ("nvls", "nvls_tree"), True),
    ("CollNetDirect,collnet_direct", ("collnet_direct",), False),
    (["ring", "pat"], ("ring", "pat"), False),
    (["^nvls", "tree"], ("nvls", "tree"), True),
    ("ring,,tree,", ("ring", "tree"), False),
])
def test_algorithm_lists(spec, names, exclude):
    assert vocab.parse_algorithms(spec) == vocab.Selection(names, exclude)


def test_per_collective_lists_and_the_old_collnet_name():
    text = "allreduce:tree,ring;allgather:^ring"
    assert vocab.parse_algorithms(text, "all_reduce") == vocab.Selection(("tree", "ring"))
    assert vocab.parse_algorithms(text, "all_gather") == vocab.Selection(("ring",), True)
    assert vocab.parse_algorithms(text, "broadcast") is None
    assert vocab.parse_protocols("allreduce:LL128", "all_reduce") == vocab.Selection(("ll128",))
    assert vocab.parse_algorithms("collnet").names == ("collnet_direct", "collnet_chain")
    with pytest.raises(FabricsimError, match="set per collective"):
        vocab.parse_algorithms(text)
    with pytest.raises(FabricsimError, match="'ring' is not 'collective:list'"):
        vocab.parse_algorithms("allreduce:tree;ring", "all_reduce")


def test_protocol_lists_and_nothing():
    assert vocab.parse_protocols("LL128,simple") == vocab.Selection(("ll128", "simple"))
    assert vocab.parse_protocols("^ll").apply(vocab.PROTOCOLS) == ["ll128", "simple"]
    assert vocab.parse_algorithms(None) is None and vocab.parse_algorithms("  ") is None
    sel = vocab.parse_algorithms("ring")
    assert vocab.parse_algorithms(sel) is sel and sel.spec() == "ring"


@pytest.mark.parametrize("spec, match", [
    ("ring,bogus", "unknown algorithm 'bogus'"),
    ("ring,^tree", "'\\^' may only start the list"),
    ("^", "names nothing"),
    ("^,", "names nothing"),
])
def test_bad_lists(spec, match):
    with pytest.raises(FabricsimError, match=match):
        vocab.parse_algorithms(spec)
    with pytest.raises(FabricsimError):
        vocab.parse_protocols(spec.replace("ring", "ll"))

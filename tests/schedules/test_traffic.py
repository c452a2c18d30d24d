"""Traffic derived from schedules against theory."""

import numpy as np
import pytest

import importlib

from fabricsim.schedules import Structure, build_schedule, rank_traffic, traffic

traffic_mod = importlib.import_module("fabricsim.schedules.traffic")  # the module, not the function

S = 1 << 20  # bytes, divisible by every rank count below times 4-byte elements


@pytest.mark.parametrize("n", [2, 4, 8, 16, 64])
@pytest.mark.parametrize("channels", [1, 2])
def test_ring_allreduce_sends_2_n_minus_1_over_n(n, channels):
    t = rank_traffic(build_schedule("all_reduce", "ring", n, channels=channels), S, 4)
    np.testing.assert_allclose(t["sent"], 2 * (n - 1) / n * S)
    np.testing.assert_allclose(t["received"], 2 * (n - 1) / n * S)
    assert t["steps"] == 2 * (n - 1)


@pytest.mark.parametrize("nodes,ppn", [(2, 8), (4, 4), (8, 1)])
@pytest.mark.parametrize("algo", ["collnet_direct", "collnet_chain"])
def test_sharp_allreduce_moves_S_up_and_down_per_node(algo, nodes, ppn):
    n = nodes * ppn
    t = rank_traffic(build_schedule("all_reduce", algo, n, structure=Structure(n, ppn, True, True)), S, 4)
    per_node_up = t["innet_sent"].reshape(nodes, ppn).sum(axis=1)
    per_node_down = t["innet_received"].reshape(nodes, ppn).sum(axis=1)
    np.testing.assert_allclose(per_node_up, S)
    np.testing.assert_allclose(per_node_down, S)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_nvls_allreduce_sends_and_receives_S_per_gpu(n):
    """Every GPU contributes S to the switch reductions and receives S of multicast results; on
    top, as head of 1/n of the data it gets its reduced chunk back (S/n) and multicasts it (S/n)."""
    sched = build_schedule("all_reduce", "nvls", n, structure=Structure(n, n, True))
    reduce_step, multicast_step = traffic(sched, S, 4)
    contributed = np.zeros(n)
    for _, inputs, _, b in reduce_step.innet:
        contributed[inputs] += b
    delivered = np.zeros(n)
    for _, _, outputs, b in multicast_step.innet:
        delivered[outputs] += b
    np.testing.assert_allclose(contributed, S)
    np.testing.assert_allclose(delivered, S)
    t = rank_traffic(sched, S, 4)
    np.testing.assert_allclose(t["innet_sent"], S + S / n)
    np.testing.assert_allclose(t["innet_received"], S + S / n)
    assert not t["sent"].any()


@pytest.mark.parametrize("algo", ["direct", "pairwise", "pxn"])
def test_alltoall_sends_n_minus_1_over_n(algo):
    n = 16
    t = rank_traffic(build_schedule("alltoall", algo, n, structure=Structure(n, 4)), S, 4)
    if algo == "pxn":  # relayed blocks cross NVLink first, then the network: only the final hops are distinct
        assert t["sent"].sum() > (n - 1) / n * S * n
    else:
        np.testing.assert_allclose(t["sent"], (n - 1) / n * S)


def test_step_traffic_is_compact_and_matches_totals():
    sched = build_schedule("all_reduce", "ring", 8)
    steps = traffic(sched, S, 4)
    assert len(steps) == 2 and steps[0].repeat == 7
    total = sum(float((st.nbytes * st.repeat).sum()) for st in steps)
    assert total == pytest.approx(rank_traffic(sched, S, 4)["sent"].sum())


def test_uneven_chunks_fold_to_the_mean_per_repetition():
    sched = build_schedule("all_reduce", "ring", 3)
    st = traffic(sched, 4 * 10, 4)[0]  # 10 elements in chunks 4, 3, 3; each transfer visits 2 of them
    assert st.repeat == 2
    assert float((st.nbytes * st.repeat).sum()) == pytest.approx(rank_traffic(sched, 4 * 10, 4)["sent"].sum() / 2)
    assert set(np.round(st.nbytes * 2).astype(int)) <= {12 + 16, 12 + 12, 16 + 12}


def test_pipelined_tree_fill_and_drain_carry_no_bytes():
    """Each edge of a pipelined chain moves the message once, not once per repetition."""
    sched = build_schedule("broadcast", "ring", 4, root=0)
    total = sum(float((st.nbytes * st.repeat).sum()) for st in traffic(sched, S, 4))
    assert total == pytest.approx(3 * S)


@pytest.mark.parametrize("algo,kwargs", [("ring", {"channels": 2}), ("tree", {"pipeline": 3}), ("hierarchical", {})])
def test_window_sums_equal_walking_every_repetition(monkeypatch, algo, kwargs):
    sched = build_schedule("all_reduce", algo, 48, structure=Structure(48, 8), **kwargs)
    walked = rank_traffic(sched, 4 * 1001, 4)
    monkeypatch.setattr(traffic_mod, "_LOOP_LIMIT", 0)
    fast = rank_traffic(sched, 4 * 1001, 4)
    np.testing.assert_allclose(fast["sent"], walked["sent"])
    np.testing.assert_allclose(fast["received"], walked["received"])


@pytest.mark.parametrize("algo,n,kwargs", [("tree", 48, {"pipeline": 3}), ("tree", 16, {}), ("collnet_chain", 16, {})])
def test_active_windows_match_the_repetitions_that_move_bytes(algo, n, kwargs):
    """Each transfer's (first, last) active repetition is where walking the pipeline finds its bytes."""
    sched = build_schedule("all_reduce", algo, n, structure=Structure(n, 8, has_sharp=True), **kwargs)
    cs = traffic_mod._prefix(sched, 4 * 1001, 4)
    for step, st in zip(sched.steps, traffic(sched, 4 * 1001, 4)):
        assert st.active is not None
        first, last = st.active
        chunks = np.concatenate([step.src_chunk, [o.chunk for o in step.innet]]).astype(np.int64)
        moved = np.array([traffic_mod._span_bytes(cs, step.chunks_at(chunks, k), None) > 0 for k in range(step.repeat)])
        busy = moved.any(axis=0)
        np.testing.assert_array_equal(first[busy], moved.argmax(axis=0)[busy])
        np.testing.assert_array_equal(last[busy], step.repeat - 1 - moved[::-1].argmax(axis=0)[busy])
        assert (first[~busy] > last[~busy]).all()


def test_rings_need_no_windows():
    assert all(st.active is None for st in traffic(build_schedule("all_reduce", "ring", 8), S, 4))


def test_schedule_memory_grows_linearly_with_ranks():
    s1, s2 = Structure(1024, 8), Structure(8192, 8)
    for algo in ("ring", "hierarchical", "tree"):
        small = build_schedule("all_reduce", algo, 1024, structure=s1).nbytes_held
        large = build_schedule("all_reduce", algo, 8192, structure=s2).nbytes_held
        assert large / small < 8 * 1.1


def test_nbytes_must_be_whole_elements():
    from fabricsim.errors import FabricsimError

    with pytest.raises(FabricsimError, match="whole number"):
        traffic(build_schedule("all_reduce", "ring", 4), 10, 4)


@pytest.mark.parametrize("collective,algo,structure", [
    ("all_reduce", "ring", Structure(16, 8)), ("all_gather", "ring", Structure(8, 8)),
    ("reduce_scatter", "ring", Structure(16, 4)), ("broadcast", "ring", Structure(8, 4)),
    ("all_reduce", "tree", Structure(16, 4)), ("all_reduce", "nvls", Structure(8, 8, True)),
    ("all_reduce", "nvls_tree", Structure(32, 8, True)), ("all_reduce", "rabenseifner", Structure(8, 8)),
    ("all_gather", "bruck", Structure(8, 8)), ("all_reduce", "collnet_direct", Structure(16, 4, True, True)),
    ("alltoall", "pairwise", Structure(8, 8)),
])
def test_step_facts_say_what_the_traffic_says(collective, algo, structure):
    """Where step_facts answers (every chunk holds bytes), each step's repeat, whether it moves bytes and whether it
    has pipeline windows are what `traffic` gives; it answers for a ring AllReduce (the tuner's bound relies on it)."""
    sched = build_schedule(collective, algo, structure.nranks, structure=structure, channels=2)
    pieces = sched.nchunks if sched.chunkmap is None else int(np.prod(sched.chunkmap.split))
    facts = traffic_mod.step_facts(sched, pieces * 4, 4)
    if (collective, algo) == ("all_reduce", "ring"):
        assert facts is not None
    if facts is None:
        return
    said = [(st.repeat, bool(((st.src != st.dst) & (st.nbytes > 0)).any()) or bool((st.innet.nbytes > 0).any()),
             st.active is not None) for st in traffic(sched, pieces * 4, 4)]
    assert facts == said

"""Stragglers on Megatron's synchronous step: a slow GPU's stage paces its pipeline (flow shop), the slowest replica
the step, and the breakdown adds up to the time it costs; jitter gives a seeded step-time distribution; faults reach
`train` end to end."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import AlphaBeta
from hypothesis import given, settings
from hypothesis import strategies as st

import fabricsim as fs
from fabricsim.errors import FabricsimError
from fabricsim.hardware import get_gpu
from fabricsim.training import parallel as P
from fabricsim.training import stragglers as S
from fabricsim.training.models import MODELS
from fabricsim.training.step import step_time

L70 = MODELS["llama3-70b"]
H100 = get_gpu("H100")


def _timed(par, comm):
    return lambda f: step_time(L70, par, H100, comm, compute_speed=f)


def _straggle(par, speeds, comm=None):
    comm = comm or AlphaBeta()
    healthy = step_time(L70, par, H100, comm)
    return (healthy, *S.straggle(healthy, speeds, _timed(par, comm)))


PP = P.Parallelism(tp=8, pp=4, dp=4, global_batch=64)  # m = 16 micro-batches per pipeline


def test_no_straggler_or_full_speed_is_the_healthy_step_exactly():
    healthy, same, how = _straggle(PP, {})
    assert same is healthy and how.step == healthy.step_time
    healthy, full, _ = _straggle(PP, {43: 1.0})
    assert full.step_time == healthy.step_time


def test_a_slow_gpu_costs_its_stage_on_the_critical_path():
    healthy, slow, how = _straggle(PP, {43: 0.5})
    comm = AlphaBeta()
    stretched = step_time(L70, PP, H100, comm, compute_speed=0.5)
    m = PP.micro_batches
    t, t_s = S.per_micro_batch(healthy), S.per_micro_batch(stretched)
    assert (how.per_mb, how.per_mb_slow) == (t, t_s)
    opt = healthy.compute_parts["optimizer"]
    assert stretched.compute - 2 * opt == pytest.approx(2 * (healthy.compute - opt))  # its kernels take twice as long
    # the flow shop: m micro-batches at the slow stage's pace, the other 3 stages fill and drain at theirs
    assert how.parts["slow stage"] == pytest.approx(m * (t_s - t))
    assert how.parts["fill/drain"] == pytest.approx(0.0, abs=1e-12)
    pipeline = m * t_s + (PP.pp - 1) * t
    rest = stretched.compute_parts["optimizer"] + healthy.exposed["pp"] + stretched.exposed["dp"]
    assert slow.step_time == pytest.approx(pipeline + rest)
    assert slow.step_time - healthy.step_time == pytest.approx(sum(how.parts.values()))
    assert slow.step_time == pytest.approx(slow.compute + slow.bubble + sum(slow.exposed.values()))
    assert slow.tokens_per_s == pytest.approx(healthy.tokens_per_s * healthy.step_time / slow.step_time)
    assert how.where == ("Megatron rank 43: TP group 40-47, PP stage 1 of 4, DP replica 1 of 4 at x0.5",)


def test_where_the_straggler_sits_does_not_matter_but_how_many_stages_it_slows_does():
    first = _straggle(PP, {0: 0.5})[1].step_time
    last = _straggle(PP, {PP.n_gpus - 1: 0.5})[1].step_time
    assert first == pytest.approx(last)
    same_stage = _straggle(PP, {0: 0.5, 3: 0.5})[1].step_time  # both in TP group 0: one slow stage
    two_stages = _straggle(PP, {0: 0.5, 32: 0.5})[1].step_time  # stages 0 and 1 of replica 0
    other_replica = _straggle(PP, {0: 0.5, 40: 0.5})[1].step_time  # stage 1 of replica 1: a replica of its own
    assert same_stage == pytest.approx(first) and other_replica == pytest.approx(first)
    assert two_stages > first


def test_interleaving_charges_the_fill_by_chunk():
    par = P.Parallelism(tp=8, pp=4, dp=4, vp=5, global_batch=64)
    healthy, slow, how = _straggle(par, {43: 0.5})
    t = S.per_micro_batch(healthy)
    assert healthy.bubble == pytest.approx((par.pp - 1) / par.vp * t)
    assert slow.bubble == pytest.approx(healthy.bubble)  # the healthy stages fill and drain


def test_jitter_is_a_seeded_distribution_that_grows_with_the_job():
    healthy = step_time(L70, PP, H100, AlphaBeta())
    a = S.jitter(healthy, {}, 0.05, 300, seed=1)
    assert np.array_equal(a.steps, S.jitter(healthy, {}, 0.05, 300, seed=1).steps)
    assert not np.array_equal(a.steps, S.jitter(healthy, {}, 0.05, 300, seed=2).steps)
    assert a.steady == pytest.approx(healthy.step_time)
    assert a.steady < a.quantile(0.5) < a.quantile(0.99) <= a.steps.max()
    bigger = P.Parallelism(tp=8, pp=4, dp=32, global_batch=512)  # 8x the replicas: the slowest of more draws
    b = S.jitter(step_time(L70, bigger, H100, AlphaBeta()), {}, 0.05, 300, seed=1)
    assert b.quantile(0.5) / b.steady > a.quantile(0.5) / a.steady
    slow = S.jitter(healthy, {43: 0.5}, 0.05, 300, seed=1)
    assert slow.quantile(0.5) > a.quantile(0.5) and slow.steady > a.steady


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 0.5), st.integers(0, 2**32))
def test_lognormal_factors_have_mean_one(sigma, seed):
    par = P.Parallelism(tp=1, pp=1, dp=1, global_batch=1)
    one = S.jitter(step_time(L70, par, H100, AlphaBeta()), {}, sigma, 4000, seed)
    # one GPU, one stage: the step is compute x factor + the rest, so the mean factor is 1 up to sampling noise
    assert one.steps.mean() == pytest.approx(one.steady, rel=6 * sigma / np.sqrt(4000) + 1e-9)


def test_slow_gpus_map_to_megatron_ranks_through_the_placement():
    assert S.megatron_speeds({5: 0.5, 99: 0.7}, 64, None) == {5: 0.5}
    placement = np.array([0, 1, 2, 3, 8, 9, 10, 11])
    assert S.megatron_speeds({9: 0.5, 4: 0.3}, 8, placement) == {5: 0.5}


@pytest.mark.parametrize("sigma,steps,match", [(0.0, 10, "positive"), (-1.0, 10, "positive"), (0.1, 0, "steps=0")])
def test_bad_jitter_is_one_error(sigma, steps, match):
    with pytest.raises(FabricsimError, match=match):
        S.jitter(step_time(L70, PP, H100, AlphaBeta()), {}, sigma, steps, 0)


def test_train_charges_a_straggler_a_slow_nic_and_jitter_end_to_end():
    r = fs.train("llama3-8b", "dgx-h100", [16], tp=8, global_batch=16,
                 faults={"degrade": ["node1.gpu3:0.5", "node1.nic*:0.25"]}, jitter=0.05, steps=20, seed=4)
    base, what = r.ran("baseline")[0], r.ran("what-if")[0]
    assert what.step_time > base.step_time and "degrade node1.gpu3:0.5" in r.title("what-if")
    how = r.whatif.straggles[16]
    assert how.where == ("Megatron rank 11: TP group 8-15, PP stage 0 of 1, DP replica 1 of 2 at x0.5",)
    assert how.healthy > base.step_time  # the slow NICs slow the DP all-reduce before any compute straggles
    assert r.whatif.jitters[16].steps.size == 20
    with pytest.raises(FabricsimError, match="steps counts the jittered steps drawn: give jitter too"):
        fs.train("llama3-8b", "dgx-h100", [16], tp=8, steps=20)


def test_a_collective_of_groups_runs_at_the_pace_of_the_group_with_a_slow_link():
    from fabricsim.topology import Faults, apply_faults, load_cluster
    from fabricsim.training.comm import engine_comm_model

    two = load_cluster("dgx-h100", nodes=2)
    groups = np.arange(16, dtype=np.int32).reshape(2, 8)  # one TP group per node: the shortcut times group 0 alone
    healthy = engine_comm_model(two).time("all_gather", groups, 64 << 20)
    for where in ("node1.gpu3 -> domain1.nvswitch0:1/2", "node0.gpu3 -> domain0.nvswitch0:1/2"):
        slow = engine_comm_model(apply_faults(two, Faults(degrade=(where,)))).time("all_gather", groups, 64 << 20)
        assert slow > 1.5 * healthy


def test_a_straggler_at_half_speed_on_8192_gpus_costs_its_critical_path():
    """The issue's case: one GPU at 0.5x in an 8,192-GPU llama3-70b step (tp 8, pp 4) on superpod-h100. Its stage
    computes each micro-batch twice as long (its TP collectives hiding behind longer GEMMs), the pipeline is a flow
    shop paced by that stage, the slow GPU's optimizer step ends the step; the printed breakdown adds up to it."""
    from fabricsim.cli.train import _whatif_table
    from fabricsim.topology import Faults
    from fabricsim.training.runs import WHATIF, train_sweep

    sweep = train_sweep("llama3-70b", "superpod-h100", [8192], tp=8, pp=4, faults=Faults(degrade=("node5.gpu3:0.5",)))
    healthy, slow = sweep.runs["baseline"][0], sweep.runs[WHATIF][0]
    how = sweep.whatif.straggles[8192]
    par = healthy.parallelism
    m, opt = par.micro_batches, healthy.compute_parts["optimizer"]
    assert (par.n_gpus, par.tp, par.pp) == (8192, 8, 4) and m > 1
    compute_mb = (healthy.compute - opt) / m
    t = S.per_micro_batch(healthy)
    t_slow = t + compute_mb + (slow.exposed["tp"] - healthy.exposed["tp"]) / m  # its kernels take twice as long
    assert how.per_mb == pytest.approx(t) and how.per_mb_slow == pytest.approx(t_slow)
    predicted = m * t_slow + (par.pp - 1) * t + 2 * opt + healthy.exposed["pp"] + slow.exposed["dp"]
    assert slow.step_time == pytest.approx(predicted) and how.step == slow.step_time
    assert slow.step_time - healthy.step_time == pytest.approx(sum(how.parts.values()))
    assert how.parts["slow stage"] == pytest.approx(m * (t_slow - t)) and how.parts["fill/drain"] == pytest.approx(0)
    assert how.where == ("Megatron rank 43: TP group 40-47, PP stage 0 of 4, DP replica 5 of 256 at x0.5",)
    printed = _whatif_table(sweep)
    assert f"8192   {healthy.step_time:.3f}           {slow.step_time:.3f}" in printed
    assert (f"critical path: {healthy.step_time:.3f} s -> {slow.step_time:.3f} s "
            f"({slow.step_time / healthy.step_time - 1:+.1%}): the slow stage runs each of its {m} micro-batches in "
            f"{t_slow * 1e3:.1f} ms instead of {t * 1e3:.1f} ms (= slow stage {m * (t_slow - t) * 1e3:+.1f} ms"
            ) in printed

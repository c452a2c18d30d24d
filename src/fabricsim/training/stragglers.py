"""Stragglers: a synchronous Megatron step on GPUs that do not all compute at one speed, and a step-time
distribution under per-step jitter.

Megatron's step is synchronous at three levels, and each waits for its slowest member:
- a TP (and CP) group meets at every layer's collectives, so a pipeline stage computes each micro-batch at the pace
  of its slowest GPU (an EP group, folded over the stage's DP ranks, meets at every MoE layer: the same stage of
  several replicas then waits too, which changes nothing below, as the step waits for the slowest replica anyway);
- a pipeline is a flow shop of m identical micro-batches over its stages: with per-micro-batch stage times T_i
  (compute + exposed TP/CP/EP) it takes sum_i T_i + (m - 1) max_i T_i (the makespan of a permutation flow shop of
  identical jobs; equal stages give Narayanan et al. 2021's (m + p - 1) t), and with v interleaved chunks per
  stage (m - 1/v) max_i T_i + (1/v) sum_i T_i, which gives the bubble (p - 1) t / v of `training.step`;
- the gradient reduce-scatter and the optimizer wait for every DP replica: the step is its slowest replica's
  pipeline, plus the slow GPU's optimizer step and its DP exposure (the slow backward hides more of the reduce).
A slow GPU's stage is timed by `step.step_time(compute_speed=...)` (its kernels and optimizer stretched, its TP
overlap recomputed with the longer GEMMs); the other stages keep the healthy step's per-micro-batch path.

Jitter: each GPU's compute time in each step is multiplied by an independent lognormal factor of mean 1
(exp(sigma Z - sigma^2 / 2), Z standard normal, drawn from PCG64(seed)); sigma is the user's. A step then takes the
flow-shop time of its slowest replica with every stage at its slowest GPU's factor, the exposed communication
unchanged, and the optimizer at the slowest factor of all: a distribution over steps (median, p99), not one number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from fabricsim.errors import FabricsimError, option
from fabricsim.training import parallel as P
from fabricsim.training.step import StepResult

JITTER_CHUNK = 32  # steps drawn at once (a 16,384-GPU job draws 0.5M factors per chunk)
MAX_STEPS = 100_000


@dataclass(frozen=True)
class Straggle:
    """Where a step with slow GPUs loses its time (seconds), against the healthy step of the same layout."""

    healthy: float  # s, the step with every GPU at full speed
    step: float  # s, the step with the slow GPUs
    micro_batches: int
    per_mb: float  # one micro-batch of a healthy stage: compute + exposed TP/CP/EP
    per_mb_slow: float  # one micro-batch of the slowest stage
    parts: dict[str, float]  # seconds added: 'slow stage', 'fill/drain', 'optimizer', 'dp', 'offload'
    where: tuple[str, ...]  # per slow GPU: its groups

    def text(self) -> str:
        """The critical path in one line: what the straggler adds and why."""
        m, added = self.micro_batches, self.step - self.healthy
        parts = ", ".join(f"{k} {v * 1e3:+.1f} ms" for k, v in self.parts.items() if abs(v) >= 5e-5)
        each = "its one micro-batch" if m == 1 else f"each of its {m} micro-batches"
        return (f"{self.healthy:.3f} s -> {self.step:.3f} s ({added / self.healthy:+.1%}): the slow stage runs {each} "
                f"in {self.per_mb_slow * 1e3:.1f} ms instead of {self.per_mb * 1e3:.1f} ms (= {parts})")


@dataclass(frozen=True)
class Jitter:
    """Step times over `steps` steps with lognormal per-GPU, per-step compute jitter of `sigma`."""

    sigma: float
    seed: int
    steps: np.ndarray  # s per step
    steady: float  # s, the same step without jitter (the same linear model)

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.steps, q))

    def text(self) -> str:
        s = self.steps
        return (f"jitter sigma {self.sigma:g} over {s.size} steps (seed {self.seed}): median {self.quantile(0.5):.3f} s, "
                f"p90 {self.quantile(0.9):.3f} s, p99 {self.quantile(0.99):.3f} s, worst {s.max():.3f} s; "
                f"without jitter {self.steady:.3f} s (median {self.quantile(0.5) / self.steady - 1:+.1%})")


def megatron_speeds(slow_gpus: dict[int, float], n_gpus: int, placement: np.ndarray | None) -> dict[int, float]:
    """GPU rank -> speed as Megatron rank -> speed for a job of `n_gpus` (GPUs outside the job left out)."""
    if placement is None:
        return {g: f for g, f in slow_gpus.items() if g < n_gpus}
    rank_of = {int(g): r for r, g in enumerate(placement)}
    return {rank_of[g]: f for g, f in slow_gpus.items() if g in rank_of}


def _coordinates(par: P.Parallelism, rank: int) -> tuple[int, int, int, int]:
    """(pp stage, dp replica, cp, tp) of a Megatron rank (rank order 'tp-cp-ep-dp-pp', `parallel._grid`)."""
    pp, dp, cp, tp = np.unravel_index(rank, (par.pp, par.dp, par.cp, par.tp))
    return int(pp), int(dp), int(cp), int(tp)


def groups_of(par: P.Parallelism, rank: int) -> str:
    """'Megatron rank 43: TP group 40-47, PP stage 0 of 4, DP replica 5 of 32' (the groups that wait for it)."""
    pp, dp, cp, _ = _coordinates(par, rank)
    first = rank - rank % par.tp
    tp = f"TP group {first}-{first + par.tp - 1}" if par.tp > 1 else "no TP"
    cp_text = f", CP group of {par.cp}" if par.cp > 1 else ""
    return f"Megatron rank {rank}: {tp}{cp_text}, PP stage {pp} of {par.pp}, DP replica {dp} of {par.dp}"


def per_micro_batch(r: StepResult) -> float:
    """One micro-batch of a stage on the critical path: its compute and its exposed TP, CP and EP."""
    m = r.parallelism.micro_batches
    compute = r.compute - r.compute_parts.get("optimizer", 0.0)
    return (compute + r.exposed["tp"] + r.exposed["cp"] + r.exposed["ep"]) / m


def _flow_shop(stage_times: np.ndarray, m: int, vp: int) -> np.ndarray:
    """Pipeline time of each replica from per-micro-batch stage times (..., pp): (m - 1/v) max + (1/v) sum."""
    return (m - 1 / vp) * stage_times.max(axis=-1) + stage_times.sum(axis=-1) / vp


def _stage_speeds(par: P.Parallelism, speeds: dict[int, float]) -> np.ndarray:
    """(dp, pp) slowest speed of each replica's stages."""
    grid = np.ones((par.pp, par.dp))
    for rank, f in speeds.items():
        pp, dp, _, _ = _coordinates(par, rank)
        grid[pp, dp] = min(grid[pp, dp], f)
    return grid.T


def straggle(healthy: StepResult, speeds: dict[int, float], timed: Callable[[float], StepResult]) -> tuple[StepResult, Straggle]:
    """The step of `healthy`'s layout with Megatron ranks at `speeds` (rank -> compute speed), on the critical path
    (see the module docstring); `timed(speed)` times the step with every GPU at `speed`. Returns the step result
    (its compute, bubble and exposure those of the slowest replica, so they still add up to its step time) and where
    the time goes."""
    par = healthy.parallelism
    if not speeds:
        return healthy, Straggle(healthy.step_time, healthy.step_time, par.micro_batches, per_micro_batch(healthy),
                                 per_micro_batch(healthy), {}, ())
    if min(speeds.values()) <= 0:
        raise FabricsimError("a GPU's compute speed must be above 0")
    m, vp = par.micro_batches, par.vp
    runs = {f: timed(f) for f in sorted(set(speeds.values()))}
    t_of = {1.0: per_micro_batch(healthy), **{f: per_micro_batch(r) for f, r in runs.items()}}
    stage_speed = _stage_speeds(par, speeds)
    stage_time = np.vectorize(lambda f: t_of[float(f)])(stage_speed)  # (dp, pp)
    pipes = _flow_shop(stage_time, m, vp)
    replica = int(np.argmax(pipes))
    stage = int(np.argmax(stage_time[replica]))
    t_max = float(stage_time[replica, stage])
    on_path = runs.get(float(stage_speed[replica, stage]), healthy)  # the stage that paces the pipeline
    worst = runs[min(speeds.values())]  # the slowest GPU: its optimizer step and DP overlap end the step
    fill = float(pipes[replica]) - m * t_max  # the fill and drain: (sum - max) / v
    opt = worst.compute_parts.get("optimizer", 0.0)
    offload = worst.compute_parts.get("offload", 0.0)
    exposed = {**healthy.exposed, **{g: on_path.exposed[g] for g in ("tp", "cp", "ep")}, "dp": worst.exposed["dp"]}
    compute = m * t_max - exposed["tp"] - exposed["cp"] - exposed["ep"] + opt
    step = compute + fill + sum(exposed.values()) + offload
    h_opt, h_off = healthy.compute_parts.get("optimizer", 0.0), healthy.compute_parts.get("offload", 0.0)
    parts = {"slow stage": m * (t_max - t_of[1.0]), "fill/drain": fill - healthy.bubble, "optimizer": opt - h_opt,
             "dp": exposed["dp"] - healthy.exposed["dp"], "offload": offload - h_off}
    ratio = healthy.step_time / step
    result = replace(healthy, step_time=step, tokens_per_s=healthy.tokens_per_s * ratio,
                     tflops_per_gpu=healthy.tflops_per_gpu * ratio, mfu_bf16=healthy.mfu_bf16 * ratio,
                     mfu=healthy.mfu * ratio, compute=compute, bubble=fill, exposed=exposed,
                     tflops={k: v * ratio for k, v in healthy.tflops.items()},
                     compute_parts={**worst.compute_parts, "optimizer": opt, "offload": offload})
    where = tuple(f"{groups_of(par, r)} at x{f:g}" for r, f in sorted(speeds.items()))
    return result, Straggle(healthy.step_time, step, m, t_of[1.0], t_max, parts, where)


def jitter(healthy: StepResult, speeds: dict[int, float], sigma: float, steps: int, seed: int) -> Jitter:
    """Step times of `steps` steps with lognormal compute jitter `sigma` on every GPU (and `speeds`' slow GPUs, their
    compute time divided by their speed), against the same linear model without jitter."""
    if not (np.isfinite(sigma) and sigma > 0):
        raise FabricsimError(f"{option('jitter', sigma)}: the lognormal sigma must be a positive number (e.g. 0.05)")
    if not 1 <= steps <= MAX_STEPS:
        raise FabricsimError(f"{option('steps', steps)}: time 1 to {MAX_STEPS:,} steps")
    par = healthy.parallelism
    m, vp, n = par.micro_batches, par.vp, par.n_gpus
    opt = healthy.compute_parts.get("optimizer", 0.0)
    compute_mb = (healthy.compute - opt) / m
    comm_mb = per_micro_batch(healthy) - compute_mb
    rest = healthy.exposed["pp"] + healthy.exposed["dp"] + healthy.compute_parts.get("offload", 0.0)
    slow = np.ones(n)
    for rank, f in speeds.items():
        slow[rank] = 1.0 / f
    slow = slow.reshape(par.pp, par.dp, par.cp * par.tp)
    rng = np.random.Generator(np.random.PCG64(seed))
    out = []
    for start in range(0, steps, JITTER_CHUNK):
        k = min(JITTER_CHUNK, steps - start)
        factor = np.exp(sigma * rng.standard_normal((k, par.pp, par.dp, par.cp * par.tp)) - sigma**2 / 2) * slow
        stage = factor.max(axis=-1)  # (k, pp, dp): each stage at its slowest GPU
        times = compute_mb * stage + comm_mb
        pipes = _flow_shop(np.moveaxis(times, 1, -1), m, vp)  # (k, dp)
        out.append(pipes.max(axis=-1) + opt * stage.max(axis=(1, 2)) + rest)
    stage0 = slow.max(axis=-1).T  # (dp, pp) without jitter
    linear = float(_flow_shop(compute_mb * stage0 + comm_mb, m, vp).max() + opt * slow.max() + rest)
    return Jitter(sigma, seed, np.concatenate(out), linear)


@dataclass
class WhatIf:
    """What faults and jitter did at each GPU count of a training sweep (`runs.train_sweep`)."""

    text: str  # the faults and the jitter, for titles
    straggles: dict[int, Straggle]
    jitters: dict[int, Jitter]
    notes: list[str] = field(default_factory=list)  # how the faults were modelled (topology.faulted notes), once each


def adjuster(model, efficiency: float | None, sink: WhatIf, sigma: float | None, steps: int, seed: int):
    """`sweep.scaling_runs`' `adjust`: each count's step with its topology's slow GPUs on the critical path
    (`straggle`), and its jitter distribution, recorded in `sink`."""
    from fabricsim.topology.faulted import report_of
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import topology_gpu

    def adjust(result: StepResult, topo, comm) -> StepResult:
        report = report_of(topo)
        slow = report.slow_gpus() if report is not None else {}
        sink.notes += [n for n in (report.notes if report is not None else ()) if n not in sink.notes]
        speeds = megatron_speeds(slow, result.n_gpus, getattr(comm, "placement", None))
        gpu = topology_gpu(topo)
        out, how = straggle(result, speeds, lambda f: step_time(model, result.parallelism, gpu, comm, efficiency,
                                                                 compute_speed=f))
        sink.straggles[result.n_gpus] = how
        if sigma:
            sink.jitters[result.n_gpus] = jitter(result, speeds, sigma, steps, seed)
        return out

    return adjust

"""`fabricsim train`: training step time, MFU and the scaling wall of a model on a cluster."""

from __future__ import annotations

import json

import click

from fabricsim.cli.options import check_report, fault_options, faults_given, report_option
from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError
from fabricsim.training import parallel as P
from fabricsim.training.runs import WHATIF, load_run_file, train_sweep
from fabricsim.training.step import GROUPS, StepResult
from fabricsim.training.sweep import Refused
from fabricsim.training.variants import VARIANTS


def _counts(text) -> list[int]:
    if isinstance(text, (list, tuple)):
        counts = text
    else:
        try:
            counts = [int(x) for x in str(text).split(",")]
        except ValueError:
            raise FabricsimError(f"--gpus '{text}' is not a comma-separated list of GPU counts, e.g. 8,64,512") from None
    if not counts or not all(isinstance(n, int) and not isinstance(n, bool) for n in counts) or min(counts) < 1:
        raise FabricsimError("--gpus needs positive GPU counts, e.g. 8,64,512")
    return list(counts)


def _table(results, wall, exposures) -> str:
    head = ["GPUs", "layout", "GBS", "m", "mem GB", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "comm %",
            *(f"{g} ms" for g in GROUPS), "bubble ms"]
    rows, refused = [], []
    for r in results:
        if isinstance(r, Refused):
            refused.append(r)
            rows.append([str(r.n_gpus), "cannot run (below)", *[""] * (len(head) - 2)])
            continue
        par = r.parallelism
        mem = f"{r.memory.total / 1e9:.1f}" + ("!" if r.over_hbm else "")
        mfu = f"{r.mfu_bf16:.1%}" + (f" ({r.mfu:.1%} {par.precision})" if par.precision != "bf16" else "")
        rows.append([str(r.n_gpus), r.layout, str(par.global_batch), str(par.micro_batches), mem, f"{r.step_time:.3f}",
                     f"{r.tokens_per_s:,.0f}", f"{r.tflops_per_gpu:.0f}", mfu, f"{r.comm_fraction:.1%}",
                     *(f"{r.exposed[g] * 1e3:.1f}" for g in GROUPS), f"{r.bubble * 1e3:.1f}"])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in [head, *rows]]
    ran = [r for r in results if isinstance(r, StepResult)]
    if ran:
        lines.append("GBS: global batch (sequences, fixed across counts); m: micro-batches per pipeline per step; mem GB: HBM "
                     "per GPU as Megatron counts it (! over HBM); comm % and the per-group ms are communication left "
                     "exposed after overlap (totals: --format json)")
        lines.append(f"TFLOP/s/GPU: model FLOPs, megatron convention (6 x activated parameters x tokens + the logits + "
                     f"attention over the full sequence); MFU against the dense BF16 peak (and the run precision's)")
        lines.append(f"compute: {ran[0].efficiency_source}")
        lines += _where(ran)
    lines += [f"{r.n_gpus} GPUs cannot run: {r.reason}" for r in refused]
    lines.append(_wall_line(wall))
    if exposures:
        first = next(r.n_gpus for r in results if isinstance(r, StepResult))
        lines.append(f"exposed as GPUs are added (what first takes >= 5% of the step, in order):")
        lines += [f"  {i}. {e.text(first)}" for i, e in enumerate(exposures, 1)]
    return "\n".join(lines)


def _where(results) -> list[str]:
    """Where each count's step goes, and its model TFLOP/s in the other conventions."""
    out = ["where the step goes (seconds per step on the busiest GPU; model TFLOP/s/GPU by convention):"]
    for r in results:
        parts = ", ".join(f"{k.replace('_', '-')} {v:.3g}" for k, v in r.compute_parts.items() if v > 0)
        comm = ", ".join(f"{g} {r.exposed[g]:.3g}" for g in GROUPS if r.exposed[g] > 0)
        conv = ", ".join(f"{k} {v:.0f}" for k, v in r.tflops.items())
        out.append(f"  {r.n_gpus}: {r.step_time:.3g} s = compute {r.compute:.3g} ({parts}) + bubble {r.bubble:.3g}"
                   + (f" + exposed {comm}" if comm else "") + f"; TFLOP/s/GPU {conv}; memory {r.memory.text()}")
    return out


def _wall_line(wall) -> str:
    if not wall.marginal:
        return "scaling wall: needs two GPU counts that ran"
    if wall.gpus is None:
        return f"scaling wall: none up to the largest count (every added GPU kept >= {wall.threshold:.0%} of the smallest run's tokens/s per GPU)"
    return (f"scaling wall: past {wall.gpus} GPUs each added GPU brings < {wall.threshold:.0%} of the tokens/s per GPU "
            f"of the smallest run (marginal efficiency {min(wall.marginal):.0%})")


@click.command("train")
@click.option("--model", "model_name", help="built-in model name or a YAML model file (required here or in --run)")
@click.option("--cluster", "-c", help="cluster preset name or YAML file (required here or in --run)")
@click.option("--gpus", help="GPU counts to sweep, comma separated, e.g. 8,64,512 (required here or in --run)")
@click.option("--run", "run_file", type=click.Path(dir_okay=False),
              help="YAML run file of these options by name (tp: 8, tp_overlap: true, gpus: [8192, 16384], ...); "
                   "options given here win")
@click.option("--tp", type=click.IntRange(min=1), help="tensor parallel size (default: chosen per GPU count)")
@click.option("--pp", type=click.IntRange(min=1), help="pipeline parallel size")
@click.option("--dp", type=click.IntRange(min=1), help="data parallel size (default: what is left)")
@click.option("--ep", type=click.IntRange(min=1), help="expert parallel size (folded over TP x CP x DP)")
@click.option("--etp", type=click.IntRange(min=1), help="expert tensor parallel size (default 1)")
@click.option("--cp", type=click.IntRange(min=1), help="context parallel size (ring attention)")
@click.option("--vp", type=click.IntRange(min=1), help="virtual (interleaved) stages per pipeline rank")
@click.option("--zero", type=click.IntRange(0, 3), help="ZeRO stage (3 = FSDP; default 1, Megatron's distributed optimizer)")
@click.option("--sp/--no-sp", "sp", default=None, help="sequence parallelism with TP (default on)")
@click.option("--seq", type=int, help="sequence length (default: the model's)")
@click.option("--global-batch", type=click.IntRange(min=1),
              help="sequences per step, fixed across the counts of the sweep (default: about 4M tokens, Llama 3's "
                   "batch, and at least 4 micro-batches per pipeline stage, at the smallest count; every count runs it)")
@click.option("--micro-batch", type=click.IntRange(min=1), help="sequences per micro-batch (default 1)")
@click.option("--precision", type=click.Choice(P.PRECISIONS),
              help="GEMM precision: bf16 (default), fp8 (per-tensor), fp8-block (1x128/128x128), mxfp8, nvfp4 "
                   "(Blackwell); attention, logits and the router stay BF16")
@click.option("--recompute", help="none, selective (core attention; default), full, or Megatron recompute modules "
                                  "comma separated (core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts)")
@click.option("--tp-overlap/--no-tp-overlap", "tp_overlap", default=None,
              help="overlap TP communication with GEMMs (TE userbuffers, Megatron --tp-comm-overlap; default off)")
@click.option("--dp-overlap/--no-dp-overlap", "dp_overlap", default=None,
              help="overlap gradient reduce-scatter and parameter all-gather in buckets (default on)")
@click.option("--pp-overlap/--no-pp-overlap", "pp_overlap", default=None,
              help="overlap interleaved pipeline sends with compute (Megatron overlap_p2p_comm; default on with --vp)")
@click.option("--ep-overlap/--no-ep-overlap", "ep_overlap", default=None,
              help="overlap the MoE all-to-all with another micro-batch's compute (default off)")
@click.option("--dispatcher", type=click.Choice(P.DISPATCHERS),
              help="MoE token dispatcher (default alltoall; deepep / hybridep send a token once per NVLink domain)")
@click.option("--capacity-factor", type=click.FloatRange(min=0), help="MoE expert capacity factor (default 0: dropless)")
@click.option("--moe-imbalance", type=click.FloatRange(min=1), help="routed rows on the busiest EP rank over the mean (default 1)")
@click.option("--grad-fp32/--grad-bf16", "grad_fp32", default=None,
              help="accumulate and reduce gradients in FP32 (default) or BF16")
@click.option("--fp8-param-gather/--no-fp8-param-gather", "fp8_param_gather", default=None,
              help="gather parameters in FP8 (default: on for fp8 and mxfp8, as Megatron-Bridge)")
@click.option("--efficiency", type=float, help="fraction of the precision's dense peak the hardware FLOPs reach "
                                               "(default: the kernel model over published anchors)")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False),
              help="write tokens/s and MFU vs GPUs to this file (.png, .pdf or .svg)")
@click.option("--compare", multiple=True, type=click.Choice(list(VARIANTS)), help="also run on an interconnect variant (repeatable)")
@fault_options
@click.option("--jitter", type=float, default=None, metavar="SIGMA",
              help="Per-step compute jitter: every GPU's compute time each step times a lognormal factor of mean 1 "
                   "and this sigma (e.g. 0.05); prints the step-time distribution (median, p99); drawn with --seed")
@click.option("--steps", type=click.IntRange(1, 100_000), default=None,
              help="Jittered steps to draw per GPU count (default 200)")
@click.option("--search", is_flag=True, default=None,
              help="consider every TP x PP (x EP for mixtures of experts) layout that fits in HBM and keep the one with "
                   "the most tokens/s (--tp / --pp / --ep fix that size; default: the smallest PP, then TP, that fits)")
@report_option
def train(model_name, cluster, gpus, run_file, fmt, plot, report_path, fail, degrade, seed, jitter, steps, **options):
    """Step time, tokens/s, MFU, memory and exposed communication per GPU count, and the scaling wall; with --fail /
    --degrade (a slow GPU, NIC or link) or --jitter, what they cost on the step's critical path."""
    given = load_run_file(run_file) if run_file else {}
    given.update({k: v for k, v in dict(model=model_name, cluster=cluster, gpus=gpus).items() if v is not None})
    given.update({k: v for k, v in options.items() if v is not None and not (k == "compare" and not v)})
    for need in ("model", "cluster", "gpus"):
        if need not in given:
            raise FabricsimError(f"--{need} is required (on the command line or in the --run file)")
    if plot:
        from fabricsim.reports.plotting import plot_format

        plot_format(plot)  # a bad name or a missing matplotlib fails before the work, not after
    check_report(report_path)
    model, where, counts = given.pop("model"), given.pop("cluster"), _counts(given.pop("gpus"))
    faults = faults_given(fail, degrade, seed) if fail or degrade or not jitter else None  # --seed: draws and jitter
    with progress_bar("train") as progress:
        sweep = train_sweep(model, where, counts, progress=progress, faults=faults, jitter=jitter, steps=steps,
                            seed=seed, **given)
    for warning in sweep.warnings:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        out = {}
        for label, res in sweep.runs.items():
            out[label] = {"results": [r.as_dict() if isinstance(r, StepResult) else {"gpus": r.n_gpus, "error": r.reason}
                                      for r in res],
                          "wall_gpus": sweep.walls[label].gpus, "marginal_efficiency": sweep.walls[label].marginal,
                          "exposed_first": [{"group": e.group, "gpus": e.gpus, "collective": e.collective,
                                             "limiter": e.limiter, "shares": dict(zip(map(str, e.counts), e.shares))}
                                            for e in sweep.exposures[label]]}
            if label in sweep.failed:
                out[label]["error"] = sweep.failed[label]
        if sweep.whatif is not None:
            out[WHATIF]["what"] = sweep.whatif.text
            out[WHATIF]["cost"] = _whatif_records(sweep)
        click.echo(json.dumps(out, indent=2))
    else:
        for label, res in sweep.runs.items():
            if label in sweep.failed:
                continue
            click.echo(f"{sweep.title(label)}\n{_table(res, sweep.walls[label], sweep.exposures[label])}\n")
        if len(sweep.runs) - len(sweep.failed) > 1:
            click.echo(_compare_table({k: v for k, v in sweep.runs.items() if k not in sweep.failed}))
        if sweep.whatif is not None and WHATIF not in sweep.failed:
            click.echo("\n" + _whatif_table(sweep))
        for name, why in sweep.failed.items():
            click.echo(f"--compare {name}: cannot run this job: {why}")
    if report_path:
        from fabricsim.api import TrainResult

        TrainResult(sweep.model, sweep.cluster, {k: tuple(v) for k, v in sweep.runs.items()}, sweep.walls,
                    {k: tuple(v) for k, v in sweep.exposures.items()}, sweep.failed).report(report_path)
    if plot:
        from fabricsim.reports.plotting import save_figure
        from fabricsim.reports.training_plot import figure

        save_figure(figure(sweep.title(), sweep.runs, sweep.walls, sweep.failed), plot)


def _whatif_table(sweep) -> str:
    """What the faults and jitter cost per GPU count: the step with and without them, and where the time goes."""
    w = sweep.whatif
    head = ["GPUs", "step s", "with what-if s", "change"] + (["median s", "p99 s"] if w.jitters else [])
    rows, why = [], []
    for base, alt in zip(sweep.runs["baseline"], sweep.runs[WHATIF]):
        if not (isinstance(base, StepResult) and isinstance(alt, StepResult)):
            continue
        cells = [str(base.n_gpus), f"{base.step_time:.3f}", f"{alt.step_time:.3f}",
                 f"{alt.step_time / base.step_time - 1:+.1%}"]
        j = w.jitters.get(alt.n_gpus)
        if w.jitters:
            cells += [f"{j.quantile(0.5):.3f}", f"{j.quantile(0.99):.3f}"] if j is not None else ["-", "-"]
        rows.append(cells)
        straggle = w.straggles.get(alt.n_gpus)
        if straggle is not None and straggle.where:
            why.append(f"  {alt.n_gpus}: slow GPU {'; '.join(straggle.where)}")
            why.append(f"    critical path: {straggle.text()}")
        if j is not None:
            why.append(f"  {alt.n_gpus}: {j.text()}")
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = [f"what-if: {w.text}", *("  ".join(x.rjust(wd) for x, wd in zip(line, widths)) for line in [head, *rows])]
    lines.append("step s: the healthy cluster; with what-if: the faults on the critical path (a slow GPU's stage paces "
                 "its pipeline, the slowest replica the step; slow or failed links in every collective they carry)")
    if why:
        lines += ["where the time goes:", *why]
    return "\n".join(lines)


def _whatif_records(sweep) -> list[dict]:
    w = sweep.whatif
    out = []
    for alt in sweep.runs[WHATIF]:
        if not isinstance(alt, StepResult):
            continue
        s, j = w.straggles.get(alt.n_gpus), w.jitters.get(alt.n_gpus)
        rec = {"gpus": alt.n_gpus, "step_time_s": alt.step_time}
        if s is not None:
            rec.update(healthy_compute_step_s=s.healthy, per_micro_batch_s=s.per_mb, slow_per_micro_batch_s=s.per_mb_slow,
                       added_s=dict(s.parts), slow_gpus=list(s.where))
        if j is not None:
            rec["jitter"] = {"sigma": j.sigma, "seed": j.seed, "steps": int(j.steps.size), "median_s": j.quantile(0.5),
                             "p90_s": j.quantile(0.9), "p99_s": j.quantile(0.99), "max_s": float(j.steps.max()),
                             "without_jitter_s": j.steady}
        out.append(rec)
    return out


def _compare_table(runs: dict) -> str:
    labels = list(runs)
    head = ["GPUs", *(f"{lb} tok/s" for lb in labels), *(f"{lb} MFU" for lb in labels)]
    counts = [r.n_gpus for r in runs[labels[0]]]
    rows = []
    for i, n in enumerate(counts):
        cells = [runs[lb][i] for lb in labels]
        rows.append([str(n), *(f"{c.tokens_per_s:,.0f}" if isinstance(c, StepResult) else "cannot run" for c in cells),
                     *(f"{c.mfu_bf16:.1%}" if isinstance(c, StepResult) else "-" for c in cells)])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in [head, *rows])

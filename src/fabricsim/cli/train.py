"""`fabricsim train`: training step time, MFU and the scaling wall of a model on a cluster."""

from __future__ import annotations

import json
from pathlib import Path
from dataclasses import replace

import click

from fabricsim import topology
from fabricsim.errors import FabricsimError
from fabricsim.training import parallel as P
from fabricsim.training.models import load_model
from fabricsim.training.sweep import scaling, scaling_wall
from fabricsim.training.variants import NVL72_DOMAIN, VARIANTS, variant

GROUPS = ("tp", "cp", "ep", "pp", "dp")


def _counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise FabricsimError(f"--gpus '{text}' is not a comma-separated list of GPU counts, e.g. 8,64,512") from None
    if not counts or min(counts) < 1:
        raise FabricsimError("--gpus needs positive GPU counts, e.g. 8,64,512")
    return counts


def _table(results, wall) -> str:
    head = ["GPUs", "layout", "step s", "tokens/s", "TFLOP/s/GPU", "MFU", "comm %", *(f"{g} ms" for g in GROUPS), "bubble ms"]
    rows = [[
        str(r.n_gpus), r.layout, f"{r.step_time:.3f}", f"{r.tokens_per_s:,.0f}", f"{r.tflops_per_gpu:.0f}",
        f"{r.mfu_bf16:.1%}" + (f" ({r.mfu:.1%} fp8)" if r.parallelism.precision == "fp8" else ""),
        f"{r.comm_fraction:.1%}", *(f"{r.exposed[g] * 1e3:.1f}" for g in GROUPS), f"{r.bubble * 1e3:.1f}",
    ] for r in results]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in [head, *rows]]
    note = ("comm % and the per-group ms columns are communication left exposed after overlap (totals: --format json); "
            f"compute at {results[0].efficiency:.1%} of peak ({results[0].efficiency_source})")
    return "\n".join(lines + [note, _wall_line(wall)])


def _wall_line(wall) -> str:
    if wall.gpus is None:
        return f"scaling wall: none up to the largest count (every added GPU kept >= {wall.threshold:.0%} of the smallest run's tokens/s per GPU)"
    return (f"scaling wall: past {wall.gpus} GPUs each added GPU brings < {wall.threshold:.0%} of the tokens/s per GPU "
            f"of the smallest run (marginal efficiency {min(wall.marginal):.0%})")


def _plot(path: str, runs: dict, walls: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, results in runs.items():
        gpus = [r.n_gpus for r in results]
        ax1.plot(gpus, [r.tokens_per_s for r in results], marker="o", label=label)
        ax2.plot(gpus, [r.mfu_bf16 * 100 for r in results], marker="o", label=label)
        if walls[label].gpus is not None:
            for ax in (ax1, ax2):
                ax.axvline(walls[label].gpus, linestyle="--", alpha=0.5, color=ax.lines[-1].get_color())
    for ax, ylabel in ((ax1, "tokens/s"), (ax2, "MFU vs dense BF16 peak (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax1.set_yscale("log")
    ax1.legend(fontsize=8)
    fig.suptitle("training throughput (dashed: scaling wall)")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as err:
        raise FabricsimError(f"cannot write plot {path}: {err.strerror}; check the directory exists and is writable") from None
    finally:
        plt.close(fig)


@click.command("train")
@click.option("--model", "model_name", required=True, help="built-in model name or a YAML model file")
@click.option("--cluster", required=True, help="cluster preset name or YAML file")
@click.option("--gpus", required=True, help="GPU counts to sweep, comma separated, e.g. 8,64,512")
@click.option("--tp", type=click.IntRange(min=1), help="tensor parallel size (default: chosen per GPU count)")
@click.option("--pp", type=click.IntRange(min=1), help="pipeline parallel size")
@click.option("--dp", type=click.IntRange(min=1), help="data parallel size (default: what is left)")
@click.option("--ep", type=click.IntRange(min=1), help="expert parallel size (carved out of DP)")
@click.option("--cp", type=click.IntRange(min=1), help="context parallel size")
@click.option("--vp", type=click.IntRange(min=1), help="virtual (interleaved) stages per pipeline rank")
@click.option("--zero", type=click.IntRange(0, 3), help="ZeRO stage (3 = FSDP; default 1, Megatron's distributed optimizer)")
@click.option("--sp/--no-sp", "sp", default=None, help="sequence parallelism with TP (default on)")
@click.option("--seq", type=int, help="sequence length (default: the model's)")
@click.option("--global-batch", type=click.IntRange(min=1),
              help="sequences per step, fixed across counts (default: about 4M tokens, Llama 3's batch, and at least "
                   "4 micro-batches per pipeline stage)")
@click.option("--micro-batch", type=click.IntRange(min=1), default=1, show_default=True, help="sequences per micro-batch")
@click.option("--precision", type=click.Choice(P.PRECISIONS), default="bf16", show_default=True)
@click.option("--recompute", type=click.Choice(P.RECOMPUTE), default="selective", show_default=True)
@click.option("--efficiency", type=float, help="fraction of dense peak compute reaches (default: published figure per GPU)")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), help="write tokens/s and MFU vs GPUs to this PNG")
@click.option("--compare", multiple=True, type=click.Choice(list(VARIANTS)), help="also run on an interconnect variant (repeatable)")
@click.option("--search", is_flag=True,
              help="time every TP x PP (x EP for mixtures of experts) layout that fits in HBM and keep the one with "
                   "the most tokens/s; slower: every layout is timed (--tp / --pp / --ep fix that size; default: the smallest PP, then TP, that fits)")
def train(model_name, cluster, gpus, tp, pp, dp, ep, cp, vp, zero, sp, seq, global_batch, micro_batch, precision,
          recompute, efficiency, fmt, plot, compare, search):
    """Step time, tokens/s, MFU and exposed communication per GPU count, and the scaling wall."""
    model = load_model(model_name)
    if seq is not None:
        if seq < 1:
            raise FabricsimError("--seq must be at least 1")
        model = replace(model, seq=seq)
    if efficiency is not None and not 0.01 <= efficiency <= 1:
        raise FabricsimError(f"--efficiency {efficiency} must be between 0.01 and 1, a fraction of peak compute")
    if plot and not Path(plot).resolve().parent.is_dir():
        raise FabricsimError(f"cannot write plot {plot}: its directory does not exist; create it or choose another path")
    counts = _counts(gpus)
    common = dict(micro_batch=micro_batch, global_batch=global_batch or 0, precision=precision, recompute=recompute,
                  sequence_parallel=True if sp is None else sp, zero=1 if zero is None else zero)
    explicit = {k: v for k, v in dict(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, vp=vp).items() if v is not None}
    if search and dp is not None:
        raise FabricsimError("--search chooses TP and PP and gives DP what is left: drop --dp (or drop --search)")
    template = P.Parallelism(**explicit, **common) if explicit and not search else None
    defaults = {} if template else {k: v for k, v in common.items() if not (k == "global_batch" and v == 0)}
    if search:
        defaults.update(explicit)

    runs, walls, failed = {}, {}, {}
    runs["baseline"] = scaling(model, cluster, counts, template, efficiency=efficiency, search=search, **defaults)
    walls["baseline"] = scaling_wall(runs["baseline"])
    if compare:
        spec = topology.load_cluster(cluster).spec
        for name in compare:  # a variant that cannot run this job is reported, the others still run
            if name == "nvl72" and any(n % NVL72_DOMAIN for n in counts):
                failed[name] = (f"NVL72 domains hold {NVL72_DOMAIN} GPUs: use GPU counts that are multiples of "
                                f"{NVL72_DOMAIN} (e.g. 72,576,4608)")
                continue
            try:
                runs[name] = scaling(model, variant(spec, name), counts, template, efficiency=efficiency, search=search,
                                     **defaults)
                walls[name] = scaling_wall(runs[name])
            except FabricsimError as err:
                failed[name] = str(err)

    if fmt == "json":
        out = {label: {"results": [r.as_dict() for r in res], "wall_gpus": walls[label].gpus,
                       "marginal_efficiency": walls[label].marginal} for label, res in runs.items()}
        out.update({label: {"error": why} for label, why in failed.items()})
        click.echo(json.dumps(out, indent=2))
    else:
        for label, res in runs.items():
            title = f"{model.name} on {cluster}" + ("" if label == "baseline" else f" with {VARIANTS[label][0]}")
            click.echo(f"{title}\n{_table(res, walls[label])}\n")
        if len(runs) > 1:
            click.echo(_compare_table(runs))
        for name, why in failed.items():
            click.echo(f"--compare {name}: cannot run this job: {why}")
    if plot:
        _plot(plot, runs, walls)


def _compare_table(runs: dict) -> str:
    labels = list(runs)
    head = ["GPUs", *(f"{lb} tok/s" for lb in labels), *(f"{lb} MFU" for lb in labels)]
    base = runs[labels[0]]
    rows = []
    for i, r in enumerate(base):
        rows.append([str(r.n_gpus), *(f"{runs[lb][i].tokens_per_s:,.0f}" for lb in labels), *(f"{runs[lb][i].mfu_bf16:.1%}" for lb in labels)])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in [head, *rows])

"""The `train` plot: tokens/s and MFU against the GPU counts run, per interconnect variant.

Ticks sit on the counts run; tokens/s has an ideal (linear) scaling line from the smallest run; the MFU axis
starts at 0 so a small change stays small; a variant that could not run keeps its legend entry, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_REASON_CHARS = 60  # a failed variant's reason, cut to fit a legend


def figure(title: str, runs: Mapping[str, Sequence[Any]], walls: Mapping[str, Any], failed: Mapping[str, str]):
    """A matplotlib Figure; `runs` label -> step results (`n_gpus`, `tokens_per_s`, `mfu_bf16`; a count that could not
    run has only `n_gpus`), `walls` label -> its scaling wall (`gpus`), `failed` label -> why the variant could not run."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    from fabricsim.reports.plotting import new_figure, plain_log_y

    fig, (tok, mfu) = new_figure(12, 4.5, ncols=2)
    ran = {label: [r for r in results if hasattr(r, "tokens_per_s")]  # a count that could not run has no point
           for label, results in runs.items() if label not in failed}
    ran = {label: results for label, results in ran.items() if results}
    counts = sorted({r.n_gpus for results in runs.values() for r in results})
    top = 0.0
    for label, results in ran.items():
        gpus = [r.n_gpus for r in results]
        line, = tok.plot(gpus, [r.tokens_per_s for r in results], marker="o", label=label)
        mfu.plot(gpus, [r.mfu_bf16 * 100 for r in results], marker="o", label=label, color=line.get_color())
        top = max(top, *(r.mfu_bf16 * 100 for r in results))
        wall = walls[label].gpus if label in walls else None
        if wall is not None:
            for ax in (tok, mfu):
                ax.axvline(wall, linestyle="--", alpha=0.5, color=line.get_color())
    base = next(iter(ran.values()), [])
    if base:
        first = base[0]
        tok.plot(counts, [first.tokens_per_s * n / first.n_gpus for n in counts], ":", color="grey",
                 label=f"ideal scaling from {first.n_gpus:,} GPUs")
    handles, _ = tok.get_legend_handles_labels()
    for label, why in failed.items():
        short = why if len(why) <= _REASON_CHARS else why[:_REASON_CHARS - 3] + "..."
        handles.append(Line2D([], [], linestyle="none", marker="x", color="black", label=f"{label}: not run ({short})"))
    for ax, ylabel in ((tok, "tokens/s"), (mfu, "MFU vs dense BF16 peak (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.0f}"))
        ax.minorticks_off()
        ax.set_xlabel("GPUs")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    plain_log_y(tok, [y for line in tok.get_lines() for y in line.get_ydata()])
    mfu.set_ylim(0, max(top * 1.25, 10.0))
    tok.legend(handles=handles, fontsize=8)
    fig.suptitle(f"{title}: training throughput (dashed: scaling wall)")
    fig.tight_layout()
    return fig


def plot(title: str, runs: Mapping[str, Sequence[Any]], walls: Mapping[str, Any], failed: Mapping[str, str],
         path: str | Path) -> None:
    """`figure(...)` saved to `path` (PNG, PDF or SVG by its suffix)."""
    from fabricsim.reports.plotting import save_figure

    save_figure(figure(title, runs, walls, failed), path)

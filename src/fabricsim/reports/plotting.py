"""Figures through matplotlib's object API (a Figure with its own Agg canvas: no pyplot, no global backend),
saved in the format the file name's suffix asks for, byte-identical on every run.

matplotlib is the optional extra `fabricsim[plot]`, imported only here and only when a plot is made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError

FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
_NO_MATPLOTLIB = "plots need matplotlib: pip install 'fabricsim[plot]'"
# Metadata that would change from run to run (software version, creation date) left out.
_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
    "svg": {"Creator": None, "Date": None},
}


def plot_format(path: str | Path) -> str:
    """The format for `path` from its suffix, checked before any work is done: the directory must exist and
    matplotlib be installed."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise FabricsimError(f"plot {path}: fabricsim writes {', '.join(FORMATS)} files; give a file name ending in "
                             "one of them")
    if not p.resolve().parent.is_dir():
        raise FabricsimError(f"cannot write plot {path}: its directory does not exist; create it or choose another path")
    from importlib.util import find_spec

    if find_spec("matplotlib") is None:
        raise FabricsimError(_NO_MATPLOTLIB)
    return fmt


def new_figure(width: float, height: float, ncols: int = 1, nrows: int = 1) -> tuple[Any, Any]:
    """(figure, axes): a Figure on an Agg canvas with `ncols` axes side by side (one axes when ncols is 1); with
    `nrows` > 1 a (nrows, ncols) array of axes."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise FabricsimError(_NO_MATPLOTLIB) from None
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=nrows == 1)


def save_figure(fig: Any, path: str | Path) -> None:
    """Write `fig` to `path` as PNG, PDF or SVG by its suffix, without run-dependent metadata."""
    import matplotlib

    fmt = plot_format(path)
    try:
        with matplotlib.rc_context({"svg.hashsalt": "fabricsim", "svg.fonttype": "none"}):
            fig.savefig(path, format=fmt, dpi=120, metadata=_METADATA[fmt])
    except OSError as err:
        raise FabricsimError(f"cannot write plot {path}: {err.strerror}; check the directory is writable") from None


def size_ticks(ax: Any, sizes: list[float], label) -> None:
    """Log2 x axis with at most ~12 tick labels, on the sizes given (no minor ticks)."""
    ax.set_xscale("log", base=2)
    ticks = sizes[::max(1, len(sizes) // 12)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([label(s) for s in ticks], rotation=45, ha="right", fontsize=8)
    ax.minorticks_off()


def plain_log_y(ax: Any, values: list[float]) -> None:
    """Log y axis labelled with plain numbers (200, 500, 1k, 2M): every 1-9 step within one decade, 1-2-5 steps
    up to three decades, powers of ten beyond (about as many labels whatever the span)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    positive = [v for v in values if v > 0]
    decades = math.log10(max(positive) / min(positive)) if positive else 0.0
    subs = tuple(range(1, 10)) if decades <= 1 else (1, 2, 5) if decades <= 3 else (1,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=[float(x) for x in subs]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: plain_number(y)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def plain_number(y: float) -> str:
    """1500 -> '1.5k', 2e6 -> '2M', 0.05 -> '0.05'."""
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(y) >= scale:
            return f"{y / scale:g}{suffix}"
    return f"{y:g}"

"""The HTML report of sweep results (or of one perf / train / compare run): one self-contained file, charts drawn by
Plotly and the results table by DataTables (through itables), both libraries' JavaScript embedded, so the file
opens with no network.

Sections, each where the rows have what it needs: busbw against message size per cluster, the algorithm each size
picks, the scaling wall (tokens/s per GPU and MFU against GPUs), the cost of failures (rows with `faults.*`
columns), per-link utilisation of one chosen point, and a table of every row that sorts and filters.

Every text that comes from the data (cluster names, errors, labels) is escaped before it reaches the page, in the
HTML and in the charts (Plotly reads entities such as &lt; as the character), so a name holding markup shows as
text. The output is the same bytes for the same rows: element ids are fixed, nothing records the time.

Plotly, itables and pandas are the `fabricsim[report]` extra, imported only here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.errors import FabricsimError

CONFIG_PREFIXES = ("cluster.", "perf.", "train.", "faults.")
MAX_TABLE_ROWS = 20_000  # rows the table embeds (the results file has them all)
MAX_LINK_COLUMNS = 256  # links per class shown one per cell; more are binned, each cell the busiest of its bin
_NO_EXTRA = "the HTML report needs plotly, itables and pandas: pip install 'fabricsim[report]'"
_HEALTHY = (None, 0, 0.0, "", "none", False)  # a fault setting that means no fault


@dataclass(frozen=True)
class LinkView:
    """Per-link utilisation of one point: `title` says which point; per link its class ('gpu -> nvswitch
    (nvlink4)'), its utilisation (wire bytes over capacity x time) and its name."""

    title: str
    classes: tuple[str, ...]
    util: np.ndarray
    names: tuple[str, ...]


def link_view(topo: Any, util: np.ndarray, title: str) -> LinkView:
    """The links of `topo` with their utilisation `util` (a simulation result's `link_util`), classed by what they
    join: device kinds (fabric switches by tier) and technology."""
    from fabricsim.topology import DeviceKind

    kind = np.asarray(topo.dev_kind)
    level = np.asarray(topo.dev_level)
    tier = {1: "leaf", 2: "spine", 3: "core"}
    short = {DeviceKind.GPU: "gpu", DeviceKind.CPU: "cpu", DeviceKind.PCIE_SWITCH: "pcie switch", DeviceKind.NIC: "nic",
             DeviceKind.NVSWITCH: "nvswitch"}

    def label(d: int) -> str:
        k = DeviceKind(int(kind[d]))
        return tier.get(int(level[d]), "switch") if k == DeviceKind.FABRIC_SWITCH else short[k]

    src, dst, tech = (np.asarray(a) for a in (topo.link_src, topo.link_dst, topo.link_tech))
    classes = tuple(f"{label(int(s))} -> {label(int(t))} ({topo.techs[int(x)]})" for s, t, x in zip(src, dst, tech))
    names = tuple(topo.link_name(i) for i in range(len(classes)))
    return LinkView(title, classes, np.asarray(util, dtype=float), names)


def _imports():
    try:
        import pandas
        import plotly.graph_objects as go
        from itables import to_html_datatable
        from plotly.subplots import make_subplots
    except ImportError:
        raise FabricsimError(_NO_EXTRA) from None
    return pandas, go, make_subplots, to_html_datatable


def check_available() -> None:
    """Fail before any work when the report's libraries are missing."""
    _imports()


def esc(text: Any) -> str:
    """Text as HTML shows it literally (also inside Plotly labels, which read entities)."""
    return html.escape(str(text), quote=True)


def build(rows: Sequence[Mapping[str, Any]], title: str, *, links: LinkView | None = None,
          sources: Sequence[str] = ()) -> str:
    """The report page for `rows` (results-file rows) as HTML text."""
    pandas, go, make_subplots, to_html_datatable = _imports()
    df = pandas.DataFrame.from_records(list(rows))
    if df.empty:
        raise FabricsimError("the results hold no rows: nothing to report")
    for col in ("kind", "status"):
        if col not in df:
            raise FabricsimError(f"the results have no '{col}' column: give a file `fabricsim sweep` wrote")
    ok = df[df["status"] == "ok"]
    sections = [_summary(df, sources)]
    perf, train = ok[ok["kind"] == "perf"], ok[ok["kind"] == "train"]
    charts = [("busbw", "busbw against message size", _busbw(perf, go), "Bus bandwidth as nccl-tests computes it, "
               "one line per configuration; hover for time, algorithm and protocol."),
              ("algorithms", "the algorithm each size picks", _algorithms(perf, go), "The algorithm and protocol "
               "the tuner picks at each size (NCCL's own model's choice, as NCCL makes it), per configuration."),
              ("scaling", "the scaling wall", _scaling(train, go, make_subplots), "Tokens/s per GPU and MFU as GPUs "
               "are added: where the line falls, adding GPUs stops paying."),
              ("failures", "cost of failures", _failures(ok, go), "Each figure as a share of the same configuration "
               "without faults."),
              ("links", "link utilisation" + (f": {links.title}" if links else ""),
               _links(links, go) if links else None,
               "Per-link utilisation of one point (wire bytes over capacity x time): a row per class of link, a cell "
               "per link (binned beyond 256: the busiest of each bin); hover for the link.")]
    empty = {"busbw": "no collective points", "algorithms": "no collective points", "scaling": "no training points",
             "failures": "no fault columns in these results (failure axes come with fabricsim's fault model)",
             "links": "no collective point to show"}
    for ident, heading, fig, text in charts:
        body = (f"<p>{esc(text)}</p>{_figure_html(fig, ident)}" if fig is not None else
                f"<p class='none'>{esc(empty[ident])}</p>")
        sections.append(f"<section id='{ident}'><h2>{esc(heading)}</h2>{body}</section>")
    sections.append(_table(df, to_html_datatable))
    return _page(title, sections)


def write(path: str | Path, page: str) -> None:
    """Write the page (UTF-8)."""
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot write report {path}: {err.strerror}; check the directory") from None


def _page(title: str, sections: list[str]) -> str:
    from itables.javascript import generate_init_offline_itables_html
    from itables import options
    from plotly.offline import get_plotlyjs

    style = ("body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}"
             "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}"
             "p.none{color:#777;font-style:italic}table.summary td{padding:2px 12px 2px 0}"
             "section{margin-bottom:1em}"
             "#results td{white-space:nowrap;max-width:32em;overflow:hidden;text-overflow:ellipsis}")
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
        f"<title>{esc(title)}</title>", f"<style>{style}</style>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>", "</head>", "<body>",
        f"<h1>{esc(title)}</h1>", *sections,
        generate_init_offline_itables_html(options.dt_bundle), "</body>", "</html>", ""])


def _summary(df, sources: Sequence[str]) -> str:
    failed = df[df["status"] != "ok"]
    kinds = ", ".join(f"{n} {k}" for k, n in df["kind"].value_counts(sort=False).items())
    lines = [("points", f"{len(df):,} ({kinds})"), ("ok", f"{len(df) - len(failed):,}"), ("failed", f"{len(failed):,}")]
    if sources:
        lines.append(("results", ", ".join(sources)))
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in lines)
    out = f"<table class='summary'>{rows}</table>"
    if len(failed):
        errors = failed["error"].fillna("").astype(str).value_counts().head(5)
        items = "".join(f"<li>{n} point{'s' * (n != 1)}: {esc(e)}</li>" for e, n in errors.items())
        out += f"<p>Most frequent failures:</p><ul>{items}</ul>"
    return f"<section id='summary'>{out}</section>"


def _config_columns(df) -> list[str]:
    return [c for c in df.columns if c.startswith(CONFIG_PREFIXES) or c == "cluster"]


def _varying(df, leave_out: Sequence[str] = ()) -> list[str]:
    """Config columns that vary across `df`, less those another kept one already decides (cluster.domain_size
    goes with cluster.gpu_per_node), less `leave_out` and what those decide."""
    kept: list[str] = []
    given = [c for c in leave_out if c in df.columns]
    for col in _config_columns(df):
        if col in leave_out or df[col].nunique(dropna=False) <= 1:
            continue
        by = kept + given
        if by and (df.groupby(by, dropna=False)[col].nunique(dropna=False) <= 1).all():
            continue
        kept.append(col)
    return kept


def _labels(df, columns: list[str]) -> list[str]:
    """One label per row: 'gpu=H100, nic_gbps=400' from the varying columns (the cluster's name when none vary)."""
    if not columns:
        name = df["cluster.name"] if "cluster.name" in df else df.get("cluster")
        return [str(v) for v in name] if name is not None else ["all"] * len(df)
    parts = [[f"{c.split('.', 1)[-1]}={_value(v)}" for v in df[c]] for c in columns]
    return [", ".join(p) for p in zip(*parts)]


def _value(v: Any) -> str:
    """A config value as a label shows it (a whole number held as a float, where a column has gaps, as a whole)."""
    if isinstance(v, float):
        return "-" if math.isnan(v) else str(int(v)) if v.is_integer() else f"{v:g}"
    return "-" if v is None else str(v)


def _size_axis(fig, sizes: Sequence[float], **where) -> None:
    from fabricsim.units import format_bytes

    ticks = sorted({float(s) for s in sizes if s and s > 0})
    step = max(1, len(ticks) // 12)
    shown = ticks[::step]
    fig.update_xaxes(type="log", tickvals=shown, ticktext=[format_bytes(s) for s in shown], title_text="message size",
                     **where)


def _busbw(perf, go):
    if perf.empty:
        return None
    fig = go.Figure()
    label_cols = _varying(perf, ["perf.size"])
    perf = perf.assign(_label=_labels(perf, label_cols))
    for label, group in perf.groupby("_label", sort=False):
        group = group.sort_values("size_bytes")
        hover = [f"{esc(label)}<br>{esc(_size_text(s))}: {b:.2f} GB/s, {t:.2f} us<br>{esc(_value(a))}/{esc(_value(p))}"
                 for s, b, t, a, p in zip(group["size_bytes"], group["busbw_GBps"], group["time_us"], group["algo"],
                                          group["proto"])]
        fig.add_trace(go.Scatter(x=group["size_bytes"], y=group["busbw_GBps"], mode="lines+markers", name=esc(label),
                                 hovertext=hover, hoverinfo="text"))
    _size_axis(fig, perf["size_bytes"])
    fig.update_yaxes(title_text="busbw (GB/s)")
    fig.update_layout(height=520, legend={"font": {"size": 10}}, margin={"t": 30})
    return fig


def _size_text(size: float) -> str:
    from fabricsim.units import format_bytes

    return format_bytes(size)


def _algorithms(perf, go):
    perf = perf[perf["algo"].notna()] if "algo" in perf else perf.iloc[0:0]
    if perf.empty:
        return None
    label_cols = _varying(perf, ["perf.size"])
    picks = perf["algo"].astype(str) + "/" + perf["proto"].astype(str)
    perf = perf.assign(_label=_labels(perf, label_cols), _pick=picks)
    fig = go.Figure()
    for pick, group in perf.groupby("_pick", sort=True):
        hover = [f"{esc(label)}<br>{esc(_size_text(s))}: {esc(pick)}" for label, s in zip(group["_label"],
                                                                                        group["size_bytes"])]
        fig.add_trace(go.Scatter(x=group["size_bytes"], y=[esc(v) for v in group["_label"]], mode="markers",
                                 name=esc(pick), marker={"size": 11, "symbol": "square"}, hovertext=hover,
                                 hoverinfo="text"))
    _size_axis(fig, perf["size_bytes"])
    n = perf["_label"].nunique()
    fig.update_yaxes(type="category", automargin=True)
    fig.update_layout(height=max(260, 28 * n + 140), margin={"t": 30})
    return fig


def _scaling(train, go, make_subplots):
    if train.empty:
        return None
    label_cols = _varying(train, ["cluster.nodes", "cluster.gpus"])
    train = train.assign(_label=_labels(train, label_cols))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("tokens/s per GPU", "MFU (dense BF16 peak, %)"))
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
               "#17becf")
    for i, (label, group) in enumerate(train.groupby("_label", sort=False)):
        group = group.sort_values("gpus")
        color = palette[i % len(palette)]
        hover = [f"{esc(label)}<br>{g:,} GPUs, {esc(lay)}: {t:,.0f} tokens/s/GPU, MFU {m:.1%}"
                 for g, lay, t, m in zip(group["gpus"], group["layout"], group["tokens_per_s_per_gpu"],
                                         group["mfu_bf16"])]
        common = {"mode": "lines+markers", "name": esc(label), "legendgroup": str(i), "line": {"color": color},
                  "hovertext": hover, "hoverinfo": "text"}
        fig.add_trace(go.Scatter(x=group["gpus"], y=group["tokens_per_s_per_gpu"], **common), row=1, col=1)
        fig.add_trace(go.Scatter(x=group["gpus"], y=group["mfu_bf16"] * 100, showlegend=False, **common), row=1, col=2)
    counts = sorted({int(g) for g in train["gpus"]})
    fig.update_xaxes(type="log", tickvals=counts, ticktext=[f"{c:,}" for c in counts], title_text="GPUs")
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(height=480, legend={"font": {"size": 10}}, margin={"t": 40})
    return fig


def _failures(ok, go):
    faults = [c for c in ok.columns if c.startswith("faults.") and ok[c].notna().any()]
    if not faults or ok.empty:
        return None
    metric = {"perf": "busbw_GBps", "train": "tokens_per_s"}
    fig = go.Figure()
    ok = ok[ok[faults].notna().any(axis=1)]  # rows of results that have fault settings
    for kind, group in ok.groupby("kind", sort=True):
        if kind not in metric or metric[kind] not in group:
            continue
        others = [c for c in _varying(group, faults) if c not in faults]
        group = group.assign(_label=_labels(group, others),
                             _fault=[", ".join(f"{c.split('.', 1)[1]}={_value(v)}" for c, v in zip(faults, vals))
                                     for vals in group[faults].itertuples(index=False)],
                             _healthy=[all(_is_healthy(v) for v in vals)
                                       for vals in group[faults].itertuples(index=False)])
        for label, line in group.groupby("_label", sort=False):
            base = line[line["_healthy"]]
            if base.empty:
                continue
            ref = float(base[metric[kind]].iloc[0])
            if not ref:
                continue
            share = line[metric[kind]] / ref * 100
            fig.add_trace(go.Scatter(x=[esc(f) for f in line["_fault"]], y=share, mode="lines+markers",
                                     name=esc(f"{kind}: {label}")))
    if not fig.data:
        return None
    fig.update_yaxes(title_text="% of the healthy figure", rangemode="tozero")
    fig.update_xaxes(type="category", title_text="faults")
    fig.update_layout(height=440, margin={"t": 30})
    return fig


def _is_healthy(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v in _HEALTHY


def _links(view: LinkView, go):
    order = list(dict.fromkeys(sorted(view.classes)))
    width = min(MAX_LINK_COLUMNS, max(view.classes.count(c) for c in order))
    z = np.full((len(order), width), np.nan)
    text = [[""] * width for _ in order]
    classes = np.asarray(view.classes)
    for r, cls in enumerate(order):
        links = np.flatnonzero(classes == cls)
        bins = np.array_split(links, min(width, links.size))
        for c, members in enumerate(bins):
            u = view.util[members]
            top = int(members[int(np.argmax(u))])
            z[r, c] = float(u.max()) * 100
            many = f" (busiest of {members.size})" if members.size > 1 else ""
            text[r][c] = f"{esc(view.names[top])}{many}: {float(u.max()):.1%}"
    fig = go.Figure(go.Heatmap(z=z, y=[esc(c) for c in order], text=text, hoverinfo="text", colorscale="Viridis",
                               zmin=0, zmax=max(100.0, float(np.nanmax(z)) if np.isfinite(z).any() else 100.0),
                               colorbar={"title": {"text": "% busy"}}))
    fig.update_xaxes(title_text="link (in topology order)", showticklabels=False)
    fig.update_yaxes(automargin=True)
    fig.update_layout(height=max(300, 26 * len(order) + 120), margin={"t": 30})
    return fig


def _figure_html(fig, ident: str) -> str:
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=f"chart-{ident}",
                       config={"displaylogo": False, "responsive": True})


def _table(df, to_html_datatable) -> str:
    results = [c for c in ("time_us", "busbw_GBps", "algo", "proto", "bound", "bottleneck", "layout", "step_time_s",
                           "tokens_per_s", "tokens_per_s_per_gpu", "mfu_bf16", "memory_GB") if c in df.columns]
    shown = ["key", "kind", "status", *_varying(df), *results, "error"]
    table = df[[c for c in dict.fromkeys(shown) if c in df.columns and df[c].notna().any()]]
    note = ""
    if len(table) > MAX_TABLE_ROWS:
        note = f"<p>The first {MAX_TABLE_ROWS:,} of {len(table):,} rows (the results file has them all).</p>"
        table = table.head(MAX_TABLE_ROWS)
    html_table = to_html_datatable(table.reset_index(drop=True), table_id="results", connected=False, maxBytes=0,
                                   showIndex=False, column_filters="header", classes="display compact nowrap",
                                   pageLength=25, scrollX=True, allow_html=False)
    return (f"<section id='table'><h2>every point</h2><p>Sort by a column's header, filter with the box above each "
            f"column or the search box; the configuration columns shown are the ones that vary.</p>{note}"
            f"{html_table}</section>")

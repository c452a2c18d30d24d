"""`fabricsim report`: results files -> the HTML report, with the per-link utilisation of one chosen point, which is
computed again from its row (a results file holds every point's configuration, not its per-link loads)."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from fabricsim.errors import FabricsimError
from fabricsim.reports import html_report
from fabricsim.reports.results import read_rows
from fabricsim.sweeps import kinds


def read(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The rows of every results file, in order (CSV values typed by the columns sweeps write)."""
    columns: dict[str, str] = {}
    for name in kinds.COMPUTE_KINDS:
        columns.update(kinds.columns(name))
    rows: list[dict[str, Any]] = []
    for p in paths:
        rows += read_rows(p, columns)
    return rows


def choose(rows: Sequence[Mapping[str, Any]], point: str | None) -> Mapping[str, Any] | None:
    """The row whose links the report shows: the one whose key starts with `point`, else the first collective point
    at the largest size (None when there is no collective point)."""
    perf = [r for r in rows if r.get("kind") == "perf" and r.get("status") == "ok" and r.get("key")]
    if point is not None:
        found = [r for r in rows if str(r.get("key", "")).startswith(point)]
        if len(found) != 1:
            raise FabricsimError(f"--point {point}: {'no' if not found else len(found)} points have a key starting "
                                 f"so: give a key from the results' key column (its first characters will do)")
        if found[0] not in perf:
            raise FabricsimError(f"--point {point}: the link view shows a collective point that ran (kind perf, "
                                 f"status ok); this one is {found[0].get('kind')}, {found[0].get('status')}")
        return found[0]
    if not perf:
        return None
    top = max(int(r["size_bytes"] or 0) for r in perf)
    return next(r for r in perf if int(r["size_bytes"] or 0) == top)


def links_of(row: Mapping[str, Any]) -> html_report.LinkView:
    """The per-link utilisation of a collective point, computed again from its row's configuration."""
    from fabricsim.topology import ClusterSpec
    from fabricsim.units import format_bytes
    from fabricsim.sweeps.compute import predict_point

    cluster_types, perf_types = kinds.option_types("cluster"), kinds.option_types("perf")
    fields = {name: _typed(_text(row.get(f"cluster.{name}"), typ), typ) for name, typ in cluster_types.items()
              if name != "gpus"}
    if any(v is None for v in fields.values()):
        raise FabricsimError(f"point {row.get('key')}: its row lacks cluster settings to rebuild it: give results "
                             "`fabricsim sweep` wrote")
    spec = ClusterSpec(**fields)
    options = {name: _typed(row.get(f"perf.{name}"), typ) for name, typ in perf_types.items()}
    gpus = row.get("cluster.gpus")
    first = int(gpus) if gpus is not None and gpus < spec.nodes * spec.gpus_per_node else None
    topo, point = predict_point(spec, first, options)
    if point.pick is None or not hasattr(point.pick, "result"):
        raise FabricsimError(f"point {row.get('key')} has no simulation to show (NCCL's cost model, or a size that "
                             "moves no data): choose another with --point")
    n = int(gpus) if gpus is not None else topo.n_gpus
    title = (f"point {str(row.get('key'))[:12]}: {options['collective']} {format_bytes(options['size'])} on "
             f"{spec.name}, {n:,} GPUs ({point.pick.algorithm}/{point.pick.protocol})")
    return html_report.link_view(topo, point.pick.result.link_util, title)


def _text(value: Any, typ: Any) -> Any:
    """An empty text field as CSV reads it back (no value) is the empty text it was written from."""
    base = typing.get_args(typ)[0] if typing.get_origin(typ) is typing.Annotated else typ
    return "" if value is None and base is str else value


def _typed(value: Any, typ: Any) -> Any:
    """A column's value as the option's type again (cluster.levels is held as text: '2' -> 2)."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, typ)
    except msgspec.ValidationError:
        if isinstance(value, str) and value.isdigit():
            return msgspec.convert(int(value), typ)
        raise


def report(paths: Sequence[str | Path], output: str | Path, *, point: str | None = None,
           title: str | None = None) -> Path:
    """Write the HTML report of the results files `paths` to `output`."""
    html_report.check_available()
    rows = read(paths)
    chosen = choose(rows, point)
    links = links_of(chosen) if chosen is not None else None
    name = title or ("fabricsim sweep report: " + ", ".join(Path(p).name for p in paths))
    html_report.write(output, html_report.build(rows, name, links=links, sources=[str(p) for p in paths]))
    return Path(output)

"""A sweep file -> its points, in a fixed order, each with a content key, and the tasks that compute them.

Order: cluster axes vary slowest, then the compute kind's axes, then its series (perf's sizes) fastest; within a
stage, axes keep the file's order, and a zip group sits where its first axis would. Consecutive points then share
a cluster, and points that differ only in message size are neighbours: a task is a run of neighbours on one
cluster, so a worker builds that cluster once and the engine's unit-message timing serves every size after the
first.

A point's content key hashes what it computes (fabricsim's version, the base cluster's content, the cluster
settings, every option of the compute kind), not its place in the file: reordering axes or adding values keeps
the keys, and so the finished points, of a sweep.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim import __version__
from fabricsim.errors import FabricsimError
from fabricsim.sweeps import kinds
from fabricsim.sweeps.kinds import KINDS

MAX_POINTS = 1_000_000  # a sweep file past this is almost surely a typo; split it into several sweeps
TASK_POINTS = 64  # the most points one task holds: what a killed worker can lose and must redo


@dataclass(frozen=True)
class Plan:
    """A sweep ready to run: `points` in order (plain dicts, as workers receive them), the compute kind, the base
    cluster (`base`: {'preset': name} or {'spec': fields}, `label`: as the file names it) and the columns."""

    name: str
    compute: str
    base: dict[str, Any]
    label: str
    points: tuple[dict[str, Any], ...]
    columns: dict[str, str]

    def tasks(self, workers: int, pending: list[int] | None = None, task_points: int | None = None) -> list[dict]:
        """The points to compute (indices `pending`, default all) as tasks: runs of neighbours on one cluster, at
        most `task_points` each (default: enough tasks to keep `workers` busy, at most TASK_POINTS points each)."""
        todo = list(range(len(self.points))) if pending is None else pending
        size = task_points or max(1, min(TASK_POINTS, math.ceil(len(todo) / (4 * max(1, workers)))))
        out: list[dict] = []
        run: list[dict] = []
        for i in todo:
            p = self.points[i]
            if run and (len(run) >= size or run[-1]["cluster"] != p["cluster"] or run[-1]["index"] + 1 != i):
                out.append(self._task(run))
                run = []
            run.append(p)
        if run:
            out.append(self._task(run))
        return out

    def _task(self, points: list[dict]) -> dict:
        return {"compute": self.compute, "base": self.base, "label": self.label, "points": points}


def build(spec: Any, where: str | Path) -> Plan:
    """The plan of a loaded sweep file (`spec.load`), found at `where` (cluster files are relative to it)."""
    where = Path(where)
    compute = _compute_kind(spec, where)
    section = getattr(spec, compute)
    fixed = dict(KINDS[compute].defaults())
    series = KINDS[compute].series
    if section is not None:
        for opt in kinds.option_types(compute):
            value = getattr(section, opt, None) if opt != series else None
            if value is not None:
                fixed[opt] = kinds.check(compute, opt, value, f"{where}: {compute}.{opt}")
    axes = _axes(spec, compute, where)
    if series:
        listed = getattr(section, series + "s", None) if section is not None else None
        _series_axis(axes, compute, series, listed, where)
    if compute == "train" and "model" not in axes and fixed.get("model") is None:
        raise FabricsimError(f"{where}: a train sweep needs a model: set train.model (model: llama3-8b) or an axis "
                             "train.model: [...]")
    if "cluster.nodes" in axes and "cluster.gpus" in axes:
        raise FabricsimError(f"{where}: axes cluster.nodes and cluster.gpus both size the cluster: keep one")
    dims = _dimensions(spec, axes, where)
    total = math.prod(len(axes[group[0]]) for group in dims)
    if total > MAX_POINTS:
        raise FabricsimError(f"{where}: {total:,} points is more than one sweep runs ({MAX_POINTS:,}): split it into "
                             "several sweep files, or use fewer axis values")
    excludes = _excludes(spec, axes, where)
    base, label, identity = _base(spec.cluster, where)
    points, seen = [], {}
    for choice in itertools.product(*(range(len(axes[g[0]])) for g in dims)):
        values = {name: axes[name][i] for g, i in zip(dims, choice) for name in g}
        if any(all(_matches(values[a], rule) for a, rule in entry.items()) for entry in excludes):
            continue
        cluster = {a.split(".", 1)[1]: v for a, v in values.items() if a.startswith("cluster.")}
        options = {**fixed, **{a.split(".", 1)[1]: v for a, v in values.items() if a.startswith(compute + ".")}}
        key = content_key(identity, compute, cluster, options)
        if key in seen:
            raise FabricsimError(f"{where}: two points are the same ({_show(values)}): an axis lists a value twice")
        seen[key] = True
        points.append({"index": len(points), "key": key, "cluster": cluster, "options": options})
    if not points:
        raise FabricsimError(f"{where}: the exclude entries leave no point to compute: loosen them")
    return Plan(spec.name or where.stem, compute, base, label, tuple(points), kinds.columns(compute))


def content_key(identity: str, compute: str, cluster: dict, options: dict) -> str:
    """The point's key: a hash of fabricsim's version and everything the point computes."""
    text = json.dumps({"fabricsim": __version__, "base": identity, "compute": compute, "cluster": cluster,
                       "options": options}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _compute_kind(spec: Any, where: Path) -> str:
    given = [name for name in kinds.COMPUTE_KINDS if getattr(spec, name) is not None]
    named = {a.split(".", 1)[0] for a in spec.axes} & set(kinds.COMPUTE_KINDS)
    found = list(dict.fromkeys(given + sorted(named)))
    if len(found) != 1:
        say = "none" if not found else " and ".join(found)
        raise FabricsimError(f"{where}: a sweep computes one thing at each point, {' or '.join(kinds.COMPUTE_KINDS)} "
                             f"(a section, or its axes); this one names {say}: use one, and a second sweep file for "
                             "the other")
    return found[0]


def _axes(spec: Any, compute: str, where: Path) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, values in spec.axes.items():
        kind_name, dot, option = name.partition(".")
        at = f"{where}: axis '{name}'"
        k = kinds.kind(kind_name, at)
        if not dot or not option:
            raise FabricsimError(f"{at}: name an option, as {kind_name}.OPTION")
        if k.stage == "compute" and k.name != compute:
            raise FabricsimError(f"{at}: this sweep computes {compute}, so {k.name} options do not apply")
        if not values:
            raise FabricsimError(f"{at} lists no values: give at least one, e.g. {name}: [...]")
        out[name] = [kinds.check(kind_name, option, v, f"{at} (item {i + 1})") for i, v in enumerate(values)]
    return out


def _series_axis(axes: dict, compute: str, series: str, listed: Any, where: Path) -> None:
    """The series option (perf.size) as the last axis: from the section's list or range, or an axis already."""
    name = f"{compute}.{series}"
    if listed is not None and name in axes:
        raise FabricsimError(f"{where}: {compute}.{series}s and the axis {name} both give the sizes: keep one")
    if listed is None:
        if name not in axes:
            raise FabricsimError(f"{where}: a {compute} sweep needs sizes: {compute}: {{{series}s: [1M, 1G]}} or "
                                 f"{{{series}s: {{min: 1M, max: 1G, factor: 4}}}}")
        axes[name] = axes.pop(name)  # innermost
        return
    if isinstance(listed, list):
        axes[name] = [kinds.check(compute, series, v, f"{where}: {compute}.{series}s") for v in listed]
        return
    from fabricsim.reports.sweep import sizes
    from fabricsim.units import parse_size

    step = parse_size(listed.step) if listed.step is not None else None
    axes[name] = sizes(parse_size(listed.min), parse_size(listed.max), listed.factor, step)


def _dimensions(spec: Any, axes: dict[str, list], where: Path) -> list[tuple[str, ...]]:
    """The axes as product dimensions, zip groups as one, in point order (cluster first, series last)."""
    order = list(axes)

    def rank(name: str) -> tuple[int, int]:
        return (0 if name.startswith("cluster.") else 1, order.index(name))

    grouped: dict[str, tuple[str, ...]] = {}
    for group in spec.zip:
        for name in group:  # every name first: sorting the group ranks all of its names
            if name not in axes:
                raise FabricsimError(f"{where}: zip names '{name}', which is not an axis: add it under axes")
        for name in group:
            if name in grouped:
                raise FabricsimError(f"{where}: axis '{name}' is in two zip groups: put it in one")
            grouped[name] = tuple(sorted(group, key=rank))
        lengths = [len(axes[name]) for name in group]
        if len(set(lengths)) > 1:
            raise FabricsimError(f"{where}: zip group {', '.join(group)} has lists of lengths "
                                 f"{', '.join(map(str, lengths))}: zipped axes need the same number of values")
    dims: list[tuple[str, ...]] = []
    for name in sorted(axes, key=rank):
        group = grouped.get(name, (name,))
        if group not in dims:
            dims.append(group)
    return dims


def _excludes(spec: Any, axes: dict[str, list], where: Path) -> list[dict[str, Any]]:
    out = []
    for i, entry in enumerate(spec.exclude):
        at = f"{where}: exclude[{i}]"
        if not entry:
            raise FabricsimError(f"{at} is empty: map axes to values, e.g. {{cluster.nic_gbps: 200}}")
        rules = {}
        for name, rule in entry.items():
            if name not in axes:
                raise FabricsimError(f"{at} names '{name}', which is not an axis of this sweep: use one of "
                                     f"{', '.join(axes)}")
            kind_name, _, option = name.partition(".")
            if isinstance(rule, dict):
                unknown = set(rule) - {"min", "max"}
                if unknown or not rule:
                    raise FabricsimError(f"{at}.{name}: a range is {{min: .., max: ..}}, got {rule}")
                rules[name] = {k: kinds.check(kind_name, option, v, f"{at}.{name}.{k}") for k, v in rule.items()}
            else:
                listed = rule if isinstance(rule, list) else [rule]
                rules[name] = [kinds.check(kind_name, option, v, f"{at}.{name}") for v in listed]
        out.append(rules)
    return out


def _matches(value: Any, rule: Any) -> bool:
    if isinstance(rule, list):
        return value in rule
    try:
        return ("min" not in rule or value >= rule["min"]) and ("max" not in rule or value <= rule["max"])
    except TypeError:  # a range over text values: never matches
        return False


def _base(cluster: str, where: Path) -> tuple[dict[str, Any], str, str]:
    """({'preset': name} | {'spec': fields}, the label, the identity hashed into keys) of the base cluster; a file
    is read here, so workers (on other machines too) receive its fields, not its path."""
    from fabricsim import topology

    if cluster in topology.PRESETS:
        return {"preset": cluster}, cluster, f"preset:{cluster}"
    path = Path(cluster)
    if not path.is_absolute():
        path = where.parent / path
    if not path.is_file():
        raise FabricsimError(f"{where}: cluster '{cluster}' is neither a preset ({', '.join(topology.PRESETS)}) nor a "
                             f"cluster file (looked for {path})")
    spec = topology.load_spec(path)
    if spec.faults:
        raise FabricsimError(f"{where}: cluster file {cluster} has a faults section: a sweep runs healthy clusters; "
                             "drop it (fabricsim whatif failures sweeps failures, perf --fail runs one)")
    fields = spec.fields()  # plain data for the workers and the key
    if fields.pop("calibrated", None) is not None:
        raise FabricsimError(f"{where}: cluster file {cluster} has a calibrated: section, which sweeps do not carry "
                             "yet: sweep the cluster file without it (its fitted values would be lost)")
    identity = json.dumps(fields, sort_keys=True)
    return {"spec": fields}, cluster, "spec:" + hashlib.sha256(identity.encode()).hexdigest()


def _show(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())

"""What a sweep can vary, one table row per kind of setting: axis names are '<kind>.<option>'.

A kind's `stage` says where its settings act: 'cluster' settings make the point's cluster spec (any ClusterSpec
field but `faults`, and `gpus`, the GPUs the run uses); 'compute' settings are the options of what the point
computes (`perf`, a collective at one size; `train`, a training step) and that kind's section of the sweep file
holds their fixed values. A new kind of axis is one row of `KINDS`: its options and their types, and for a compute
kind its section defaults, the function that computes a point and the result columns. Kinds that other work will bring (failures,
job mixes) are listed with `not_yet`, so an axis naming them is refused with that message rather than ignored.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from fabricsim.errors import FabricsimError


@dataclass(frozen=True)
class Kind:
    """One kind of setting. `options()`: option -> type (msgspec checks values against it); `defaults()`: the
    values a compute kind's points take when neither its section nor an axis sets them; `compute`: the
    'module:function' that turns (spec, ranks, options) into result columns; `columns`: those columns; `series`:
    an option the section lists under its plural name (perf's `sizes`), swept innermost."""

    name: str
    stage: Literal["cluster", "compute"]
    options: Callable[[], dict[str, Any]]
    defaults: Callable[[], dict[str, Any]] = dict
    compute: str = ""
    columns: Callable[[], dict[str, str]] = dict
    series: str = ""
    doc: str = ""
    not_yet: str = ""


def _cluster_options() -> dict[str, Any]:
    from fabricsim.topology.spec import MAX_GPUS, ClusterSpec

    hints = typing.get_type_hints(ClusterSpec, include_extras=True)
    # every scalar setting of a cluster; `calibrated` is fitted to logs (fabricsim calibrate), not swept, and faults
    # are not an axis either: a sweep column holds one value, and a failures sweep is `fabricsim whatif failures`
    options = {f.name: hints[f.name] for f in fields(ClusterSpec) if f.name not in ("calibrated", "faults")}
    options["gpus"] = Annotated[int, Meta(ge=1, le=MAX_GPUS, description="GPUs the run uses: whole nodes or racks "
                                                                          "size the cluster, fewer than one node run "
                                                                          "on its first GPUs")]
    return options


def _perf_options() -> dict[str, Any]:
    from fabricsim.reports.sweep import COST_MODELS, LEVELS, LIBRARIES
    from fabricsim.units import MAX_BYTES
    from fabricsim.vocab import COLLECTIVES, DTYPE_SIZES, REDUCTION_OPS

    return {
        "collective": Literal[COLLECTIVES],  # type: ignore[valid-type]
        "size": Annotated[int, Meta(ge=0, le=MAX_BYTES, description="message size in bytes (K/M/G/T allowed)")],
        "dtype": Literal[tuple(DTYPE_SIZES)],  # type: ignore[valid-type]
        "op": Literal[REDUCTION_OPS],  # type: ignore[valid-type]
        "root": Annotated[int, Meta(ge=0)],
        "algo": Annotated[str | None, Meta(description="as NCCL_ALGO: ring,tree or ^nvls")],
        "proto": Annotated[str | None, Meta(description="as NCCL_PROTO: ll,ll128,simple")],
        "level": Literal[LEVELS] | None,  # type: ignore[valid-type]
        "cost_model": Literal[COST_MODELS],  # type: ignore[valid-type]
        "library": Literal[LIBRARIES],  # type: ignore[valid-type]
    }


def _perf_defaults() -> dict[str, Any]:
    return {"collective": "all_reduce", "dtype": "float", "op": "sum", "root": 0, "algo": None, "proto": None,
            "level": None, "cost_model": "fabricsim", "library": "nccl"}


def _train_options() -> dict[str, Any]:
    from fabricsim.training import parallel as P
    from fabricsim.training.runs import FIELD_OF, OPTIONS

    hints = typing.get_type_hints(P.Parallelism)
    special = {"model": Annotated[str, Meta(min_length=1, description="built-in model name or a YAML model file")],
               "seq": Annotated[int, Meta(ge=1)] | None, "efficiency": Annotated[float, Meta(ge=0.01, le=1)] | None,
               "search": bool}
    out: dict[str, Any] = {}
    for name in OPTIONS:
        if name in ("cluster", "gpus", "compare"):  # the point gives the cluster and its GPUs; variants: cluster axes
            continue
        typ = special.get(name) or hints[FIELD_OF.get(name, name)]
        out[name] = typ if name in special or type(None) in typing.get_args(typ) else typ | None
    return out


def _train_defaults() -> dict[str, Any]:
    return {name: False if name == "search" else None for name in _train_options()}


def _perf_columns() -> dict[str, str]:
    from fabricsim.reports.results import PERF_COLUMNS

    return PERF_COLUMNS


def _train_columns() -> dict[str, str]:
    from fabricsim.reports.results import TRAIN_COLUMNS

    return TRAIN_COLUMNS


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("cluster", "cluster", _cluster_options,
         doc="any cluster-file field (fabricsim schema cluster), and gpus"),
    Kind("perf", "compute", _perf_options, _perf_defaults, "fabricsim.sweeps.compute:perf_point", _perf_columns,
         series="size", doc="a collective at one message size, as fabricsim perf times it"),
    Kind("train", "compute", _train_options, _train_defaults, "fabricsim.sweeps.compute:train_point", _train_columns,
         doc="a training step, as fabricsim train times it (search: true for --search)"),
    Kind("faults", "cluster", dict, not_yet="failed and degraded links (issue 16) are not in fabricsim yet: remove the "
                                            "faults.* axes"),
    Kind("jobs", "compute", dict, not_yet="job mixes on one fabric (issue 16) are not in fabricsim yet: remove the "
                                          "jobs.* axes"),
)}
COMPUTE_KINDS = tuple(k.name for k in KINDS.values() if k.stage == "compute" and not k.not_yet)


def kind(name: str, where: str) -> Kind:
    """The kind an axis or section names; unknown and not-yet kinds are a FabricsimError at `where`."""
    k = KINDS.get(name)
    if k is None:
        ready = [f"{n} ({v.doc})" for n, v in KINDS.items() if not v.not_yet]
        raise FabricsimError(f"{where}: '{name}' is not a kind of setting: axes are named kind.option with kind one of "
                             f"{'; '.join(ready)}")
    if k.not_yet:
        raise FabricsimError(f"{where}: {k.not_yet}")
    return k


@functools.cache
def option_types(name: str) -> dict[str, Any]:
    """Option -> type of a ready kind."""
    return KINDS[name].options()


def check(name: str, option: str, value: Any, where: str) -> Any:
    """`value` converted to option's type (400 for a float option is 400.0; a size text, '1M', is bytes), or one
    FabricsimError at `where` saying what the option takes."""
    from fabricsim import inputs

    types = option_types(name)
    if (name, option) == ("perf", "size") and isinstance(value, str):
        from fabricsim.units import parse_size

        value = parse_size(value)
    if option not in types:
        from fabricsim.inputs import closest

        close = closest(option, types)
        guess = f" (did you mean '{name}.{close}'?)" if close else ""
        raise FabricsimError(f"{where}: '{name}.{option}' is not a {name} setting{guess}: use one of "
                             f"{', '.join(types)}")
    try:
        value = msgspec.convert(value, types[option])
    except msgspec.ValidationError:
        raise FabricsimError(f"{where}: {name}.{option} {inputs.show(value)}: it must be "
                             f"{inputs.describe(types[option])}") from None
    return value


def config_columns(compute: str) -> dict[str, str]:
    """The config columns of a sweep computing `compute`: the base cluster, every cluster setting, every option."""
    from fabricsim.reports.results import kind_of

    out = {"cluster": "str"}
    for k in KINDS.values():
        if k.not_yet or (k.stage == "compute" and k.name != compute):
            continue
        out.update({f"{k.name}.{opt}": kind_of(typ) for opt, typ in option_types(k.name).items()})
    return out


def columns(compute: str) -> dict[str, str]:
    """Every column of a sweep computing `compute`, in file order: the point's, its config, its results."""
    from fabricsim.reports.results import POINT_COLUMNS

    return {**POINT_COLUMNS, **config_columns(compute), **KINDS[compute].columns()}

"""The sweep file: YAML (or JSON) read into `SweepSpec` through `fabricsim.inputs`, with the same errors as a
cluster file (the file, the field path, the fix). `fabricsim schema sweep` prints its JSON Schema.

    cluster: superpod-h100            # the base cluster: a preset, or a cluster YAML file beside this one
    perf:                             # what each point computes: perf (a collective at one size) or train
      collective: all_reduce
      sizes: {min: 1M, max: 1G, factor: 4}
    axes:                             # kind.option: values; the points are their cartesian product
      cluster.nic_gbps: [200, 400, 800]
      cluster.gpus: [256, 1024]
    zip: [[cluster.gpu, cluster.nic]] # axes that advance together instead (equal lengths)
    exclude:                          # combinations that make no sense: a point matching every key of one entry
      - {cluster.nic_gbps: 200, cluster.gpus: {min: 1024}}   # is left out (a value, a list, or min / max)

The sections are built from `kinds.KINDS` (one per compute kind, a field per option), so a new kind of setting
gives the file its section and the schema its types without an edit here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from fabricsim import inputs
from fabricsim.sweeps.kinds import KINDS

HINT = " (`fabricsim schema sweep` prints every field)"


class SizeRange(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """nccl-tests' -b / -e / -f (or -i): sizes from `min` to `max`, multiplied by `factor` (default 2) or stepped."""

    min: Annotated[int | str, Meta(description="smallest size: bytes, or with K/M/G/T (nccl-tests -b)")]
    max: Annotated[int | str, Meta(description="largest size (nccl-tests -e)")]
    factor: Annotated[float, Meta(gt=1, description="multiply by this each step (nccl-tests -f)")] | None = None
    step: Annotated[int | str, Meta(description="add this many bytes each step (nccl-tests -i)")] | None = None


def _section(name: str) -> type:
    """The sweep-file section of compute kind `name`: every option, each optional (unset: the kind's default);
    a kind with a series option (perf's size) takes the list or range of it under the plural name."""
    k = KINDS[name]
    specs: list[tuple[str, Any, Any]] = [(opt, typ | None, None) for opt, typ in k.options().items()
                                         if opt != k.series]
    if k.series:
        specs.append((k.series + "s", Annotated[list[int | str], Meta(min_length=1)] | SizeRange | None, None))
    return msgspec.defstruct(f"{name.capitalize()}Section", specs, frozen=True, forbid_unknown_fields=True,
                             kw_only=True)


@functools.cache
def schema() -> type:
    """The `SweepSpec` Struct: name, cluster, one optional section per compute kind, axes, zip, exclude."""
    sections = [(name, _section(name) | None, None) for name, k in KINDS.items()
                if k.stage == "compute" and not k.not_yet]
    values = Annotated[list[Any], Meta(description="the values this axis takes")]
    return msgspec.defstruct("SweepSpec", [
        ("name", Annotated[str, Meta(description="printed in reports (default: the file's name)")], ""),
        ("cluster", Annotated[str, Meta(min_length=1, description="base cluster: a preset (fabricsim topo list) or "
                                                                  "a cluster YAML file, relative to this file")]),
        *sections,
        ("axes", Annotated[dict[str, values], Meta(description="kind.option -> values (cluster.nic_gbps: [200, "
                                                               "400]); points are the cartesian product")], {}),
        ("zip", Annotated[list[Annotated[list[str], Meta(min_length=2)]],
                          Meta(description="groups of axes that advance together (equal lengths)")], []),
        ("exclude", Annotated[list[dict[str, Any]],
                              Meta(description="points to leave out: each entry maps axes to a value, a list of "
                                               "values, or {min: .., max: ..}; a point matching all of them is "
                                               "left out")], []),
    ], frozen=True, forbid_unknown_fields=True, kw_only=True)


def load(path: str | Path) -> Any:
    """Read a sweep file (YAML, or JSON by its .json suffix) into `schema()`; every problem one FabricsimError."""
    p = Path(path)
    text = inputs.read_text(p, "sweep file")
    data = inputs.parse_json(text, str(p)) if p.suffix.lower() == ".json" else inputs.parse_yaml(text, str(p))
    return inputs.convert(data, schema(), str(p), HINT)


def json_schema() -> dict:
    """The JSON Schema of a sweep file, for editors."""
    return inputs.json_schema(schema())

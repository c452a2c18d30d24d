"""fabricsim.topology: cluster specs, presets, the immutable array-backed Topology they build into, what-if
variants of it (`with_link_capacity`, `without_links`, `with_calibration`), and faults (`apply_faults`: failed and
degraded parts).

The variants and the fault resolver are imported when first asked for (PEP 562): a healthy cluster's run never
needs them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim.errors import FabricsimError, option
from fabricsim.topology.builders import build_topology
from fabricsim.topology.faults import NO_FAULTS, Faults
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.topology.presets import PRESETS, preset_spec
from fabricsim.topology.spec import ClusterSpec
from fabricsim.topology.validate import validate

if TYPE_CHECKING:
    from fabricsim.topology.faulted import apply_faults
    from fabricsim.topology.variants import with_calibration, with_ecmp_seed, with_link_capacity, without_links

# name -> the module of this package that holds it
_LAZY = {"apply_faults": "faulted", "with_calibration": "variants", "with_ecmp_seed": "variants",
         "with_link_capacity": "variants", "without_links": "variants"}

__all__ = ["PRESETS", "ClusterSpec", "DeviceKind", "Faults", "Topology", "apply_faults", "build", "cluster_file",
           "load_cluster", "load_spec", "preset_spec", "save_cluster", "validate", "with_calibration", "with_ecmp_seed",
           "with_link_capacity", "without_links"]


def build(spec: ClusterSpec, where: str | None = None) -> Topology:
    """Build and validate the topology of `spec`, with its faults applied (`apply_faults`). `where`, the cluster
    file the spec was read from, starts the message of an error of the build (a fabric the switches cannot hold, a
    speed no link runs), as the file's own checks name it, so the user knows which file to fix."""
    try:
        topo = build_topology(replace(spec, faults=NO_FAULTS) if spec.faults else spec)
        validate(topo)
    except FabricsimError as err:
        if where is None:
            raise
        raise FabricsimError(f"{where}: {err}") from None
    if not spec.faults:
        return topo
    from fabricsim.topology.faulted import apply_faults

    return apply_faults(topo, spec.faults)


def cluster_file(name_or_path: object) -> str | None:
    """The cluster file a preset name or a path names (None for a preset or a spec): `build`'s `where`."""
    return name_or_path if isinstance(name_or_path, str) and name_or_path not in PRESETS else None


def __getattr__(name: str) -> Any:
    """PEP 562: the variants and `apply_faults`, imported from their modules when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module 'fabricsim.topology' has no attribute '{name}'")
    from importlib import import_module

    value = getattr(import_module(f"fabricsim.topology.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def load_spec(name_or_path: str | Path, nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
    """A preset name or a YAML file path -> ClusterSpec (nodes / gpus resize presets only)."""
    text = str(name_or_path)
    if text in PRESETS:
        return preset_spec(text, nodes=nodes, gpus=gpus)
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        if not Path(text).is_file():
            raise FabricsimError(f"cluster file {text} does not exist: check the path, or use a preset: {', '.join(PRESETS)}")
        spec = ClusterSpec.from_yaml(Path(text))
        if nodes is not None or gpus is not None:
            raise FabricsimError(f"{option('nodes')}/{option('gpus')} resize presets only: edit 'nodes' in {text} "
                                 "instead")
        return spec
    raise FabricsimError(f"unknown cluster '{text}': use a YAML file path or one of the presets: {', '.join(PRESETS)}")


def load_cluster(name_or_path: str | Path, nodes: int | None = None, gpus: int | None = None) -> Topology:
    """Build the topology of a preset name or YAML file path."""
    return build(load_spec(name_or_path, nodes=nodes, gpus=gpus), cluster_file(str(name_or_path)))


def save_cluster(spec: ClusterSpec, path: str | Path) -> None:
    """Write `spec` as YAML that `load_cluster(path)` reads back."""
    try:
        Path(path).write_text(spec.to_yaml())
    except OSError as err:
        raise FabricsimError(f"cannot write {path}: {err.strerror}; check the directory exists and is writable") from None

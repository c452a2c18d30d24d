"""What-if variants: new topologies made from a built one, sharing every array they do not change.

A topology is immutable (`topology.model`), so a variant is never an edit: it is a new `Topology` with its own,
empty derived store, and the topology it came from keeps giving its own figures. Links are named by index
(`Topology.link_name` says which is which) or by a boolean mask over the links; a change applies to a cable,
both directions of each named link (`l ^ 1` is the opposite direction), unless asked otherwise.

A failed link is removed, not set to capacity 0: routing, the engine and the checks all work on the links a
topology has, so a missing link is honoured everywhere at once (fat-tree up/down routing and ECMP spread over
the links left, a rank nothing reaches is an error naming the cut). The variant numbers its links anew;
`Topology.link_origin` maps each to its index in the topology that was built, so per-link figures of a
variant and of the healthy cluster can be compared link by link.

A calibrated variant (`with_calibration`) has the same devices and links and other fitted efficiencies and
latencies: it shares the structural data already derived (routes, unit traffic and its flows), so each step of a
calibration fit times the logs without routing them again.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.calibrated import Calibrated
from fabricsim.topology.model import Topology, share_structure
from fabricsim.topology.validate import cut_rank, validate

__all__ = ["link_indices", "with_calibration", "with_ecmp_seed", "with_link_capacity", "without_links"]


def link_indices(topo: Topology, links) -> np.ndarray:
    """Sorted distinct link indices from an index array or a boolean mask over `topo`'s links."""
    arr = np.asarray(links)
    if arr.dtype == bool:
        if arr.shape != (topo.n_links,):
            raise FabricsimError(f"a link mask must hold one boolean per link ({topo.n_links} for '{topo.name}'), "
                                 f"got shape {arr.shape}: build it from the topology's link arrays")
        return np.flatnonzero(arr)
    arr = arr.ravel()
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise FabricsimError(f"links must be integer link indices or a boolean mask, got dtype {arr.dtype}")
    arr = np.unique(arr.astype(np.int64))
    if arr.size and (arr[0] < 0 or arr[-1] >= topo.n_links):
        bad = int(arr[0] if arr[0] < 0 else arr[-1])
        raise FabricsimError(f"link {bad} is not a link of '{topo.name}': use indices 0..{topo.n_links - 1}")
    return arr


def _cables(idx: np.ndarray) -> np.ndarray:
    """The links and their opposite directions (links come in pairs 2k, 2k+1)."""
    return np.unique(np.concatenate([idx, idx ^ 1]))


def with_link_capacity(topo: Topology, links, factor, *, both_directions: bool = True) -> Topology:
    """`topo` with `links` carrying `factor` times their capacity (a cable trained to fewer lanes or a lower
    speed, or a faster part); `factor` is one positive number or one per named link. `both_directions`: the
    opposite direction of each link changes too (a cable), else only the directions named."""
    idx = link_indices(topo, links)
    f = np.asarray(factor, dtype=np.float64)
    if f.ndim and f.shape != idx.shape:
        raise FabricsimError(f"factor must be one number or one per named link ({idx.size}), got shape {f.shape}")
    if not (np.isfinite(f).all() and (f > 0).all()):
        raise FabricsimError(f"capacity factor {factor!r} must be positive and finite: a failed link is "
                             "`without_links`, a degraded one a factor between 0 and 1")
    scale = np.ones(topo.n_links)
    if both_directions:
        scale[idx ^ 1] = f
    scale[idx] = f  # a direction named itself keeps its own factor
    variant = replace(topo, link_capacity=topo.link_capacity * scale)
    validate(variant)
    return variant


def without_links(topo: Topology, links) -> Topology:
    """`topo` with `links` failed: each named link and its opposite direction removed (a cable carries nothing
    either way once down). Raises FabricsimError naming the cut when a GPU can no longer reach the others."""
    gone = _cables(link_indices(topo, links))
    keep = np.ones(topo.n_links, dtype=bool)
    keep[gone] = False
    kept = np.flatnonzero(keep)
    src, dst = topo.link_src[kept], topo.link_dst[kept]
    r = cut_rank(topo.n_devices, src, dst, topo.gpu_device)
    if r >= 0:
        raise FabricsimError(
            f"without {gone.size // 2} link(s) ({topo.link_name(int(gone[0]))}{', ...' if gone.size > 2 else ''}) "
            f"GPU rank {r} ({topo.device_name(int(topo.gpu_device[r]))}) cannot reach GPU rank 0: "
            "fail fewer links, or give that GPU another way out")
    origin = kept if topo.link_origin is None else topo.link_origin[kept]
    variant = replace(topo, link_src=src, link_dst=dst, link_capacity=topo.link_capacity[kept],
                      link_latency=topo.link_latency[kept], link_tech=topo.link_tech[kept],
                      link_count=topo.link_count[kept], link_origin=origin.astype(np.int64))
    validate(variant)
    return variant


def with_ecmp_seed(topo: Topology, seed: int) -> Topology:
    """`topo` whose switches hash flows onto equal-cost paths with `seed` (routing.scaleout.flow_hash): the same
    devices and links, its own routes. Under 'ecmp' routing which flows collide on an uplink depends on it."""
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise FabricsimError(f"ECMP seed {seed!r} must be a whole number from 0 to {2**32 - 1}")
    spec = topo.spec if topo.spec is None else replace(topo.spec, ecmp_seed=int(seed))
    return replace(topo, features={**topo.features, "ecmp_seed": int(seed)}, spec=spec)


def with_calibration(topo: Topology, cal: Calibrated | None) -> Topology:
    """`topo` with `cal` as its spec's `calibrated:` section (None: none), the topology `build` makes of that spec:
    the same devices and links, sharing what is derived from them alone (`Topology.derive_structure`); what the
    calibration changes (effective capacities, NCCL's latencies, drain times) is derived anew."""
    if topo.spec is None:
        raise FabricsimError(f"topology '{topo.name}' was built without a cluster spec, which holds the calibration: "
                             "build it from a ClusterSpec (topology.build)")
    return share_structure(replace(topo, spec=replace(topo.spec, calibrated=cal)), topo)

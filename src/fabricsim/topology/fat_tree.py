"""Fat-tree planning: which leaf each NIC port uses and how leaves, spines and cores are cabled.

Pure index arithmetic (numpy), no devices: `builders` turns the plan into devices and links.

Rules (NVIDIA DGX SuperPOD reference architectures NV-H100-RA / NV-B200-RA, docs/SOURCES.md):
- leaf: down ports D at the NIC speed, uplinks U = ceil(D x down speed / (oversubscription x up speed)), so the
  leaf's down:up BANDWIDTH is the cluster's oversubscription (the schema's "leaf down:up bandwidth ratio"; a
  200G NIC on an 800G-port leaf needs a quarter of the uplinks a NIC of the port's own speed does); D + U never
  exceeds the radix. Every cable takes one switch port whatever its speed (no breakout: `ports` counts the
  part's logical ports at the full rate, hardware.switches), so a slower NIC fills a port as a full-rate one does.
- rail-optimised: within a scalable unit (SU), NIC rail k of every node goes to the leaf (group)
  of rail k (a cluster smaller than one SU is that partial SU); non-rail-optimised: whole nodes in order,
  spread evenly over the fewest leaves that hold them (8 nodes on two leaves are cabled 4 + 4, not 5 + 3, as the
  rail-optimised SU spreads its nodes), each leaf's uplinks sized for its down ports.
- 1 level if every NIC fits one switch. 2 levels: S spines, S the smallest divisor of U with
  S * P >= L * U, each leaf joined to every spine by U / S links (reproduces NV-H100-RA and
  NV-B200-RA leaf/spine counts: 1 SU 8/4, 3 SU 24/16, 4 SU 32/16, 8 SU 64/32).
- 3 levels: pods of P/2 leaves (whole SUs), U spines per pod (one link to each leaf of the pod,
  P/2 down and P/2 up), spine j of every pod joined to core group j of g cores, g the smallest
  divisor of the pod size with g * P >= pods * P/2 (NV-B200-RA: 16 SU 128/128/64, 64 SU 512/512/256).
- beyond a 3-level tree (more pods than core ports) a rail-optimised fabric is split into one
  tree per rail ("rail planes"; cross-rail traffic first moves over NVLink, as NCCL PXN does),
  the multi-plane / rail-only layout of Wang et al., "Rail-only", arXiv:2307.12169.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError


@dataclass(frozen=True)
class FatTree:
    """Cabling plan. Indices are local to each tier; ls_* / sc_* are leaf-spine / spine-core link pairs."""

    levels: int
    planes: int
    n_leaf: int
    nic_leaf: np.ndarray
    leaf_pod: np.ndarray
    leaf_local: np.ndarray
    n_spine: int = 0
    spine_pod: np.ndarray | int = -1
    spine_local: np.ndarray | int = 0
    ls_leaf: np.ndarray | None = None
    ls_spine: np.ndarray | None = None
    ls_count: np.ndarray | int = 1
    n_core: int = 0
    core_local: np.ndarray | int = 0
    sc_spine: np.ndarray | None = None
    sc_core: np.ndarray | None = None
    sc_count: np.ndarray | int = 1


def _divisor_at_least(n: int, k: int) -> int:
    """Smallest divisor of n that is >= k (n itself at worst)."""
    return next(d for d in range(max(k, 1), n + 1) if n % d == 0)


def uplinks(down: int, oversubscription: float, down_up: float) -> int:
    """Leaf uplinks giving `down` ports a down:up bandwidth ratio of at most `oversubscription` (down_up: one down
    port's rate over one uplink's); the 1e-9 keeps an exact ratio (32 x 200G over 8 x 400G at 2:1) from rounding up."""
    return max(1, math.ceil(down * down_up / oversubscription - 1e-9))


def _max_down(leaf_ports: int, o: float, down_up: float, nic_gbps: float) -> int:
    """The most down ports a leaf takes with their uplinks (D + uplinks(D) <= radix: D <= P o / (o + r))."""
    d = int(leaf_ports * o / (o + down_up) + 1e-9)
    while d > 0 and d + uplinks(d, o, down_up) > leaf_ports:
        d -= 1
    if d < 1:
        least = down_up / (leaf_ports - 1) if leaf_ports > 1 else math.inf
        raise FabricsimError(
            f"oversubscription {o:g} needs {uplinks(1, o, down_up)} uplinks for a single {nic_gbps:g} Gb/s NIC port, "
            f"more than a {leaf_ports}-port leaf holds beside it: use oversubscription >= {least:.3g} (1 for a "
            "non-blocking leaf), or a leaf switch with more ports")
    return d


def plan_fat_tree(spec, leaf_ports: int, spine_ports: int, down_up: float = 1.0) -> FatTree:
    """Plan the scale-out fat tree of `spec` (a ClusterSpec) with the given switch radixes; down_up: the rate of a
    NIC -> leaf link over a leaf -> spine link's (1 where the NICs run at the switches' port speed)."""
    N, R, o = spec.nodes, spec.nics_per_node * spec.nic_ports, spec.oversubscription  # R: NIC ports per node
    E = N * R
    d_max = _max_down(leaf_ports, o, down_up, spec.nic_gbps)
    node = np.repeat(np.arange(N, dtype=np.int64), R)
    rail = np.tile(np.arange(R, dtype=np.int64), N)
    if spec.levels == 1 or (spec.levels == "auto" and E <= leaf_ports):
        if E > leaf_ports:
            raise FabricsimError(
                f"{E} NIC ports do not fit one {leaf_ports}-port switch: set levels to 2, 3 or 'auto'"
            )
        return FatTree(1, 1, 1, np.zeros(E, np.int64), np.zeros(1, np.int32), np.zeros(1, np.int32))

    if spec.rail_optimized:
        # leaves per (SU, rail); nodes of one SU spread evenly over them. A cluster smaller than one SU is
        # cabled as that partial SU (one NVL72 rack: 4 rail leaves of 18 ports, not a full 8-rack SU's).
        su_nodes = min(spec.su_nodes, N)
        lpr = math.ceil(su_nodes / d_max)
        down = math.ceil(su_nodes / lpr)
        n_su = math.ceil(N / su_nodes)
        su, pos = node // su_nodes, node % su_nodes
        per_su = R * lpr
        nic_leaf = su * per_su + rail * lpr + pos // down
        n_leaf = n_su * per_su
        leaf_pod = np.repeat(np.arange(n_su, dtype=np.int32), per_su)
        leaf_local = np.tile(np.arange(per_su, dtype=np.int32), n_su)
        group = per_su  # leaves that must stay in one pod (an SU)
    else:
        most = (d_max // R) * R if R <= d_max else d_max  # whole nodes per leaf where a node fits one
        fewest = math.ceil(E / most)
        down = math.ceil(N / fewest) * R if R <= d_max else math.ceil(E / fewest)  # even over the fewest leaves
        nic_leaf = np.arange(E, dtype=np.int64) // down
        n_leaf = math.ceil(E / down)
        first_node = np.arange(n_leaf, dtype=np.int64) * down // R
        leaf_pod = (first_node // spec.su_nodes).astype(np.int32)
        leaf_local = (np.arange(n_leaf) - np.searchsorted(leaf_pod, leaf_pod)).astype(np.int32)
        group = 1
    up = uplinks(down, o, down_up)

    fits2 = n_leaf <= spine_ports
    if spec.levels == 2 or (spec.levels == "auto" and fits2):
        if not fits2:
            raise FabricsimError(
                f"{n_leaf} leaves exceed a 2-level tree of {spine_ports}-port spines: set levels to 3 or 'auto'"
            )
        n_spine = _divisor_at_least(up, math.ceil(n_leaf * up / spine_ports))
        ls_leaf = np.repeat(np.arange(n_leaf), n_spine)
        ls_spine = np.tile(np.arange(n_spine), n_leaf)
        return FatTree(2, 1, n_leaf, nic_leaf, leaf_pod, leaf_local, n_spine, -1,
                       np.arange(n_spine, dtype=np.int32), ls_leaf, ls_spine, up // n_spine)

    half = spine_ports // 2
    pod = (half // group) * group or half
    planes = 1
    if math.ceil(n_leaf / pod) > spine_ports:
        lpr_plane = group // R if spec.rail_optimized else 0
        pod = (half // lpr_plane) * lpr_plane if lpr_plane else 0
        if not spec.rail_optimized or R == 1 or not pod or math.ceil(n_leaf // R / pod) > spine_ports:
            most = spine_ports * pod * down if pod else spine_ports * half * down
            raise FabricsimError(
                f"{E} NIC ports exceed a 3-level fat tree of {spine_ports}-port switches (about {most} ports"
                f"{' per rail plane' if spec.rail_optimized else ''}): use fewer nodes, a higher-radix switch,"
                f" or oversubscription{'' if spec.rail_optimized else ', or rail_optimized: true'}"
            )
        planes = R
    # order leaves plane-major so each plane's leaves are contiguous: plane p = rail p
    if planes > 1:
        lpr_plane = group // R
        su_of = np.arange(n_leaf) // group
        rail_of = (np.arange(n_leaf) % group) // lpr_plane
        order_key = rail_of * (n_leaf // R) + su_of * lpr_plane + np.arange(n_leaf) % lpr_plane
    else:
        order_key = np.arange(n_leaf)
    per_plane = n_leaf // planes
    pos_in_plane = order_key % per_plane
    plane_of = order_key // per_plane
    n_pod = math.ceil(per_plane / pod)
    g = _divisor_at_least(pod, math.ceil(n_pod * pod / spine_ports))
    # leaf -> the `up` spines of its pod, one link each
    leaf_pod_idx = plane_of * n_pod + pos_in_plane // pod
    ls_leaf = np.repeat(np.arange(n_leaf), up)
    ls_spine = (leaf_pod_idx[:, None] * up + np.arange(up)).ravel()
    n_spine = planes * n_pod * up
    spine_pod = np.repeat(np.arange(planes * n_pod, dtype=np.int32), up)
    spine_local = np.tile(np.arange(up, dtype=np.int32), planes * n_pod)
    # spine j of pod q (plane p) -> the g cores of group j of plane p, pod // g links each
    spines = np.arange(n_spine)
    sp_plane, sp_j = spines // (n_pod * up), spines % up
    sc_spine = np.repeat(spines, g)
    sc_core = ((sp_plane * up + sp_j)[:, None] * g + np.arange(g)).ravel()
    n_core = planes * up * g
    return FatTree(3, planes, n_leaf, nic_leaf, leaf_pod, leaf_local, n_spine, spine_pod, spine_local,
                   ls_leaf, ls_spine, 1, n_core, np.arange(n_core, dtype=np.int32), sc_spine, sc_core, pod // g)

"""Which GPUs each job gets: explicit ranks, or a placement policy over the GPUs still free.

A job takes whole NVLink domains (servers, or NVL72 racks) and, for what is left over, part of one (the partly
used domain that fits it best, else the next free one). Domains are grouped by the leaf switch their first NIC
hangs off (on a rail-optimised fabric every node of a scalable unit shares that leaf group):
- packed: the fewest leaf groups, as a topology-aware scheduler places a job under the lowest switch that holds
  it (Slurm's topology/tree plugin): the smallest leaf group with room for the whole job, else domains in order;
- scattered: one domain from each leaf group in turn, so the job spans as many leaves as it can;
- random: free domains drawn at random (numpy's default generator with the job's seed).
A job's ranks are its GPUs in ascending order (rank r of the job runs on the r-th of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.model import DeviceKind, Topology


@dataclass(frozen=True)
class Request:
    """One job's GPUs: `ranks` given, or `gpus` placed by `policy` (with `seed` for 'random')."""

    name: str
    gpus: int | None = None
    policy: str = "packed"
    seed: int = 0
    ranks: np.ndarray | None = None


def parse_ranks(text: str | Sequence[int], n_gpus: int, what: str) -> np.ndarray:
    """GPU ranks from '0-255,512-767' or a list of integers; each 0..n_gpus-1 and listed once."""
    if isinstance(text, str):
        out: list[int] = []
        for part in text.split(","):
            lo, dash, hi = part.strip().partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                raise FabricsimError(f"{what}: ranks '{text[:60]}' must be ranks and ranges such as '0-255,512-767'")
            a, b = int(lo), int(hi) if dash else int(lo)
            if b < a:
                raise FabricsimError(f"{what}: range '{part.strip()}' runs backwards: write it low-high")
            if b >= n_gpus:
                break
            out.extend(range(a, b + 1))
        else:
            return _checked(np.array(out, dtype=np.int64), n_gpus, what)
        raise FabricsimError(f"{what}: rank {b} is not a GPU of this cluster (ranks 0..{n_gpus - 1}): use lower ranks "
                             "or a bigger cluster")
    arr = np.asarray(list(text))
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise FabricsimError(f"{what}: ranks must be whole GPU ranks")
    return _checked(arr.astype(np.int64), n_gpus, what)


def _checked(ranks: np.ndarray, n_gpus: int, what: str) -> np.ndarray:
    if ranks.size == 0:
        raise FabricsimError(f"{what}: ranks lists no GPU")
    if ranks.min() < 0 or ranks.max() >= n_gpus:
        raise FabricsimError(f"{what}: rank {int(ranks.max() if ranks.max() >= n_gpus else ranks.min())} is not a GPU "
                             f"of this cluster (ranks 0..{n_gpus - 1})")
    if np.unique(ranks).size != ranks.size:
        raise FabricsimError(f"{what}: ranks lists a GPU twice: give each GPU once")
    return np.sort(ranks)


def leaf_group(topo: Topology) -> np.ndarray:
    """Per NVLink domain, the leaf switch its lowest-numbered GPU's NIC connects to (-1: no fabric); domains
    under one leaf group share their leaves."""
    n_domains = int(topo.gpu_domain.max()) + 1
    leaf_of_dev = np.full(topo.n_devices, -1, dtype=np.int64)
    to_leaf = (topo.dev_kind[topo.link_src] == DeviceKind.NIC) & (topo.dev_kind[topo.link_dst] == DeviceKind.FABRIC_SWITCH)
    leaf_of_dev[topo.link_src[to_leaf]] = topo.link_dst[to_leaf]
    first = np.full(n_domains, topo.n_gpus, dtype=np.int64)
    np.minimum.at(first, topo.gpu_domain, np.arange(topo.n_gpus))
    nic = topo.gpu_nic[first] if topo.gpu_nic is not None else np.full(n_domains, -1)
    return np.where(nic >= 0, leaf_of_dev[np.maximum(nic, 0)], -1)


def place(topo: Topology, requests: Sequence[Request]) -> list[np.ndarray]:
    """The GPU ranks of every request: explicit ones first (they must not overlap), then the placed ones in order."""
    free = np.ones(topo.n_gpus, dtype=bool)
    out: list[np.ndarray | None] = [None] * len(requests)
    owner = np.full(topo.n_gpus, -1, dtype=np.int64)
    for i, req in enumerate(requests):
        if req.ranks is None:
            continue
        taken = owner[req.ranks]
        if (taken >= 0).any():
            other = requests[int(taken[taken >= 0][0])].name
            raise FabricsimError(f"jobs '{other}' and '{req.name}' both list GPU rank {int(req.ranks[taken >= 0][0])}: "
                                 "give each GPU to one job")
        owner[req.ranks] = i
        free[req.ranks] = False
        out[i] = req.ranks
    groups = leaf_group(topo)
    for i, req in enumerate(requests):
        if req.ranks is None:
            gpus = _policy(topo, groups, free, req)
            free[gpus] = False
            out[i] = gpus
    return [np.asarray(o, dtype=np.int32) for o in out]


def _policy(topo: Topology, groups: np.ndarray, free: np.ndarray, req: Request) -> np.ndarray:
    size = int(topo.features.get("gpus_per_domain") or np.bincount(topo.gpu_domain).max())
    n = int(req.gpus)
    if n > int(free.sum()):
        raise FabricsimError(f"job '{req.name}' needs {n} GPUs but only {int(free.sum())} of the cluster's "
                             f"{topo.n_gpus} are free: shrink the jobs or use a bigger cluster")
    per_domain_free = np.bincount(topo.gpu_domain[free], minlength=groups.shape[0])
    per_domain = np.bincount(topo.gpu_domain, minlength=groups.shape[0])
    whole = np.flatnonzero((per_domain_free == per_domain) & (per_domain == size))
    need, rest = divmod(n, size)
    if need > whole.size:
        raise FabricsimError(f"job '{req.name}' needs {need} whole NVLink domains of {size} GPUs but {whole.size} are "
                             "free: shrink the job, free domains, or give its ranks explicitly")
    if req.policy == "packed":
        chosen = _packed(whole, groups, need + (rest > 0))[:need]
    elif req.policy == "scattered":
        chosen = _scattered(whole, groups, need)
    else:
        chosen = np.sort(np.random.default_rng(req.seed).choice(whole, size=need, replace=False))
    gpus = np.flatnonzero(free & np.isin(topo.gpu_domain, chosen))
    if rest:
        left = free.copy()
        left[gpus] = False
        gpus = np.concatenate([gpus, _part(topo, groups, left, rest, chosen, req)])
    return np.sort(gpus)


def _packed(whole: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """k free domains under the fewest leaf groups: the smallest group that holds them all, else in order."""
    g = groups[whole]
    ids, counts = np.unique(g, return_counts=True)
    fits = np.flatnonzero(counts >= k)
    if fits.size:
        best = ids[fits[np.argmin(counts[fits])]]
        return whole[g == best][:k]
    return whole[:k]


def _scattered(whole: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """k free domains taken one leaf group after another (round-robin over the groups, in order)."""
    g = groups[whole]
    order = np.lexsort((whole, g))
    g_sorted = g[order]
    first = np.concatenate([[0], np.flatnonzero(g_sorted[1:] != g_sorted[:-1]) + 1])
    turn = np.arange(order.size) - np.repeat(first, np.diff(np.append(first, order.size)))  # place within its group
    pick = order[np.lexsort((g_sorted, turn))][:k]
    return np.sort(whole[pick])


def _part(topo: Topology, groups: np.ndarray, free: np.ndarray, rest: int, chosen: np.ndarray, req: Request) -> np.ndarray:
    """`rest` GPUs from one domain: the partly used one with the least room that fits them, preferring the leaf
    group of the job's other domains; else the first free one."""
    room = np.bincount(topo.gpu_domain[free], minlength=groups.shape[0])
    fits = np.flatnonzero(room >= rest)
    if fits.size == 0:
        raise FabricsimError(f"job '{req.name}': no NVLink domain has {rest} free GPUs for the part of the job that does "
                             "not fill a whole domain: make its GPU count a multiple of the domain size, or free GPUs")
    near = np.isin(groups[fits], groups[chosen]) if chosen.size else np.ones(fits.size, dtype=bool)
    pick = fits[np.lexsort((fits, room[fits], ~near))[0]]
    return np.flatnonzero(free & (topo.gpu_domain == pick))[:rest]

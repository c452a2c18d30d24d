"""Small hand-built topologies and traffic for the engine tests (arrays assembled directly)."""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import StepTraffic
from fabricsim.topology.model import DeviceKind, Topology

NVLINK_BW = 25e9  # nvlink4: 25 GB/s per link per direction (hardware catalog)


def hand_topology(kinds: list[DeviceKind], edges: list[tuple[int, int, int]], gpus: list[int], *,
                  tech: str = "nvlink4", latency: float = 1e-7, name: str = "hand") -> Topology:
    """Devices of `kinds` on one node / NVLink domain, `edges` (a, b, physical link count) as link pairs."""
    n = len(kinds)
    kind = np.array(kinds, dtype=np.int8)
    part_names = {DeviceKind.GPU: "H100", DeviceKind.NVSWITCH: "nvswitch3"}
    parts = sorted(set(part_names[k] for k in kinds))
    src, dst, count = [], [], []
    for a, b, c in edges:
        src += [a, b]
        dst += [b, a]
        count += [c, c]
    count_a = np.array(count, dtype=np.int16)
    local = np.zeros(n, dtype=np.int32)
    for k in set(kinds):
        idx = [i for i in range(n) if kinds[i] == k]
        local[idx] = np.arange(len(idx))
    return Topology(
        name=name, dev_kind=kind, dev_node=np.zeros(n, np.int32), dev_domain=np.zeros(n, np.int32), dev_local=local,
        dev_level=np.zeros(n, np.int8), dev_pod=np.full(n, -1, np.int32),
        dev_part=np.array([parts.index(part_names[k]) for k in kinds], dtype=np.int16), dev_units=np.ones(n, np.int16),
        parts=parts, link_src=np.array(src, np.int32), link_dst=np.array(dst, np.int32),
        link_capacity=count_a * NVLINK_BW, link_latency=np.full(len(src), latency), link_tech=np.zeros(len(src), np.int16),
        link_count=count_a, techs=[tech], gpu_device=np.array(gpus, np.int32),
        gpu_nic=np.full(len(gpus), -1, np.int32), gpu_cpu=np.full(len(gpus), -1, np.int32),
        features={"fabric": None, "sharp": False, "gpudirect": True, "nvls": True, "rail_optimized": False,
                  "gpus_per_node": len(gpus), "gpus_per_domain": len(gpus), "nodes": 1},
    )


def gpu_ring(n: int, count: int = 1) -> Topology:
    """n GPUs joined in a ring by direct NVLinks (`count` links between neighbours)."""
    return hand_topology([DeviceKind.GPU] * n, [(i, (i + 1) % n, count) for i in range(n)] if n > 2 else [(0, 1, count)],
                         list(range(n)), name=f"ring{n}")


def star(n: int, count: int = 1) -> Topology:
    """n GPUs on one NVSwitch device, `count` links each."""
    return hand_topology([DeviceKind.GPU] * n + [DeviceKind.NVSWITCH], [(i, n, count) for i in range(n)], list(range(n)),
                         name=f"star{n}")


def step(src, dst, nbytes, repeat: int = 1, innet=()) -> StepTraffic:
    src = np.asarray(src, np.int32)
    return StepTraffic(src, np.asarray(dst, np.int32), np.broadcast_to(np.asarray(nbytes, np.float64), src.shape).copy(),
                       innet=tuple(innet), repeat=repeat)


def bfs_route_pairs(topo: Topology, src_ranks, dst_ranks, *, pxn=None, adaptive=False, p2p=False):
    """Shortest-path routing for hand-built topologies: one path per pair, lowest link index first.
    With `adaptive`, every shortest path of the pair, weighted equally; `p2p` changes nothing here."""
    from fabricsim.routing.model import PathKind, Routes

    paths, pair, weight = [], [], []
    for i, (s, d) in enumerate(zip(np.asarray(src_ranks).tolist(), np.asarray(dst_ranks).tolist())):
        found = _shortest(topo, int(topo.gpu_device[s]), int(topo.gpu_device[d]))
        found = found if adaptive else found[:1]
        for p in found:
            paths.append(p)
            pair.append(i)
            weight.append(1.0 / len(found))
    ptr = np.zeros(len(paths) + 1, np.int64)
    ptr[1:] = np.cumsum([len(p) for p in paths])
    links = np.array([lk for p in paths for lk in p], np.int32)
    return Routes(n_pairs=len(np.asarray(src_ranks)), path_pair=np.array(pair, np.int32), path_weight=np.array(weight),
                  path_ptr=ptr, links=links, path_latency=np.array([topo.link_latency[p].sum() for p in paths]),
                  path_kind=np.full(len(paths), PathKind.NVLINK, np.int8))


def _shortest(topo: Topology, a: int, b: int) -> list[list[int]]:
    """All shortest paths from device a to b (as link lists), in lexicographic link order."""
    frontier = [(a, [])]
    while frontier:
        done = [p for d, p in frontier if d == b]
        if done:
            return sorted(done)
        nxt = []
        for d, p in frontier:
            for lk in topo.links_from(d).tolist():
                t = int(topo.link_dst[lk])
                if t == b or topo.dev_kind[t] != DeviceKind.GPU:
                    nxt.append((t, p + [lk]))
        frontier = nxt
    raise AssertionError("disconnected")

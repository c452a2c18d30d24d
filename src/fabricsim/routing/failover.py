"""Which NICs a GPU pair's network bytes use when a GPU's own NIC is down: NCCL's documented reaction.

NCCL lists only NIC ports in the ACTIVE state (src/transport/net_ib/init.cc: `if (portAttr.state !=
IBV_PORT_ACTIVE) continue;`), so a dead NIC is not in its topology at all. A GPU then uses the NICs it reaches best
(src/graph/topo.cc ncclTopoGetLocalNet / ncclTopoGetLocal: the NICs of the highest path bandwidth, then the lowest
path type), channel c on the c-th of them modulo their number. On an NVLink node the best paths to the other NICs
are PXN paths (src/graph/paths.cc, the 'Update paths for NICs' loop: a GPU reaches NIC n through n's local GPU over
NVLink when that GPU is within PXB of n with GPUDirect and the GPU's own path to n would cross the CPU), so its
channels spread over every working NIC of the node, each reached through that NIC's GPU; without NVLink they cross
the host (PCIe through the CPU, staged in host memory: GPUDirect RDMA needs the NIC within PXB, ncclTopoCheckGdr).
A GPU receiving over the network takes its channels in on those NICs too: a point-to-point receive over PCIe through the
CPU (paths.cc adds PXN paths in the GPU -> NIC direction only), a ring or tree at the NIC's own GPU,
which forwards over NVLink (the graph search starts and ends channels at GPUs local to a NIC, src/graph/search.cc).

A GPU with several NIC ports of its own (nics_per_gpu) that loses one still reaches its other ports best (the same
PIX/PXB path, topo.cc ncclTopoGetLocal), so the lost port's share moves to them and the node's other NICs are used
only when all of the GPU's ports are down.

Here the channels of a pair are one transfer, so a spread is one path per working NIC, each with an equal share.
"""

from __future__ import annotations

import numpy as np

from fabricsim.routing.tables import Tables, nics_per_gpu
from fabricsim.topology.faults import Cut
from fabricsim.topology.model import Topology


def nic_legs(topo: Topology, tb: Tables, s: np.ndarray, d: np.ndarray, own_s: np.ndarray, own_d: np.ndarray,
             pxn: bool, p2p: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row, weight, source NIC, destination NIC) per leg of each (s, d) sub-flow of GPU ranks on different hosts,
    sub-flow i going from NIC port `own_s[i]` of GPU s[i] to port `own_d[i]` of GPU d[i] (`route._net`: a GPU with
    several ports sends on each of them).

    One leg per sub-flow on its own ports while they work. A receiver whose port is down takes one leg per working
    port of its own (NCCL's local NICs of a GPU are those it reaches best, topo.cc ncclTopoGetLocal: its other ports),
    or, where none of its ports works, per working NIC of its node; a sender whose port is down likewise, unless PXN
    (`pxn`: rail-optimised) relays it to the receiving NIC's rail, and so does a ring's or tree's sender whose node has
    lost the NIC on that rail (NCCL's search spreads such a node's channels over the NICs it has; a point-to-point
    send falls back to its own NIC). Each leg carries an equal share of its sub-flow."""
    own_s, own_d = own_s.astype(np.int64), own_d.astype(np.int64)
    dead_s, dead_d = ~tb.nic_alive[own_s], ~tb.nic_alive[own_d]
    rows = np.arange(s.size)
    if not (dead_s.any() or dead_d.any() or (pxn and (tb.rail_gpu < 0).any())):
        return rows, np.ones(s.size), own_s, own_d
    row, weight, dst = _spread(topo, tb, rows, np.ones(s.size), own_d, dead_d, d)
    own = own_s[row]
    need = dead_s[row]
    if pxn and tb.n_rails:
        rail_own, rail_dst = topo.dev_local[own], topo.dev_local[dst]
        relay = tb.rail_gpu[topo.gpu_node[s[row]].astype(np.int64) * tb.n_rails + rail_dst]
        cross = rail_own != rail_dst
        need = (need & ~(cross & (relay >= 0))) | (cross & (relay < 0) & ~p2p)
    sub, share, src = _spread(topo, tb, np.arange(row.size), weight, own, need, s[row])
    return row[sub], share, src, dst[sub]


def _spread(topo: Topology, tb: Tables, row: np.ndarray, weight: np.ndarray, nics: np.ndarray, spread: np.ndarray,
            gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose `spread` is set become one row per working NIC port of their GPU's own, or where none of them works,
    per working NIC of the GPU's node (weight shared evenly); the others keep their NIC: (row, weight, NIC) per row
    out."""
    if not spread.any():
        return row, weight, nics
    n = nics_per_gpu(topo)
    ports = topo.gpu_nic[gpus].astype(np.int64)[:, None] + np.arange(n)  # each row's GPU's own ports
    up = tb.nic_alive[ports]
    mine = up.sum(axis=1)
    node = topo.gpu_node[gpus].astype(np.int64)
    k = np.where(spread, np.where(mine > 0, mine, tb.node_nic_ptr[node + 1] - tb.node_nic_ptr[node]), 1)
    if (k == 0).any():
        raise Cut(f"node{int(node[np.argmax(k == 0)])} has no working NIC, so its GPUs cannot reach other "
                  "nodes: fail fewer NICs or NIC cables there")
    out = np.repeat(np.arange(row.size), k)
    i = np.arange(out.size) - np.repeat(np.cumsum(k) - k, k)
    working = np.take_along_axis(ports, np.argsort(~up, axis=1, kind="stable"), axis=1)  # own working ports first
    at_node = tb.node_nics[np.minimum(tb.node_nic_ptr[node[out]] + i % k[out], tb.node_nics.size - 1)]
    spread_out = spread[out]
    nic = np.where(spread_out & (mine[out] > 0), working[out, np.minimum(i, n - 1)],
                   np.where(spread_out, at_node, nics[out]))
    return row[out], weight[out] / k[out], nic.astype(np.int64)

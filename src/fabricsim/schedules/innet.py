"""Algorithms that reduce inside switches: NVLS (NVLink SHARP, in the NVSwitch) and CollNet
(IB SHARP, in the InfiniBand switches), after NCCL's all_reduce.h / transport/nvls.cc."""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import ChunkMap, InNetworkOp, InNetworkOps, Op, Schedule, make_step
from fabricsim.schedules.pipeline import forest_pieces, pipelined_forest
from fabricsim.schedules.structure import Structure
from fabricsim.schedules.trees import dtree_parents, node_depth

_NONE = np.zeros(0, dtype=np.int32)


def _ranks(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int32).ravel()


def _innet_step(ops: list[InNetworkOp] | InNetworkOps):
    return make_step(_NONE, _NONE, _NONE, _NONE, Op.COPY, innet=ops)


def _batch(ends: np.ndarray, n_inputs: int, n_outputs: int, chunk: np.ndarray, op: Op) -> InNetworkOps:
    """NVLS operations, one per row of `ends` (its `n_inputs` inputs, then its `n_outputs` outputs)."""
    n = ends.shape[0]
    return InNetworkOps(np.full(n, "nvls"), ends.astype(np.int32).ravel(), np.full(n, n_inputs, np.int64),
                        np.full(n, n_outputs, np.int64), chunk.astype(np.int64), np.full(n, op, np.int8))


def nvls(collective: str, n: int) -> Schedule:
    """Inside one NVLink domain; rank i is head for chunk i (1/n of the data).
    AllReduce: head i's multimem.ld_reduce pulls chunk i from every rank through the switch and
    gets the sum back, then its multimem.st multicasts the sum to all (NCCL all_reduce.h runNvls;
    maintainer, nccl#828): two steps, so each GPU moves S + S/n each way. ReduceScatter: ld_reduce
    to the owner only. AllGather: each owner's multicast store to all."""
    everyone = _ranks(np.arange(n))
    if collective == "all_reduce":
        reduce = [InNetworkOp("nvls", everyone, _ranks([i]), i) for i in range(n)]
        bcast = [InNetworkOp("nvls", _ranks([i]), everyone, i, Op.COPY) for i in range(n)]
        return Schedule(collective, "nvls", n, n, (_innet_step(reduce), _innet_step(bcast)))
    if collective == "reduce_scatter":
        ops = [InNetworkOp("nvls", everyone, _ranks([i]), i) for i in range(n)]
    else:
        ops = [InNetworkOp("nvls", _ranks([i]), everyone, i, Op.COPY) for i in range(n)]
    return Schedule(collective, "nvls", n, n, (_innet_step(ops),))


def nvls_tree(s: Structure, pipeline: int, heads: int = 0) -> Schedule:
    """NVLS inside each domain + double binary tree across domains (AllReduce), with `heads` head GPUs per domain
    (NCCL's NVLS graph channels, at most NCCL_MAX_NVLS_ARITY = 32: NCCL v2.30.7 src/include/device.h:213,
    src/graph/search.cc:1127; 0: every local rank), spread evenly over the domain's local ranks. Head k reduces
    part k: ld_reduce of part k to it inside the domain, tree allreduce of part k among the heads k of all domains
    over their NICs (half on each tree, pipelined), multicast of part k back to the domain."""
    ppn, nn = s.ranks_per_node, s.nnodes
    heads = ppn if heads <= 0 else min(heads, ppn)
    local = np.arange(heads) * ppn // heads  # the local rank of each head
    nch = 2 * heads  # channel = (part k, tree h)
    trees = dtree_parents(nn)
    depths = [node_depth(t) for t in trees]
    x = np.arange(nn)
    child, parent, depth, chan = [], [], [], []
    for i in range(heads):
        for h in (0, 1):
            has = trees[h] >= 0
            child.append(x[has] * ppn + local[i])
            parent.append(trees[h][has] * ppn + local[i])
            depth.append(depths[h][has])
            chan.append(np.full(int(has.sum()), 2 * i + h))
    cat = np.concatenate
    tsteps, M = pipelined_forest(cat(child), cat(parent), cat(depth), cat(chan), pipeline, up=True, down=True)
    # one gather (the domain's ranks -> its head) and one scatter (head -> the domain) per (channel, pipeline chunk,
    # domain), in that order; channel ch = (part ch // 2, tree ch % 2) has its head at local rank local[ch // 2]
    ch, j, d = (a.ravel() for a in np.meshgrid(np.arange(nch), np.arange(pipeline), np.arange(nn), indexing="ij"))
    members = d[:, None] * ppn + np.arange(ppn)
    head = (d * ppn + local[ch // 2])[:, None]
    gather = _batch(np.hstack([members, head]), ppn, 1, ch * M + j, Op.REDUCE)
    scatter = _batch(np.hstack([head, members]), 1, ppn, ch * M + j, Op.COPY)
    return Schedule(
        "all_reduce", "nvls_tree", s.nranks, nch * M, (_innet_step(gather), *tsteps, _innet_step(scatter)),
        channels=nch, meta={"pipeline": pipeline, "ranks_per_node": ppn, "heads": heads},
        chunkmap=ChunkMap(split=(nch, pipeline), piece=forest_pieces(nch, M, pipeline)),
    )


COLLNET_MAX_HEADS = 8  # NCCL_MAX_DIRECT_ARITY 7 + self (src/include/device.h)


def collnet_direct(s: Structure) -> Schedule:
    """Every rank scatters part h to local head h (h < min(ppn, 8)) over NVLink, reducing;
    SHARP reduces part h across the heads h of all nodes and returns it to them; heads then
    send the result back to every local rank."""
    ppn, nn = s.ranks_per_node, s.nnodes
    nh = min(ppn, COLLNET_MAX_HEADS)
    r = np.arange(s.nranks)
    node, local = np.repeat(r // ppn, nh), np.repeat(r % ppn, nh)
    h = np.tile(np.arange(nh), s.nranks)
    keep = local != h
    member, head, part = (node * ppn + local)[keep], (node * ppn + h)[keep], h[keep]
    ops = [InNetworkOp("sharp", _ranks(np.arange(nn) * ppn + k), _ranks(np.arange(nn) * ppn + k), k) for k in range(nh)]
    steps = [_innet_step(ops)]
    if member.size:
        steps = [make_step(member, head, part, part, Op.REDUCE), *steps, make_step(head, member, part, part, Op.COPY)]
    return Schedule("all_reduce", "collnet_direct", s.nranks, nh, tuple(steps), meta={"heads": nh})


def collnet_chain(s: Structure, pipeline: int, channels: int = 1) -> Schedule:
    """Per channel c: a chain through every local rank starting at head local rank c (mod ppn) reduces up
    to the head, SHARP reduces across the heads of all nodes and returns the sum, and the chain broadcasts
    it back down; pipelined over `pipeline` chunks per channel. NCCL's CollNetChain graph is a chain per
    channel whose head is the GPU next to that channel's NIC (src/graph/search.cc, tree pattern; device
    loop all_reduce.h runCollNetChain), so its channels leave each node on different NICs."""
    ppn, nn = s.ranks_per_node, s.nnodes
    nch = max(1, int(channels))
    k = np.arange(1, ppn)
    child, parent, depth, chan, innet = [], [], [], [], []
    for c in range(nch):
        base = (np.arange(nn) * ppn)[:, None]
        child.append((base + (c + k) % ppn).ravel())
        parent.append((base + (c + k - 1) % ppn).ravel())
        depth.append(np.tile(k, nn))
        chan.append(np.full(nn * (ppn - 1), c))
        innet.append((c, _ranks(np.arange(nn) * ppn + c % ppn)))
    cat = np.concatenate
    steps, M = pipelined_forest(cat(child).astype(np.int64), cat(parent).astype(np.int64), cat(depth), cat(chan),
                                pipeline, up=True, down=True, innet=innet, kind="sharp")
    return Schedule(
        "all_reduce", "collnet_chain", s.nranks, nch * M, steps, channels=nch, meta={"pipeline": pipeline},
        chunkmap=ChunkMap(split=(nch, pipeline), piece=forest_pieces(nch, M, pipeline)),
    )

"""NCCL's double binary tree AllReduce (src/graph/trees.cc, connect.cc).

Across nodes: tree 0 is ncclGetBtree over node indices; tree 1 mirrors it (node x ->
nNodes-1-x) when nNodes is even, or shifts it by one when odd (ncclGetDtree). Inside a node
the ranks form a chain hanging below the node's head rank (NCCL_TOPO_PATTERN_TREE: the
head links to the parent and children nodes); channel k heads its chains at local rank
k mod ranks-per-node, or at `heads[k mod len(heads)]` where the caller knows the GPU NCCL's tree search starts
the channel at (GPUs sharing a NIC: one head per NIC, tuner.select.tree_heads), so channels leave each node on
different GPUs and NICs. Every channel runs both trees, each on half its data: NCCL duplicates each channel of its
tree search into channel c (tree 0) and channel c + nChannels (tree 1), both connected through the same GPUs and
so the same NIC (src/graph/connect.cc connectTrees: channel0 and channel1 take one treeToParent / treeToChild,
v2.28.9-1 :147-164), so every NIC carries its share of both trees: a node that is an inner node of one tree and a
leaf of the other spreads both over all its NICs. With `trees=1` every channel runs tree 0 alone, as a communicator
bounded to at most its search channels does (it has no duplicates to put tree 1 on). Each tree reduces up and
broadcasts down, pipelined over `pipeline` chunks (ncclPatternTreeUpDown).
"""

from __future__ import annotations

import numpy as np

from fabricsim.schedules.model import ChunkMap, Schedule
from fabricsim.schedules.pipeline import forest_pieces, pipelined_forest
from fabricsim.schedules.structure import Structure


def btree_parent(nranks: int) -> np.ndarray:
    """Parent of every rank in ncclGetBtree (-1 for the root, rank 0)."""
    r = np.arange(nranks, dtype=np.int64)
    bit = r & -r  # lowest set bit
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= nranks, r ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(nnodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents of the two complementary trees of ncclGetDtree."""
    t0 = btree_parent(nnodes)
    x = np.arange(nnodes)
    if nnodes % 2 == 1:  # shift by one
        p = t0[(x - 1) % nnodes]
        t1 = np.where(p < 0, -1, (p + 1) % nnodes)
    else:  # mirror
        p = t0[nnodes - 1 - x]
        t1 = np.where(p < 0, -1, nnodes - 1 - p)
    return t0, t1


def node_depth(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a tree given by parents (root depth 0)."""
    depth = np.zeros(parent.size, dtype=np.int64)
    cur = parent.copy()
    while np.any(cur >= 0):
        depth += cur >= 0
        cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
    return depth


def rank_tree(structure: Structure, node_parent: np.ndarray, offset: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(child, parent, child depth) edges of the rank tree: a chain inside each node starting at
    local rank `offset` (the node's head), the node tree among the heads. Channels use different
    offsets so their inter-node edges leave on different GPUs and NICs, as NCCL's tree channels
    follow its ring channels (connect.cc ncclTopoPreset)."""
    n, rpn = structure.nranks, structure.ranks_per_node
    r = np.arange(n, dtype=np.int64)
    node, pos = r // rpn, r % rpn  # pos: place in the node's chain
    size = np.minimum(rpn, n - np.arange(structure.nnodes) * rpn)  # ranks per node (the last may be partial)
    rank = node * rpn + (pos + offset) % size[node]
    ndepth = node_depth(node_parent)
    up = node_parent[node]
    parent = np.where(pos > 0, node * rpn + (pos - 1 + offset) % size[node],
                      np.where(up >= 0, up * rpn + offset % size[np.maximum(up, 0)], -1))
    depth = ndepth[node] + pos
    has = parent >= 0
    return rank[has], parent[has], depth[has]


def tree(structure: Structure, channels: int, pipeline: int, heads: tuple[int, ...] = (), trees: int = 2) -> Schedule:
    """Double-binary-tree AllReduce on `channels` channels, each running tree 0 on one half of its data and tree 1
    on the other (NCCL's channel c and its duplicate c + nChannels, see above), or with `trees=1` tree 0 on all of
    it: `trees` x channels chunk groups. `heads`: the local rank heading each channel's chains (channel c:
    heads[c mod len(heads)]); empty: local rank c."""
    nch = max(int(channels), 1)
    parents = dtree_parents(structure.nnodes)
    offsets = [heads[ch % len(heads)] if heads else ch for ch in range(nch)]
    groups = trees * nch  # group trees * c + t: channel c's part on tree t
    edges = [rank_tree(structure, parents[g % trees], offsets[g // trees]) for g in range(groups)]
    child, parent, depth = (np.concatenate([e[i] for e in edges]) for i in range(3))
    chan = np.concatenate([np.full(e[0].size, g) for g, e in enumerate(edges)])
    steps, M = pipelined_forest(child, parent, depth, chan, pipeline, up=True, down=True)
    return Schedule(
        collective="all_reduce",
        algorithm="tree",
        nranks=structure.nranks,
        nchunks=groups * M,
        steps=steps,
        channels=nch,
        meta={"pipeline": pipeline, "ranks_per_node": structure.ranks_per_node, "depth": int(depth.max(initial=0))},
        chunkmap=ChunkMap(split=(groups, pipeline), piece=forest_pieces(groups, M, pipeline)),
    )

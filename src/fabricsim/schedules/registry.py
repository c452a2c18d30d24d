"""Which algorithms exist for which collective, what each needs, and the cached builder."""

from __future__ import annotations

from functools import lru_cache

from fabricsim.errors import FabricsimError
from fabricsim.schedules import alltoall, hierarchical, innet, logstep, ring
from fabricsim.schedules.trees import tree as tree_schedule
from fabricsim.schedules.model import Schedule
from fabricsim.schedules.structure import Structure, flat
from fabricsim.vocab import ALGORITHMS_BY_COLLECTIVE, COLLECTIVES

ALGORITHMS: dict[str, tuple[str, ...]] = ALGORITHMS_BY_COLLECTIVE  # collective -> what fabricsim schedules (vocab)

# All-to-all moves a distinct block between every pair: n(n-1) transfers. Up to this many ranks they are all
# listed (and timed flow by flow); beyond, direct and PXN list one node's blocks and rotate them node by node
# (Schedule.rotations), and pairwise (n-1 distinct steps) is not offered.
MAX_ALLTOALL_RANKS = 1024  # measured: 1,024 ranks time in ~1 s listed in full, 2,048 in minutes
MAX_ROTATION_TRANSFERS = 1 << 22  # one node's direct blocks (ranks per node x ranks): 8 x 131,072 fit, 72 x 131,072 do not

_OTHER_HINT = {
    "tree": "tree implements all_reduce only (NCCL's double binary tree)",
    "rabenseifner": "rabenseifner implements all_reduce only",
    "hierarchical": "hierarchical implements all_reduce only",
    "nvls_tree": "nvls_tree implements all_reduce only",
    "collnet_direct": "collnet_direct implements all_reduce only",
    "collnet_chain": "collnet_chain implements all_reduce only",
    "bruck": "bruck implements all_gather and reduce_scatter, not all_reduce (use rabenseifner or recursive_doubling)",
    "pat": "pat implements all_gather and reduce_scatter, not all_reduce (use rabenseifner or ring)",
}


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise FabricsimError(message)


def check(collective: str, algorithm: str, s: Structure) -> None:
    """Raise FabricsimError naming what is missing when `algorithm` cannot run `collective` on `s`."""
    if collective not in ALGORITHMS:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(COLLECTIVES)}")
    known = ALGORITHMS[collective]
    if algorithm not in known:
        why = _OTHER_HINT.get(algorithm, f"unknown algorithm '{algorithm}' for {collective}")
        raise FabricsimError(f"{why}; algorithms for {collective}: {', '.join(known)}")
    n, rpn, nodes = s.nranks, s.ranks_per_node, s.nnodes
    shape = f"{n} ranks, {rpn} per node"
    if algorithm in ("hierarchical", "nvls_tree", "collnet_direct", "collnet_chain", "pxn"):
        _need(s.uniform, f"{algorithm} needs equal nodes but {shape} does not divide evenly: pick ranks_per_node dividing {n}")
    if algorithm in ("hierarchical", "nvls_tree", "pxn"):
        _need(nodes >= 2, f"{algorithm} needs at least two nodes but {shape} is one node: use "
              + ("nvls or ring" if algorithm != "pxn" else "direct"))
    if algorithm in ("nvls", "nvls_tree"):
        _need(s.has_nvswitch, f"{algorithm} needs NVSwitch (NVLink SHARP / NVLS) and the structure has none: "
              "use ring or tree, or a structure with has_nvswitch=True")
    if algorithm == "nvls":
        _need(nodes == 1, f"nvls reduces inside one NVLink domain but {shape} spans {nodes} nodes: "
              "use nvls_tree or collnet_direct (all_reduce) or ring")
    if collective == "alltoall" and n > MAX_ALLTOALL_RANKS:
        _need(algorithm != "pairwise", f"pairwise all-to-all runs {n - 1} distinct steps and fabricsim times it up to "
              f"{MAX_ALLTOALL_RANKS} ranks ({shape}): use direct or pxn")
        _need(n % rpn == 0, f"all-to-all over more than {MAX_ALLTOALL_RANKS} ranks is timed node by node and needs equal "
              f"nodes, but {shape} does not divide evenly: pick ranks_per_node dividing {n}")
        _need(algorithm != "direct" or n == rpn or rpn * n <= MAX_ROTATION_TRANSFERS,
              f"direct all-to-all over {shape} lists {rpn * n:,} transfers for one node, more than fabricsim times "
              f"({MAX_ROTATION_TRANSFERS:,}): use pxn, which sends each node's blocks rail by rail")
    if algorithm in ("collnet_direct", "collnet_chain"):
        _need(s.has_sharp, f"{algorithm} needs IB SHARP in the network and the structure has none: "
              "use ring, tree or hierarchical, or a structure with has_sharp=True")


def applicable(collective: str, structure: Structure) -> list[str]:
    """Algorithms that can run `collective` on `structure`, in ALGORITHMS order."""
    if collective not in ALGORITHMS:
        raise FabricsimError(f"unknown collective '{collective}': use one of {', '.join(COLLECTIVES)}")
    out = []
    for algorithm in ALGORITHMS[collective]:
        try:
            check(collective, algorithm, structure)
        except FabricsimError:
            continue
        out.append(algorithm)
    return out


def build_schedule(
    collective: str,
    algorithm: str,
    nranks: int,
    *,
    structure: Structure | None = None,
    root: int = 0,
    channels: int = 1,
    pipeline: int = 1,
    rings=(),
    heads: int = 0,
    tree_heads=(),
    trees: int = 2,
) -> Schedule:
    """The schedule of `algorithm` for `collective` over `nranks` ranks (cached by arguments).
    `structure` defaults to one rank per node without in-network reduction; `channels` applies
    to ring (k rings) and tree (rounded up to even); `pipeline` cuts ring, chain and tree
    algorithms into that many sequential (ring) or pipelined (trees, chains) chunks. `rings`:
    for ring algorithms (broadcast and reduce included), the order of one node's local ranks in
    each channel's ring (channel c uses rings[c % len(rings)]), e.g. the rings NCCL's search finds
    on a DGX-1 cube-mesh; empty: ascending and descending rings. `heads`: NVLSTree's head GPUs per domain
    (NCCL's NVLS graph channels; 0: every local rank). `tree_heads`: for tree, the local rank heading each
    channel's chains (channel c uses tree_heads[c % len(tree_heads)]; empty: local rank c). `trees`: for tree, 2
    (the double binary tree) or 1 (tree 0 alone, a communicator bounded to its search channels)."""
    try:
        rings = tuple(tuple(int(r) for r in order) for order in rings)
    except (TypeError, ValueError):
        raise FabricsimError(f"rings={rings!r} must be a sequence of rank orders (sequences of local ranks), "
                             "one per channel") from None
    try:
        tree_heads = tuple(int(h) for h in tree_heads)
    except (TypeError, ValueError):
        raise FabricsimError(f"tree_heads={tree_heads!r} must be a sequence of local ranks, one per channel") from None
    if trees not in (1, 2):
        raise FabricsimError(f"trees={trees!r}: NCCL's tree is 2 binary trees (or tree 0 alone, 1)")
    return _build(collective, algorithm, nranks, structure, root, channels, pipeline, rings, int(heads), tree_heads,
                  trees)


def built_channels(algorithm: str, channels: int, trees: int = 2) -> int | None:
    """The channels of the schedule `build_schedule` makes for `algorithm` with `channels` (and `trees`), where it
    follows them (ring, with the chains of broadcast and reduce, and tree, each of whose channels runs both trees
    or tree 0 alone: `channels`), so a caller knows them before building it; None where the builder fixes its own
    (NVLSTree: 2 per local rank) or takes none."""
    if algorithm in ("ring", "tree"):
        return channels
    return None


@lru_cache(maxsize=256)
def _build(collective: str, algorithm: str, nranks: int, structure: Structure | None, root: int, channels: int,
           pipeline: int, rings: tuple[tuple[int, ...], ...], heads: int = 0,
           tree_heads: tuple[int, ...] = (), trees: int = 2) -> Schedule:
    if nranks < 1:
        raise FabricsimError(f"a collective needs at least one rank, got nranks={nranks}")
    if channels < 1 or pipeline < 1:
        raise FabricsimError(f"channels and pipeline must be at least 1, got channels={channels}, pipeline={pipeline}")
    s = structure if structure is not None else flat(nranks)
    if s.nranks != nranks:
        raise FabricsimError(f"the structure describes {s.nranks} ranks but nranks={nranks}: build it for {nranks}")
    if rings:
        ring.check_rings(rings, s.ranks_per_node)
    if any(not 0 <= h < s.ranks_per_node for h in tree_heads):
        raise FabricsimError(f"tree_heads {list(tree_heads)} must be local ranks 0..{s.ranks_per_node - 1}: "
                             "give the local rank heading each channel")
    check(collective, algorithm, s)
    if collective in ("broadcast", "reduce"):
        _need(0 <= root < nranks, f"root {root} is outside ranks 0..{nranks - 1}: pick a root among the ranks")
        return ring.chain(collective, nranks, root, channels, pipeline, s.ranks_per_node, rings)
    if algorithm == "ring":
        return ring.ring(collective, nranks, channels, pipeline, s.ranks_per_node, rings)
    if algorithm == "tree":
        return tree_schedule(s, channels, pipeline, tree_heads, trees)
    if algorithm == "rabenseifner":
        return logstep.rabenseifner(nranks)
    if algorithm == "recursive_doubling":
        return logstep.recursive_doubling(collective, nranks)
    if algorithm == "bruck":
        return logstep.bruck(collective, nranks)
    if algorithm == "pat":
        return logstep.pat(collective, nranks)
    if algorithm == "hierarchical":
        return hierarchical.hierarchical(s)
    if algorithm == "nvls":
        return innet.nvls(collective, nranks)
    if algorithm == "nvls_tree":
        return innet.nvls_tree(s, pipeline, heads)
    if algorithm == "collnet_direct":
        return innet.collnet_direct(s)
    if algorithm == "collnet_chain":
        return innet.collnet_chain(s, pipeline, channels)
    if collective == "sendrecv":
        return alltoall.sendrecv(nranks)
    rotated = nranks > MAX_ALLTOALL_RANKS
    if algorithm == "pxn":
        return alltoall.pxn(s, rotated)
    if algorithm == "direct":
        return alltoall.direct(nranks, s.ranks_per_node if rotated else None)
    return alltoall.pairwise(nranks)


build_schedule.cache_clear = _build.cache_clear  # the cache lives on the normalised call

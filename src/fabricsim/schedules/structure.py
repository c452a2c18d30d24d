"""What a schedule needs to know about the machine: who shares an NVLink domain, and
whether the switches can reduce (NVLS inside NVSwitch, SHARP inside InfiniBand)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError


@dataclass(frozen=True)
class Structure:
    """Rank r lives in node (NVLink domain) r // ranks_per_node; the last node may be partial."""

    nranks: int
    ranks_per_node: int = 1
    has_nvswitch: bool = False  # NVLS (NVLink SHARP) possible inside a node
    has_sharp: bool = False  # IB SHARP (CollNet) possible across nodes

    def __post_init__(self) -> None:
        if self.nranks < 1:
            raise FabricsimError(f"a structure needs at least one rank, got {self.nranks}")
        if self.ranks_per_node < 1:
            raise FabricsimError(f"ranks_per_node must be at least 1, got {self.ranks_per_node}")

    @property
    def nnodes(self) -> int:
        return -(-self.nranks // self.ranks_per_node)

    @property
    def uniform(self) -> bool:
        """Every node holds the same number of ranks."""
        return self.nranks % self.ranks_per_node == 0


def flat(nranks: int) -> Structure:
    """One rank per node, no in-network reduction: what an algorithm assumes without a structure."""
    return Structure(nranks=nranks, ranks_per_node=1)


def structure_from_topology(topo, ranks=None) -> Structure:
    """The Structure of GPU `ranks` (default: all) of a built `fabricsim.topology.model.Topology`: ranks
    grouped by NVLink domain, in order. NVLS needs several ranks in a domain, SHARP several domains. Kept in the
    topology's store of structural data by the rank list: the tuner asks once per candidate."""
    arr = None if ranks is None else np.asarray(ranks)
    derive = getattr(topo, "derive_structure", None)  # anything with gpu_domain and features describes ranks too
    if derive is None:
        return _structure(topo, arr)
    return derive(("structure", None if arr is None else (arr.dtype.str, arr.shape, arr.tobytes())),
                  lambda: _structure(topo, arr))


def _structure(topo, ranks: np.ndarray | None) -> Structure:
    ranks = np.arange(topo.n_gpus) if ranks is None else ranks
    if ranks.size == 0:
        raise FabricsimError(f"topology '{topo.name}' has no GPUs: build it with at least one GPU")
    domain = np.asarray(topo.gpu_domain)[ranks]
    change = np.flatnonzero(np.diff(domain)) + 1
    sizes = np.diff(np.concatenate([[0], change, [len(ranks)]]))
    distinct = np.unique(domain, return_counts=True)[0]  # with counts: plain np.unique imports numpy.ma (~10 ms)
    if len(distinct) != len(sizes) or not np.all(sizes == sizes[0]):
        raise FabricsimError(
            f"topology '{topo.name}': the ranks must fill their NVLink domains evenly and in order (the same number "
            "of GPUs from each domain, domain by domain): number ranks domain by domain"
        )
    features = topo.features or {}
    nvls = bool(features.get("nvls", False)) and int(sizes[0]) > 1
    if nvls and getattr(topo, "link_origin", None) is not None:  # links failed: NVLS needs every GPU on its NVSwitch
        nvls = bool(_on_nvswitch(topo)[ranks].all())
    return Structure(
        nranks=len(ranks),
        ranks_per_node=int(sizes[0]),
        has_nvswitch=nvls,
        has_sharp=bool(features.get("sharp", False)) and len(sizes) > 1,
    )


def _on_nvswitch(topo) -> np.ndarray:
    """Per GPU rank, whether it has a link to an NVSwitch (kept in the topology's store of structural data)."""
    def compute() -> np.ndarray:
        from fabricsim.topology.model import DeviceKind

        to_switch = topo.dev_kind[topo.link_dst] == DeviceKind.NVSWITCH
        return np.isin(topo.gpu_device, topo.link_src[to_switch])

    return topo.derive_structure(("on_nvswitch",), compute)

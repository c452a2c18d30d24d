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


def structure_from_topology(topo) -> Structure:
    """The Structure of a built `fabricsim.topology.model.Topology` (NVLink domains as nodes)."""
    n = topo.n_gpus
    if n == 0:
        raise FabricsimError(f"topology '{topo.name}' has no GPUs: build it with at least one GPU")
    domain = np.asarray(topo.gpu_domain)
    _, first, inverse = np.unique(domain, return_index=True, return_inverse=True)
    label = np.argsort(np.argsort(first))[inverse]  # domains numbered in order of their first rank
    rpn = int(np.count_nonzero(label == 0))
    if not np.array_equal(label, np.arange(n) // rpn):
        raise FabricsimError(
            f"topology '{topo.name}': GPU ranks are not grouped into equal NVLink domains of consecutive ranks "
            f"(the first domain has {rpn}); number ranks domain by domain so rank r is in domain r // {rpn}"
        )
    features = topo.features or {}
    return Structure(
        nranks=n,
        ranks_per_node=rpn,
        has_nvswitch=bool(features.get("nvls", False)),
        has_sharp=bool(features.get("sharp", False)),
    )

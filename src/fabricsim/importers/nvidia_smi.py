"""`nvidia-smi topo -m` (or `--matrix`): the GPU / NIC connection matrix, its legend and the NIC legend.

Cells are nvidia-smi's legend words: X (self), NV# (a bonded set of # NVLinks), PIX, PXB, PHB, NODE, SYS
(SOC in drivers before 384); newer drivers label NICs NIC0.. and name them in a 'NIC Legend', older ones
print the RDMA device names (mlx5_0) as column labels. A GPU row ends with its CPU affinity, NUMA
affinity and (newer drivers) GPU NUMA ID. NV# between every pair with more links in all than any GPU has
(18 on H100 / B200, the catalog's most) can only be an NVSwitch fabric: each GPU's # links go to the
switches, not to each peer.
"""

from __future__ import annotations

import re

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import PATH_TYPES, Gpu, Machine, Nic

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NV = re.compile(r"^NV(\d+)$")
_GPU = re.compile(r"^GPU(\d+)$")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_ALIASES = {"SOC": "SYS"}  # drivers before 384 called the inter-socket path SOC
_TAIL = ("CPU", "NUMA", "GPU")  # first words of the CPU Affinity / NUMA Affinity / GPU NUMA ID columns


def max_links_per_gpu() -> int:
    """The most NVLinks any catalog GPU has (18: H100, B200, GB200)."""
    return max(g.scaleup_links for g in hardware.GPUS.values())


def _header(lines: list[str]) -> tuple[int, list[str]]:
    for i, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0":
            cols = []
            for t in tokens:
                if t in _TAIL:
                    break
                cols.append(t)
            return i, cols
    raise FabricsimError("no matrix header line starting with GPU0: give the complete output of nvidia-smi topo -m")


def _cell(token: str, line_no: int, line: str) -> str:
    token = _ALIASES.get(token, token)
    if token == "X" or token in PATH_TYPES or _NV.match(token):
        return token
    raise FabricsimError(f"line {line_no}: '{token}' is not an nvidia-smi topo -m cell (X, NV#, PIX, PXB, PHB, NODE, "
                         f"SYS): '{line.strip()[:80]}'; give the unedited output")


def parse(text: str, source: str) -> Machine:
    """The node a `nvidia-smi topo -m` output describes."""
    lines = [_ANSI.sub("", raw).rstrip("\n") for raw in text.splitlines()]
    head, cols = _header(lines)
    n_cols = len(cols)
    gpu_cols = [c for c in cols if _GPU.match(c)]
    nic_cols = [c for c in cols if not _GPU.match(c)]
    if [int(_GPU.match(c).group(1)) for c in gpu_cols] != list(range(len(gpu_cols))):
        raise FabricsimError(f"line {head + 1}: GPU columns {' '.join(gpu_cols)} are not GPU0, GPU1, ... in order: "
                             "give the unedited output")
    legend = {}
    for line in lines:
        if (m := _NIC_LEGEND.match(line)):
            legend[m.group(1)] = m.group(2)
    rows: dict[str, list[str]] = {}
    numa: dict[int, int | None] = {}
    for i in range(head + 1, len(lines)):
        line = lines[i]
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] in ("Legend:", "NIC", "X"):
            break
        label = tokens[0]
        if label not in cols:
            break
        cells = tokens[1:1 + n_cols]
        if len(cells) < n_cols:
            raise FabricsimError(f"line {i + 1}: row {label} has {len(cells)} cells for {n_cols} columns: "
                                 f"'{line.strip()[:80]}'; give the unedited output")
        rows[label] = [_cell(c, i + 1, line) for c in cells]
        if _GPU.match(label):
            tail = tokens[1 + n_cols:]
            numa[int(label[3:])] = int(tail[1]) if len(tail) >= 2 and tail[1].isdigit() else None
    missing = [c for c in gpu_cols if c not in rows]
    if missing:
        raise FabricsimError(f"the matrix has no row for {', '.join(missing)}: give the complete output of "
                             "nvidia-smi topo -m")
    return _machine(source, cols, gpu_cols, nic_cols, rows, numa, legend)


def _machine(source, cols, gpu_cols, nic_cols, rows, numa, legend) -> Machine:
    n = len(gpu_cols)
    names = {c: legend.get(c, c) for c in nic_cols}  # 'NIC0' -> 'mlx5_0'; old drivers label columns by name
    pair_links: dict[tuple[int, int], int] = {}
    for a in range(n):
        for b in range(a + 1, n):
            cell = rows[f"GPU{a}"][b]
            if (m := _NV.match(cell)):
                pair_links[(a, b)] = int(m.group(1))
    per_gpu = [sum(c for (a, b), c in pair_links.items() if g in (a, b)) for g in range(n)]
    fabric = pair_links and max(per_gpu) > max_links_per_gpu()
    notes = []
    if fabric:
        counts = sorted({c for c in pair_links.values()})
        if len(counts) != 1 or len(pair_links) != n * (n - 1) // 2:
            raise FabricsimError(f"{source}: NV# cells {counts} add up to more links per GPU than any GPU has, yet "
                                 "not every pair shows the same count: the matrix is neither an NVSwitch fabric nor "
                                 "a direct mesh; give the unedited output")
        nvlink_fabric = tuple((g, counts[0]) for g in range(n))
        nvlinks = ()
        notes.append(f"{source}: NV{counts[0]} between every GPU pair is more links per GPU than any GPU has "
                     f"({max_links_per_gpu()}): an NVSwitch fabric, {counts[0]} links per GPU")
    else:
        nvlink_fabric = ()
        nvlinks = tuple((a, b, c) for (a, b), c in sorted(pair_links.items()))
    affinity = []
    for g in range(n):
        for j, c in enumerate(nic_cols):
            affinity.append((g, names[c], rows[f"GPU{g}"][cols.index(c)]))
    switch = _switch_groups(n, nic_cols, cols, rows, names)
    gpus = tuple(Gpu(index=g, numa=numa.get(g), switch=switch.get(f"GPU{g}", "")) for g in range(n))
    nics = tuple(Nic(name=names[c], switch=switch.get(c, "")) for c in nic_cols)
    numas = len({v for v in numa.values() if v is not None})
    return Machine(sources=(source,), gpus=gpus, nics=nics, nvlinks=nvlinks, nvlink_fabric=nvlink_fabric,
                   affinity=tuple(affinity), numa_nodes=numas, notes=tuple(notes))


def _switch_groups(n, nic_cols, cols, rows, names) -> dict[str, str]:
    """Devices that reach each other without crossing a host bridge (PIX / PXB) share a PCIe switch complex:
    the connected groups, named by their first member."""
    devices = [f"GPU{g}" for g in range(n)] + list(nic_cols)
    parent = {d: d for d in devices}

    def find(d):
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    for a in devices:
        if a not in rows:
            continue
        for j, b in enumerate(cols):
            if rows[a][j] in ("PIX", "PXB"):
                parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for d in devices:
        groups.setdefault(find(d), []).append(d)
    out = {}
    for members in groups.values():
        if len(members) > 1:
            for d in members:
                out[d] = f"switch:{members[0]}"
    return out

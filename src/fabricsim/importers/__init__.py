"""Build a cluster file from what a real machine says about itself (issue 15).

`import_cluster(paths)` reads NCCL topology XML, `nvidia-smi topo -m`, `ibstat` / `ibstatus`,
`ibv_devinfo` and NCCL_DEBUG=INFO logs (any mix, one machine), merges them into one neutral `Machine`
(`importers.machine`) and maps that to the nearest ClusterSpec (`importers.mapping`), listing what was
assumed and what the cluster file cannot express.
"""

from __future__ import annotations

from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.importers import ibstat, ibv_devinfo, nccl_log, nccl_xml, nvidia_smi
from fabricsim.importers.machine import Machine, merge
from fabricsim.importers.mapping import Imported, to_spec

__all__ = ["FORMATS", "Imported", "Machine", "import_cluster", "read_machine", "sniff"]

FORMATS = {
    "nccl-xml": nccl_xml.parse,
    "nvidia-smi": nvidia_smi.parse,
    "ibstat": ibstat.parse_ibstat,
    "ibstatus": ibstat.parse_ibstatus,
    "ibv_devinfo": ibv_devinfo.parse,
    "nccl-log": nccl_log.parse,
}


def sniff(text: str) -> str | None:
    """Which FORMATS entry a text is, from its first telling lines; None when none fits."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[:40]
    if any(ln.startswith(("<system", "<?xml", "<topology")) for ln in head):
        return "nccl-xml"
    if "NCCL INFO" in text:
        return "nccl-log"
    if any(ln.startswith("CA '") for ln in head):
        return "ibstat"
    if any(ln.startswith("Infiniband device '") for ln in head):
        return "ibstatus"
    if any(ln.startswith("hca_id:") for ln in head):
        return "ibv_devinfo"
    if any(ln.split()[0] == "GPU0" for ln in lines):
        return "nvidia-smi"
    return None


def read_machine(path: str | Path) -> Machine:
    """Parse one input file; every problem is one FabricsimError naming the file (and the line)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read {path}: {err.strerror}; check the path") from None
    except UnicodeDecodeError as err:
        raise FabricsimError(f"{path} is not UTF-8 text (byte {err.start}): give the text output of the tool") from None
    fmt = sniff(text)
    if fmt is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise FabricsimError(f"{path}: not a format topo import reads (NCCL topology XML, nvidia-smi topo -m, "
                             f"ibstat / ibstatus, ibv_devinfo, an NCCL_DEBUG=INFO log); it starts '{first[:60]}'")
    try:
        return FORMATS[fmt](text, str(path))
    except FabricsimError as err:
        raise FabricsimError(f"{path} ({fmt}): {err}") from None


def import_cluster(paths, *, nodes: int | None = None, gpu: str | None = None, name: str = "imported") -> Imported:
    """The cluster the input files describe (one machine; `nodes` copies of it), with its assumptions and gaps."""
    return to_spec(merge([read_machine(p) for p in paths]), nodes=nodes, gpu=gpu, name=name)

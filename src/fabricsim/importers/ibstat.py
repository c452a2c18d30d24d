"""`ibstat` and `ibstatus` (infiniband-diags): every RDMA port with its adapter, state, rate and link layer.

ibstat prints `CA 'mlx5_0'` blocks (`CA type: MT4129`, `Port 1:` with `State`, `Physical state`,
`Rate: 400` in Gb/s, `Link layer: InfiniBand | Ethernet`); ibstatus prints
`Infiniband device 'mlx5_0' port 1 status:` blocks (`state: 4: ACTIVE`, `rate: 200 Gb/sec (4X HDR)`,
`link_layer: InfiniBand`). Ethernet ports are RoCE devices.
"""

from __future__ import annotations

import re

from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import Machine, Nic
from fabricsim.importers.parts import MELLANOX_NICS

_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^Port (\d+):\s*$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z _]*?):\s*(.*)$")
_STATUS = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:\s*$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)")


def _rate(value: str, line_no: int) -> float:
    m = _RATE.match(value.strip())
    if not m:
        raise FabricsimError(f"line {line_no}: rate '{value.strip()}' is not a number of Gb/s: give the unedited output")
    return float(m.group(1))


def _layer(value: str, line_no: int) -> str:
    v = value.strip().lower()
    if v not in ("infiniband", "ethernet"):
        raise FabricsimError(f"line {line_no}: link layer '{value.strip()}' is neither InfiniBand nor Ethernet: give "
                             "the unedited output")
    return v


def _nic(ca: str, port: int, nports: int, fields: dict, model: str) -> Nic:
    layer = fields.get("layer", "")
    return Nic(name=ca if nports <= 1 and port == 1 else f"{ca}:{port}", gbps=fields.get("rate", 0.0),
               link_layer=layer, transport={"infiniband": "ib", "ethernet": "roce"}.get(layer, ""), model=model,
               active=fields.get("active"))


def parse_ibstat(text: str, source: str) -> Machine:
    """The RDMA ports of an `ibstat` output."""
    nics: list[Nic] = []
    ca = model = ""
    nports = 1
    port = 0
    fields: dict = {}
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if (m := _CA.match(line)):
            if port:
                nics.append(_nic(ca, port, nports, fields, model))
            ca, model, nports, port, fields = m.group(1), "", 1, 0, {}
            continue
        if not ca:
            raise FabricsimError(f"line {i}: '{line[:60]}' comes before any \"CA '<name>'\" line: give the output of "
                                 "ibstat")
        if (m := _PORT.match(line)):
            if port:
                nics.append(_nic(ca, port, nports, fields, model))
            port, fields = int(m.group(1)), {}
            continue
        m = _FIELD.match(line)
        if not m:
            raise FabricsimError(f"line {i}: '{line[:60]}' is not a 'Name: value' line of ibstat: give the unedited output")
        key, value = m.group(1).strip().lower(), m.group(2)
        if key == "ca type":
            num = value.strip().removeprefix("MT")
            model = MELLANOX_NICS.get(int(num), "") if num.isdigit() else ""
        elif key == "number of ports":
            nports = int(value) if value.strip().isdigit() else 1
        elif port and key == "state":
            fields["active"] = value.strip().lower() == "active"
        elif port and key == "rate":
            fields["rate"] = _rate(value, i)
        elif port and key == "link layer":
            fields["layer"] = _layer(value, i)
    if port:
        nics.append(_nic(ca, port, nports, fields, model))
    if not nics:
        raise FabricsimError("no port found: ibstat output lists \"CA '<name>'\" blocks with 'Port 1:' sections")
    return Machine(sources=(source,), nics=tuple(nics))


def parse_ibstatus(text: str, source: str) -> Machine:
    """The RDMA ports of an `ibstatus` output."""
    blocks: list[tuple[str, int, dict]] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if (m := _STATUS.match(line)):
            blocks.append((m.group(1), int(m.group(2)), {}))
            continue
        if not blocks:
            raise FabricsimError(f"line {i}: '{line[:60]}' comes before any \"Infiniband device '<name>' port N status:\" "
                                 "line: give the output of ibstatus")
        key, _, value = line.partition(":")
        key = key.strip().lower()
        fields = blocks[-1][2]
        if key == "state":
            fields["active"] = "ACTIVE" in value.upper()
        elif key == "rate":
            fields["rate"] = _rate(value, i)
        elif key == "link_layer":
            fields["layer"] = _layer(value, i)
    ports: dict[str, int] = {}
    for ca, _, _ in blocks:
        ports[ca] = ports.get(ca, 0) + 1
    nics = tuple(_nic(ca, port, ports[ca], fields, "") for ca, port, fields in blocks)
    return Machine(sources=(source,), nics=nics)

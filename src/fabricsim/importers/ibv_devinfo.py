"""`ibv_devinfo` (rdma-core): each `hca_id:` device with `vendor_part_id` and its `port:` sections.

Per port: `state: PORT_ACTIVE (4)`, `link_layer: InfiniBand | Ethernet`, and with `-v`
`active_width: 4X (2)` and `active_speed: 50.0 Gbps (64)` (per lane), whose product is the port rate
(4 x 50 = 200 Gb/s HDR). Without `-v` the rate is not printed.
"""

from __future__ import annotations

import re

from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import Machine, Nic
from fabricsim.importers.parts import MELLANOX_NICS

_HCA = re.compile(r"^hca_id:\s*(\S+)\s*$")
_PORT = re.compile(r"^port:\s*(\d+)\s*$")
_WIDTH = re.compile(r"^(\d+)X\b")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*Gbps")


def parse(text: str, source: str) -> Machine:
    """The RDMA ports of an `ibv_devinfo` output."""
    devices: list[dict] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if (m := _HCA.match(line)):
            devices.append({"name": m.group(1), "model": "", "ports": []})
            continue
        if not devices:
            raise FabricsimError(f"line {i}: '{line[:60]}' comes before any 'hca_id:' line: give the output of "
                                 "ibv_devinfo")
        dev = devices[-1]
        if (m := _PORT.match(line)):
            dev["ports"].append({"port": int(m.group(1))})
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue  # capability flag lists of -v (one flag a line)
        key, value = key.strip(), value.strip()
        if key == "vendor_part_id":
            if not value.isdigit():
                raise FabricsimError(f"line {i}: vendor_part_id '{value}' is not a number: give the unedited output")
            dev["model"] = MELLANOX_NICS.get(int(value), "")
        if not dev["ports"]:
            continue
        port = dev["ports"][-1]
        if key == "state":
            port["active"] = "ACTIVE" in value.upper()
        elif key == "link_layer":
            layer = value.lower()
            if layer not in ("infiniband", "ethernet"):
                raise FabricsimError(f"line {i}: link_layer '{value}' is neither InfiniBand nor Ethernet")
            port["layer"] = layer
        elif key == "active_width":
            if not (m := _WIDTH.match(value)):
                raise FabricsimError(f"line {i}: active_width '{value}' is not like '4X (2)': give the unedited output")
            port["width"] = int(m.group(1))
        elif key == "active_speed" and not value.startswith("invalid"):  # a down port prints 'invalid speed (0)'
            if not (m := _SPEED.match(value)):
                raise FabricsimError(f"line {i}: active_speed '{value}' is not like '50.0 Gbps (64)': give the "
                                     "unedited output")
            port["speed"] = float(m.group(1))
    nics = []
    for dev in devices:
        for port in dev["ports"]:
            layer = port.get("layer", "")
            name = dev["name"] if len(dev["ports"]) == 1 and port["port"] == 1 else f"{dev['name']}:{port['port']}"
            rate = port.get("width", 0) * port.get("speed", 0.0)
            nics.append(Nic(name=name, gbps=rate, link_layer=layer, model=dev["model"], active=port.get("active"),
                            transport={"infiniband": "ib", "ethernet": "roce"}.get(layer, "")))
    if not nics:
        raise FabricsimError("no port found: ibv_devinfo output lists 'hca_id:' devices with 'port:' sections")
    return Machine(sources=(source,), nics=tuple(nics))

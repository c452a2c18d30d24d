"""fabricsim.hardware: the sourced hardware catalog (GPUs, links, switches, NICs, network transports) and name
lookups.

Plain frozen dataclasses in one dict per kind; every figure carries its source. Bandwidths are bytes/s per
direction, latencies seconds, FLOP/s dense.
"""

from fabricsim.hardware.catalog import (
    eth_link_for_speed,
    get_gpu,
    get_link,
    get_nic,
    get_switch,
    ib_link_for_speed,
    nic_for_speed,
    nic_speeds,
    nvswitch_for,
)
from fabricsim.hardware.gpus import GPU, GPUS
from fabricsim.hardware.links import LINKS, LinkTech
from fabricsim.hardware.nics import NIC, NICS
from fabricsim.hardware.switches import SWITCHES, Switch
from fabricsim.hardware.transports import DEFAULT_TRANSPORT, TRANSPORTS, Transport

__all__ = [
    "DEFAULT_TRANSPORT", "GPU", "GPUS", "LINKS", "LinkTech", "NIC", "NICS", "SWITCHES", "Switch", "TRANSPORTS", "Transport",
    "eth_link_for_speed", "get_gpu", "get_link", "get_nic", "get_switch", "ib_link_for_speed", "nic_for_speed",
    "nic_speeds", "nvswitch_for",
]

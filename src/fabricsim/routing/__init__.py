"""fabricsim.routing: GPU-to-GPU paths over a Topology (NVLink, PCIe, host, fabric with ECMP and PXN)."""

from fabricsim.routing.metrics import path_bandwidth, path_latency
from fabricsim.routing.model import PathKind, Routes
from fabricsim.routing.route import route, route_pairs

__all__ = ["PathKind", "Routes", "path_bandwidth", "path_latency", "route", "route_pairs"]

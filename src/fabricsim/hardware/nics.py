"""Network adapters: ConnectX generations and BlueField-3, in InfiniBand and Ethernet (RoCE) mode.

VPI adapters run either protocol; each mode is its own entry because its port link differs.
Figures from NVIDIA's ConnectX adapter documentation (NV-ConnectX, docs/SOURCES.md).
"""

from __future__ import annotations

from dataclasses import dataclass

# ConnectX-6 adapter latency '< 600 ns' (NVIDIA CX-6 docs, Lenovo Press LP1195) [V/S].
# No later generation publishes a figure; the CX-6 value is used for all of them [U].
_ADAPTER_LATENCY = 600e-9
_LAT = "; adapter latency 600 ns ('< 600 ns', ConnectX-6 docs [V]; assumed for this generation [U])"


@dataclass(frozen=True)
class NIC:
    """One adapter; `port_link` and `pcie_link` are keys of `fabricsim.hardware.LINKS`."""

    name: str
    port_link: str
    ports: int
    pcie_link: str
    latency: float  # s, adapter (one traversal)
    source: str


def _nics() -> list[NIC]:
    cx5 = "ConnectX-5: EDR 100 Gb/s IB or 100GbE, PCIe 3.0 x16 (Gen4 on the Ex variant) [U: NVIDIA ConnectX-5 product brief, not re-checked]"
    cx6 = "ConnectX-6 VPI/EN: HDR 200 Gb/s IB or 200GbE, PCIe 4.0 x16 (docs.nvidia.com ConnectX-6 EN [V])"
    cx7 = "ConnectX-7 VPI: NDR 400 Gb/s IB or 400GbE, PCIe 5.0 x16 (docs.nvidia.com ConnectX7VPI [V])"
    cx8 = ("ConnectX-8 SuperNIC: 800 Gb/s XDR IB, or 2 x 400GbE (twin-plane, NV-B300-RA [V]), PCIe Gen6 through "
           "an integrated 48-lane PCIe switch (ConnectX-8 release notes [V])")
    return [
        NIC("cx5", "ib-edr", 1, "pcie3", _ADAPTER_LATENCY, cx5 + "; adapter latency 600 ns assumed as CX-6 [U]"),
        NIC("cx6", "ib-hdr", 1, "pcie4", _ADAPTER_LATENCY, cx6 + "; '< 600 ns' adapter latency [V]"),
        NIC("cx7", "ib-ndr", 1, "pcie5", _ADAPTER_LATENCY, cx7 + _LAT),
        NIC("cx8", "ib-xdr", 1, "pcie6", _ADAPTER_LATENCY, cx8 + _LAT),
        NIC("cx5-eth", "eth-100g", 1, "pcie3", _ADAPTER_LATENCY, cx5 + ", 100GbE RoCE mode" + _LAT),
        NIC("cx6-eth", "eth-200g", 1, "pcie4", _ADAPTER_LATENCY, cx6 + ", 200GbE RoCE mode; '< 600 ns' [V]"),
        NIC("cx7-eth", "eth-400g", 1, "pcie5", _ADAPTER_LATENCY, cx7 + ", 400GbE RoCE mode" + _LAT),
        NIC("cx8-eth", "eth-400g", 2, "pcie6", _ADAPTER_LATENCY, cx8 + ", Ethernet mode as 2 x 400GbE" + _LAT),
        NIC("bf3", "eth-400g", 1, "pcie5", _ADAPTER_LATENCY,
            "BlueField-3 DPU / SuperNIC: 400 Gb/s (1 x 400 or 2 x 200) IB or Ethernet, PCIe Gen5 x16 "
            "(docs.nvidia.com BlueField-3 [V]); Ethernet mode as in Spectrum-X and DGX storage paths" + _LAT),
    ]


NICS: dict[str, NIC] = {nic.name: nic for nic in _nics()}

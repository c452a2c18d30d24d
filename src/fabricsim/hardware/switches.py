"""Switch catalog: NVSwitch chips, InfiniBand / Ethernet switches and PCIe switches.

`ports` counts ports of `port_link` (NVSwitch: NVLink ports; network: logical ports at the full rate;
PCIe: x16 ports = lanes / 16). Figures from NV-NVSw3, NV-HGX-A100, NV-GB200-RA (NVSwitch),
NV-Switches (InfiniBand) and NV-SN5600 (Ethernet); keys in docs/SOURCES.md.
"""

from __future__ import annotations

from dataclasses import dataclass

REDUCTIONS = ("none", "nvls", "sharp1", "sharp2", "sharp3", "sharp4")

# [U] No public port-to-port latency for any NVSwitch generation ("sub-microsecond" only). 100 ns is the
# order of a cut-through crossbar like the PCIe switches below (105-115 ns); flagged, not fitted.
_NVSWITCH_HOP = 100e-9


@dataclass(frozen=True)
class Switch:
    """One switch chip or box; `port_link` is a key of `fabricsim.hardware.LINKS`."""

    name: str
    kind: str  # 'nvswitch' | 'infiniband' | 'ethernet' | 'pcie'
    ports: int
    port_link: str
    hop_latency: float  # s, port to port
    reduction: str  # 'none' | 'nvls' | 'sharp1'..'sharp4'
    source: str
    notes: str = ""


def _switches() -> list[Switch]:
    nvswitch_latency = "; hop latency [U]: no public figure, see _NVSWITCH_HOP"
    return [
        Switch("nvswitch1", "nvswitch", 18, "nvlink2", _NVSWITCH_HOP, "none",
               source="NVSwitch gen 1 (DGX-2 / HGX-2): 18 NVLink 2 ports, 900 GB/s bidir; wikichip, nextplatform, "
                      "anandtech [S]" + nvswitch_latency,
               notes="6 per 16-GPU baseboard half, 12 per DGX-2; each V100 sends 1 link to each of its board's 6"),
        Switch("nvswitch2", "nvswitch", 36, "nvlink3", _NVSWITCH_HOP, "none",
               source="NVSwitch gen 2 (HGX / DGX A100): 36 NVLink 3 ports [U, conflict #21]; 6 per board, 2 links "
                      "from each A100 to each chip ('Introducing NVIDIA HGX A100' [V])" + nvswitch_latency),
        Switch("nvswitch3", "nvswitch", 64, "nvlink4", _NVSWITCH_HOP, "nvls",
               source="NVSwitch gen 3 (HGX / DGX H100, H200): 64 NVLink 4 ports, 3.2 TB/s full duplex, NVLink SHARP "
                      "and multicast (NV-NVSw3 devblog [V])" + nvswitch_latency,
               notes="4 per 8-GPU board; GPU links split 5/4/4/5"),
        Switch("nvswitch4", "nvswitch", 72, "nvlink5", _NVSWITCH_HOP, "nvls",
               source="NVSwitch gen 4 (NVLink 5 switch chip: HGX B200/B300, NVL72 switch trays): 72 ports, 7.2 TB/s "
                      "bidir [D] (NV-GB200-RA network-fabrics, NV-NVLink [V])" + nvswitch_latency,
               notes="2 per HGX B200 board; NVL72: 2 per switch tray x 9 trays = 18, one link from each GPU to "
                     "each chip"),
        Switch("sb7800", "infiniband", 36, "ib-edr", 90e-9, "sharp1",
               source="Mellanox SB7800 / SB7890 (Switch-IB 2, EDR): 36 x 100G QSFP28, 7.2 Tb/s [S]; latency "
                      "'90 ns' often quoted [U]; SHARPv1 (NV-SHARP [V], mapping partly inferred [U])"),
        Switch("qm8700", "infiniband", 40, "ib-hdr", 130e-9, "sharp2",
               source="NVIDIA QM8700 / QM8790 (Quantum, HDR): 40 x 200G QSFP56, 16 Tb/s both directions, "
                      "'sub-130 ns' (Mellanox QM8790 brief as quoted by IT4Innovations Karolina docs [S]); "
                      "SHARPv2 [V]",
               notes="80 x HDR100 with splitter cables"),
        Switch("qm9700", "infiniband", 64, "ib-ndr", 330e-9, "sharp3",
               source="NVIDIA QM9700 / QM9790 (Quantum-2, NDR): 64 x 400G via 32 OSFP cages, 51.2 Tb/s counting "
                      "both directions (docs.nvidia.com QM97X0 Interfaces [V]); SHARPv3 [V]. Latency conflict #17: "
                      "~330 ns (yobitel) vs '<150 ns' / '130 ns'; 330 ns taken because the lower figures match the "
                      "previous-generation QM8700 'sub-130 ns' brief and no NVIDIA value exists [U]",
               notes="128 x 200G with splitters"),
        Switch("q3400", "infiniband", 144, "ib-xdr", 330e-9, "sharp4",
               source="NVIDIA Q3400-RA (Quantum-X800, XDR): 144 x 800G via 72 OSFP, 115.2 Tb/s one direction "
                      "(docs.nvidia.com XDR switch user manual [V]); SHARPv4 [S]; latency not published, "
                      "Quantum-2's 330 ns assumed [U]"),
        Switch("sn5600", "ethernet", 64, "eth-800g", 600e-9, "none",
               source="NVIDIA Spectrum-4 SN5600: 64 x 800G OSFP, 51.2 Tb/s one direction "
                      "(probsee, yobitel [S]); Ethernet RoCE switch hop 400-600 ns (kentino.com, vendor "
                      "consensus [U]); upper end taken for a deep-buffered 51.2T ASIC",
               notes="breakout to 128 x 400G [U]; 128 MB shared buffer [U]"),
        Switch("pcie-switch3", "pcie", 3, "pcie3", 150e-9, "none",
               source="Broadcom (PLX) PEX8747 (PCIe Gen3, 48 lanes = 3 x16 ports: one upstream, two GPUs), the "
                      "switch of dual-GPU Gen3 boards and servers; 150 ns port to port is the PLX Gen3 family "
                      "figure as commonly quoted [U]",
               notes="Gen3 consumer and workstation GPU servers (e.g. 2x RTX 2080 Ti behind one switch)"),
        Switch("pcie-switch3-64", "pcie", 4, "pcie3", 150e-9, "none",
               source="PCIe Gen3 switch with four x16 ports (64 lanes, Broadcom/PLX PEX8764 class): a DGX-1 hangs two "
                      "GPUs and one EDR NIC under each of its 4 PCIe switches with a x16 host uplink (STH-HC32 "
                      "[S]); P100 / V100 and the Broadwell host are PCIe Gen3 x16 (WikiNVLink, Klockwood [S]); "
                      "the exact part is not verified [U]; 150 ns as the PLX Gen3 family [U]",
               notes="DGX-1 P100 / V100"),
        Switch("pcie-switch4", "pcie", 6, "pcie4", 105e-9, "none",
               source="Broadcom PEX88096 class (PCIe Gen4, 96 lanes = 6 x16 ports): 105 ns cut-through between "
                      "x16 ports (Broadcom claim via Linley Group newsletter 2019-09 [S])",
               notes="PCIe switches on HGX/DGX A100 baseboards and Gen4 PCIe GPU servers; the exact DGX part is "
                     "not verified [U]"),
        Switch("pcie-switch5", "pcie", 9, "pcie5", 115e-9, "none",
               source="Broadcom PEX89144 class (PCIe Gen5, 144 lanes = 9 x16 ports): 115 ns port to port (probsee "
                      "PEX89144, HighPoint Rocket 1600 'the 115ns advantage' [S])",
               notes="PCIe switches on HGX/DGX H100-class baseboards and Gen5 servers; exact DGX part not "
                     "verified [U]"),
        Switch("cx8-pcie-switch", "pcie", 3, "pcie6", 115e-9, "none",
               source="the PCIe Gen6 switch inside a ConnectX-8 SuperNIC: 48 lanes = 3 x16 ports (GPU, the NIC, host "
                      "uplink); one CX-8 per GPU in HGX / DGX B300 and GB300 NVL72 (docs.nvidia.com ConnectX-8 release "
                      "notes [V]; acecloud, rillor [S]), the B300's host link runs Gen6 through it "
                      "(Klockwood-B300 [S]; the B200 die's Gen6 runs Gen5 on HGX B200 hosts); port-to-port latency not published, the "
                      "Gen5 switch's 115 ns assumed [U]; the x86 host side of the uplink is not verified [U]",
               notes="DGX B300: 8 per node, each with one GPU and its CX-8 NIC"),
    ]


SWITCHES: dict[str, Switch] = {switch.name: switch for switch in _switches()}

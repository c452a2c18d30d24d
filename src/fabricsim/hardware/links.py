"""Link technologies: per-direction bandwidth of one physical link, achievable fraction, hop latency.

Bandwidths are bytes/s PER DIRECTION (bidirectional marketing totals appear only in `source`).
`efficiency` is the fraction of `bw` that bulk collective data achieves as NCCL (or its maintainers)
document it, so the engine can time transfers without fitting anything to measurements.
Tags in the source text (docs/SOURCES.md, which also expands the source keys): [V] vendor, [S] secondary,
[D] derived here, [U] unverified.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.units import GB, gbps_to_bytes


@dataclass(frozen=True)
class LinkTech:
    """One link technology; `bw` is bytes/s per direction per physical link (PCIe: x16, network: one port)."""

    name: str
    kind: str  # 'nvlink' | 'nvlink-c2c' | 'pcie' | 'infiniband' | 'ethernet' | 'xgmi' | 'cpu'
    bw: float
    efficiency: float
    latency: float  # s, one hop on this link including the receiving port (physical, no software)
    source: str
    efficiency_source: str
    line_rate_gbps: float | None = None


KINDS = ("nvlink", "nvlink-c2c", "pcie", "infiniband", "ethernet", "xgmi", "cpu")

# Latency of a short on-board SerDes link (PHY transmit + receive and the port pipeline). [U]: no vendor
# publishes it for NVLink, PCIe, C2C or xGMI; 50 ns is an order-of-magnitude figure, small next to the
# switch-hop, NIC and NCCL software latencies that dominate every real path.
ONBOARD_LINK_LATENCY = 50e-9
# Cabled network link: signal propagation ~5 ns/m in fibre or twinax (~0.7 c; "200 m per microsecond",
# blog.ipspace.net "Is switching latency relevant?") over a 10 m in-row run. [D]; switch and NIC
# latencies are carried by Switch.hop_latency and NIC.latency.
CABLE_LINK_LATENCY = 5e-9 * 10


def _pcie_x16(gt_per_s: float, encoding: float) -> float:
    """Per-direction bytes/s of an x16 link: GT/s per lane x 16 lanes x encoding efficiency / 8 bits."""
    return gt_per_s * 1e9 * 16 * encoding / 8


_NCCL_PCIE = (
    "NCCL topo.cc ncclTopoGetPciBw: width*code/80 GB/s, x16 = Gen3 12, Gen4 24, Gen5 48, Gen6 96 GB/s "
    "(NCCL src/graph/topo.h, topo.cc), divided by the x16 per-direction rate after line encoding"
)
_NCCL_NVLINK = (
    "NCCL ncclTopoNVLinkBw per-link GB/s (src/graph/topo.h: SM60 18.0, SM70/SM75/SM80 20.0, SM90 20.6, "
    "SM100 40.1) divided by the raw per-direction link rate; sjeaugey (NVIDIA/nccl-tests#212): "
    "'450GB/s is the line rate ... protocol overhead (~20%) ... 370GB/s' = 0.82 for H100"
)
_NET = (
    "Maintainers: '24 GB/s is the peak performance per 200G NIC (12 GB/s for 100G NICs)' (sjeaugey, "
    "nccl-tests#119), '~48GB/s from each CX7 NIC at 400Gbps' (AddyLaddy, nccl-tests#319) = 0.96 of line rate"
)
_NET_EXTRAPOLATED = _NET + "; no maintainer figure exists for {what}, the same 0.96 is applied"
NET_EFFICIENCY = 0.96  # 12/12.5, 24/25, 48/50 GB/s (see _NET)


def _pcie_links() -> list[LinkTech]:
    """PCIe x16, rates per direction from the PCI-SIG specifications (PCIe rates, docs/SOURCES.md) [S]."""
    links = []
    for gen, gt, nccl in ((3, 8, 12), (4, 16, 24), (5, 32, 48)):
        bw = _pcie_x16(gt, 128 / 130)
        links.append(LinkTech(
            name=f"pcie{gen}", kind="pcie", bw=bw, efficiency=nccl * GB / bw, latency=ONBOARD_LINK_LATENCY,
            source=f"PCIe {gen}.0 x16: {gt} GT/s/lane, 128b/130b = {bw / GB:.2f} GB/s per direction "
                   f"({2 * bw / GB:.0f} GB/s bidirectional marketing); PCI-SIG via Wikipedia [S]",
            efficiency_source=_NCCL_PCIE,
        ))
    # PCIe 6.0: 64 GT/s PAM4 in 256-byte FLITs with 242 usable bytes. 128 GB/s is the pre-FLIT figure
    # (PCIe 6.0 FLIT overhead: 242 of 256 bytes usable); 121 GB/s is stored so that every generation's bw is after line encoding.
    bw = _pcie_x16(64, 242 / 256)
    links.append(LinkTech(
        name="pcie6", kind="pcie", bw=bw, efficiency=96 * GB / bw, latency=ONBOARD_LINK_LATENCY,
        source="PCIe 6.0 x16: 64 GT/s PAM4, FLIT 242/256 usable = 121 GB/s per direction (128 GB/s before FLIT "
               "overhead, 256 GB/s bidirectional marketing; 242/256-byte FLITs give 121); PCI-SIG via Wikipedia [S]",
        efficiency_source=_NCCL_PCIE,
    ))
    return links


def _nvlink_links() -> list[LinkTech]:
    """NVLink generations 1-5: GB/s per link per direction and NCCL's per-link figure (WikiNVLink, NV-NVLink)."""
    table = (
        (1, 20, 18.0, "20 Gb/s NRZ x 8 lanes; P100 4 links = 160 GB/s bidirectional [S]"),
        (2, 25, 20.0, "25 Gb/s NRZ x 8 lanes; V100 6 links = 300 GB/s bidirectional [S]"),
        (3, 25, 20.0, "50 Gb/s NRZ x 4 lanes; A100 12 links = 600 GB/s bidirectional [S][V]"),
        (4, 25, 20.6, "100 Gb/s PAM4 x 2 lanes; H100 18 links = 900 GB/s bidirectional [S][V]"),
        (5, 50, 40.1, "200 Gb/s PAM4 x 2 lanes; B200 18 links = 1.8 TB/s bidirectional (NV-NVLink) [V]"),
    )
    return [
        LinkTech(
            name=f"nvlink{gen}", kind="nvlink", bw=per_dir * GB, efficiency=nccl / per_dir,
            latency=ONBOARD_LINK_LATENCY,
            source=f"NVLink {gen}: {per_dir} GB/s per link per direction, {signalling}; WikiNVLink [S], NV-NVLink [V]",
            efficiency_source=_NCCL_NVLINK,
        )
        for gen, per_dir, nccl, signalling in table
    ]


def _network_links() -> list[LinkTech]:
    """InfiniBand 4x ports (IB rates, docs/SOURCES.md) and RoCEv2 Ethernet ports (IEEE 802.3); bw = line rate / 8."""
    links = []
    for name, gbps, what in (
        ("ib-edr", 100, "EDR 4x 25.78125 Gb/s, 64b/66b"),
        ("ib-hdr", 200, "HDR 4x 53.125 Gb/s PAM4"),
        ("ib-ndr", 400, "NDR 4x 106.25 Gb/s PAM4"),
        ("ib-xdr", 800, "XDR 4x ~212.5 Gb/s PAM4 (200G SerDes)"),
    ):
        links.append(LinkTech(
            name=name, kind="infiniband", bw=gbps_to_bytes(gbps), efficiency=NET_EFFICIENCY,
            latency=CABLE_LINK_LATENCY,
            source=f"InfiniBand {what}: {gbps} Gb/s data rate per port per direction; IBTA roadmap, NVIDIA cabling guide [S][V]",
            efficiency_source=_NET_EXTRAPOLATED.format(what="XDR 800G") if gbps == 800 else _NET,
            line_rate_gbps=float(gbps),
        ))
    for gbps in (100, 200, 400, 800):
        links.append(LinkTech(
            name=f"eth-{gbps}g", kind="ethernet", bw=gbps_to_bytes(gbps), efficiency=NET_EFFICIENCY,
            latency=CABLE_LINK_LATENCY,
            source=f"{gbps}GbE port carrying RoCEv2 (IEEE 802.3, {gbps} Gb/s per direction)",
            efficiency_source=_NET_EXTRAPOLATED.format(what="RoCE Ethernet"),
            line_rate_gbps=float(gbps),
        ))
    return links


def _other_links() -> list[LinkTech]:
    """NVLink-C2C, AMD xGMI and the CPU socket-to-socket links."""
    c2c = 450 * GB
    xgmi = 64 * GB
    return [
        # The whole Grace C2C interface: `nvidia-smi c2c -s` lists 10 links at 44.712 GB/s on GH200 and GB200
        # (outputs quoted in public test fixtures), i.e. ~450 GB/s per direction.
        LinkTech(
            name="nvlink-c2c", kind="nvlink-c2c", bw=c2c, efficiency=10 * 44.712 * GB / c2c,
            latency=ONBOARD_LINK_LATENCY,
            source="NVLink-C2C (Grace<->Hopper/Blackwell): 450 GB/s per direction, 900 GB/s bidirectional, one "
                   "port per Grace (Klockwood-NVLink [S]). On GB200 one Grace serves two B200 [S]; "
                   "how the port is shared is left to the topology builder",
            efficiency_source="NCCL takes C2C bw from NVML (bw per link x count, src/graph/topo.cc): 10 x 44.712 "
                              "GB/s as `nvidia-smi c2c -s` reports; no maintainer statement of achieved C2C "
                              "bandwidth [U]",
        ),
        LinkTech(
            name="xgmi", kind="xgmi", bw=xgmi, efficiency=48 * GB / xgmi, latency=ONBOARD_LINK_LATENCY,
            source="MI300X Infinity Fabric (xGMI): 16 lanes x 32 Gb/s = 64 GB/s per direction per link, 7 links "
                   "per GPU = 896 GB/s bidirectional; wheelersnetwork / yobitel [S]",
            efficiency_source="RCCL src/graph/topo.h GFX94X_XGMI_WIDTH 48.0 GB/s per xGMI link for gfx942 "
                              "(MI300X), quoted from RCCL source [S], over 64 GB/s",
        ),
        # NCCL prices GPU traffic that crosses CPU sockets with fixed SYS bandwidths (src/graph/topo.h).
        # Those are achievable figures, not line rates, so they are stored as bw with efficiency 1.
        LinkTech(
            name="upi", kind="cpu", bw=22 * GB, efficiency=1.0, latency=ONBOARD_LINK_LATENCY,
            source="Intel Sapphire Rapids UPI 2.0 (DGX H100 host: 2x Xeon Platinum 8480C): NCCL SRP_QPI_BW = "
                   "22 GB/s (topo.h, chosen for cpuid model >= 0x8F). Raw UPI 2.0 is "
                   "4 links x 16 GT/s; NCCL's value is what GPU traffic across the sockets gets",
            efficiency_source="bw is already NCCL's achievable socket-to-socket value (efficiency 1.0)",
        ),
        LinkTech(
            name="amd-if", kind="cpu", bw=16 * GB, efficiency=1.0, latency=ONBOARD_LINK_LATENCY,
            source="AMD EPYC socket-to-socket Infinity Fabric (DGX A100 host: 2x EPYC 7742): NCCL AMD_BW = "
                   "16 GB/s (topo.h), NCCL's achievable value stored as bw",
            efficiency_source="bw is already NCCL's achievable socket-to-socket value (efficiency 1.0)",
        ),
        LinkTech(
            name="grace-sys", kind="cpu", bw=6 * GB, efficiency=1.0, latency=ONBOARD_LINK_LATENCY,
            source="the two Grace CPUs of a GB200/GB300 compute tray: NCCL prices traffic between Arm sockets at "
                   "ARM_BW = 6 GB/s (src/graph/topo.h, ncclTopoGetInterCpuBw for NCCL_TOPO_CPU_ARCH_ARM); no "
                   "vendor figure for the tray's socket link is published",
            efficiency_source="bw is already NCCL's achievable socket-to-socket value (efficiency 1.0)",
        ),
    ]


LINKS: dict[str, LinkTech] = {
    link.name: link for link in (*_pcie_links(), *_nvlink_links(), *_network_links(), *_other_links())
}

"""Network adapters: ConnectX generations and BlueField-3 (InfiniBand and Ethernet / RoCE mode), AWS EFA devices
and Google's gVNIC.

VPI adapters run either protocol; each mode is its own entry because its port link differs.
Figures from NVIDIA's ConnectX adapter documentation (NV-ConnectX, docs/SOURCES.md), aws-ofi-nccl and GCP's pages.
A NIC also carries what its network plugin tells NCCL (`plugin_latency`, a tuning input NCCL adds to its own cost
model, never wire time) and, where the plugin's authors document it, the transport's own cost per network step
(`step_latency`), which the engine charges instead of NCCL's hwLat[NET].
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
    transports: tuple[str, ...] = ("ib", "roce", "socket")  # hardware.TRANSPORTS it runs (by its port kind)
    plugin_latency: float = 0.0  # s, the latency the network plugin reports to NCCL (NCCL's graph latencyInter)
    step_latency: tuple[float, float, float] | None = None  # s per network step (LL, LL128, Simple); None: NCCL's
    step_latency_source: str = ""


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


def _cloud_nics() -> list[NIC]:
    """EFA devices (one entry per EC2 platform: the plugin keys its latency and cost model by platform) and gVNIC."""
    ofi = "aws-ofi-nccl src/platform-aws.cpp platform_data_map"
    model = ("aws-ofi-nccl src/tuner/nccl_ofi_model.cpp model_platform_params net_lat {lat} us per network step, "
             "+ TUNER_NET_COMP_OVERHEAD 3 us for Simple (include/nccl_ofi_param.h:291: 'device and ... completion "
             "up to the host' costs)")
    efa = ("AWS EFA (SRD) device, {gbps} Gb/s, {count} per {inst} (awslabs/awsome-distributed-ai aws-pcs tests README: "
           "p5/p5e 32, p5en 16 devices; p4d 4 x 100 Gbps EFA); PCIe link of the device not published [U: {pcie}]")
    us = 1e-6
    return [
        NIC("efa-p4d", "eth-100g", 1, "pcie3", _ADAPTER_LATENCY,
            efa.format(gbps=100, count=4, inst="p4d/p4de.24xlarge", pcie="Gen3 x16, as the plugin's p4d-24xl-topo.xml "
                       "declares") + f"; plugin latency 75 us ({ofi} p4d/p4de)" + _LAT +
            "; no per-step cost: the plugin's cost model covers P5/P5e and P5en only (src/tuner/nccl_ofi_model.cpp:"
            "130-133 is_model_supported; the first tuner, commit eacd69c3: 'When extending to P4/other platforms'), and "
            "p4d/p4de run its SENDRECV protocol (src/platform-aws.cpp:89, 103), not the RDMA write with immediate data "
            "whose latency that model takes (include/tuner/nccl_ofi_tuner_model.h:8), so NCCL's hwLat[NET] is charged",
            transports=("efa",), plugin_latency=75 * us),
        NIC("efa-p5", "eth-100g", 1, "pcie4", _ADAPTER_LATENCY,
            efa.format(gbps=100, count=32, inst="p5/p5e.48xlarge", pcie="pcie4 taken") +
            f"; plugin latency 75 us ({ofi} p5/p5e)" + _LAT,
            transports=("efa",), plugin_latency=75 * us, step_latency=(20 * us, 20 * us, 23 * us),
            step_latency_source=model.format(lat=20) + " (p5/p5e)"),
        NIC("efa-p5en", "eth-200g", 1, "pcie5", _ADAPTER_LATENCY,
            efa.format(gbps=200, count=16, inst="p5en.48xlarge", pcie="pcie5 taken") +
            f"; the plugin reads its speed as 200 Gb/s (src/nccl_ofi_net.cpp:617-619); plugin latency 35 us ({ofi} "
            "p5en/p6-b200)" + _LAT,
            transports=("efa",), plugin_latency=35 * us, step_latency=(18 * us, 18 * us, 21 * us),
            step_latency_source=model.format(lat=18) + " (p5en)"),
        NIC("gvnic-200", "eth-200g", 1, "pcie5", _ADAPTER_LATENCY,
            "Google gVNIC GPU NIC, 200 Gb/s: A3 High 4 GPU NICs (1,000 Gb/s with the host NIC), A3 Mega 8 GPU NICs "
            "(1,800 Gb/s, '8+1'), GCP 'Networking and GPU machines' (cloud.google.com/compute/docs/gpus/"
            "gpu-network-bandwidth); PCIe link not published [U: pcie5 taken]; plugin latency 0 (TCPX "
            "src/net_tcpx.cc, TCPXO nccl_shim.cc)" + _LAT,
            transports=("tcpx", "tcpxo", "socket")),
        NIC("cx6dx-eth", "eth-100g", 2, "pcie4", _ADAPTER_LATENCY,
            "ConnectX-6 Dx EN: up to two ports of 100GbE (or one of 200GbE), PCIe 4.0 x16 (NVIDIA ConnectX-6 Dx "
            "datasheet [U: not re-checked]); RoCE mode" + _LAT),
    ]


NICS: dict[str, NIC] = {nic.name: nic for nic in (*_nics(), *_cloud_nics())}

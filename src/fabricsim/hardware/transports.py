"""Network transports: how NCCL (or its network plugin) moves bytes across the scale-out fabric.

A transport is software over a NIC: NCCL's own IB verbs transport (InfiniBand, or RoCE on Ethernet), AWS EFA
through libfabric and the aws-ofi-nccl plugin, GCP GPUDirect-TCPX / TCPXO through Google's plugins, or NCCL's
TCP socket transport. What differs between them, and what fabricsim models of it:
- `gpudirect`: whether the transport can move GPU memory without a host copy (NCCL's socket transport cannot).
- `fuses_local_nics`: the plugin presents all NICs local to a GPU as one NCCL device and stripes each message over
  them (aws-ofi-nccl's NIC groups); otherwise NCCL sees one device per NIC card, its ports fused
  (NCCL_NET_MERGE_LEVEL's default PORT).
- `unpack`: received data lands scattered in GPU memory and a GPU kernel unpacks it (netDeviceType UNPACK); NCCL
  doubles its collective channels on such networks.
- `fabrics`: the scale-out fabrics it runs on.
The plugin's reported latency and a transport's per-step cost are per NIC part (`hardware.nics.NIC`), because
the plugins key them by platform. Sources beside each entry; nothing is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Transport:
    """One network transport as NCCL's topology and tuner see it, and what it costs the engine."""

    name: str
    nccl_net: str  # the NET name NCCL prints ('IB', 'Socket', 'AWS Libfabric', ...)
    fabrics: tuple[str, ...]  # ClusterSpec.fabric values it runs on
    gpudirect: bool  # can move GPU memory directly (GPUDirect RDMA / device-memory TCP)
    fuses_local_nics: bool  # one NCCL device per GPU striping over the GPU's NICs (plugin multi-rail)
    unpack: bool  # netDeviceType UNPACK: NCCL doubles collective channels (src/graph/connect.cc)
    source: str


_IB = ("NCCL's own IB verbs transport (src/transport/net_ib): the plugin latency it reports is 0 "
       "(net_ib getProperties), one QP per connection by default (NCCL_IB_QPS_PER_CONNECTION=1, net_ib/connect.cc)")

TRANSPORTS: dict[str, Transport] = {t.name: t for t in (
    Transport("ib", "IB", ("infiniband",), True, False, False,
              _IB + "; adaptive routing on by default on InfiniBand ports (net_ib/init.cc:439-442)"),
    Transport("roce", "IB", ("roce", "ethernet"), True, False, False,
              _IB + " over RoCEv2; adaptive routing off by default on Ethernet ports (net_ib/init.cc:439-442): "
                    "one hashed ECMP path per connection (flow label 0, net_ib/connect.cc:412-416)"),
    Transport("efa", "AWS Libfabric", ("ethernet", "roce"), True, True, False,
              "AWS EFA (SRD) through libfabric and aws-ofi-nccl: the EFA devices local to a GPU form one NCCL device "
              "whose speed is their sum (aws-ofi-nccl src/nccl_ofi_rdma.cpp:410-413; 'NIC group N device #0..#3' in "
              "p5 logs), a message striped over them in stripes of at least 128 KiB (src/nccl_ofi_scheduler.cpp:47-120, "
              "OFI_NCCL_MIN_STRIPE_SIZE, include/nccl_ofi_param.h:160); SRD sprays packets over many paths (AWS, "
              "'A Cloud-Optimized Transport Protocol for Elastic and Scalable HPC', IEEE Micro 2020)"),
    Transport("tcpx", "GPUDirectTCPX", ("ethernet", "roce"), True, False, True,
              "GCP GPUDirect-TCPX (A3 High): TCP with payload received into GPU memory and unpacked by a GPU kernel; "
              "the plugin reports latency 0 and netDeviceType UNPACK (google/nccl-plugin-gpudirecttcpx "
              "src/net_tcpx.cc:706-741)"),
    Transport("tcpxo", "FasTrak", ("ethernet", "roce"), True, False, False,
              "GCP GPUDirect-TCPXO (A3 Mega): TCP offloaded to Google's NIC; the plugin reports latency 0 and a "
              "host-type device (google/nccl-plugin-gpudirect-tcpxo tcpdirect_plugin/fastrak_offload/"
              "nccl_shim.cc:950-972)"),
    Transport("socket", "Socket", ("ethernet", "roce", "infiniband"), False, False, False,
              "NCCL's TCP socket transport (src/transport/net_socket.cc): host memory only (no GPUDirect), latency 0; "
              "IP over any fabric"),
)}

# The transport a fabric runs when the cluster file says 'auto'.
DEFAULT_TRANSPORT = {"infiniband": "ib", "roce": "roce", "ethernet": "roce", "none": ""}

"""GPU catalog: dense tensor FLOP/s, HBM, scale-up links and host PCIe, each with its source.

Figures come from NVIDIA datasheets and whitepapers, mostly as Klockwood-* and NV-NVLink tabulate them
(keys in docs/SOURCES.md), unless the source text says otherwise. FLOP/s are DENSE (datasheet sparse figure / 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.units import GB

ARCHS = ("pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna3")


@dataclass(frozen=True)
class GPU:
    """One GPU model. Link fields are keys of `fabricsim.hardware.LINKS`."""

    name: str
    arch: str
    compute_capability: float  # 0.0 for AMD
    bf16_flops: float  # dense tensor FLOP/s (FP16 tensor rate where there is no BF16; see notes)
    fp8_flops: float  # dense, 0.0 if none
    hbm_bytes: float
    hbm_bw: float  # bytes/s
    scaleup_link: str | None
    scaleup_links: int
    pcie_link: str
    tdp_w: float
    source: str
    notes: str = ""
    c2c_link: str | None = None  # NVLink-C2C to a Grace CPU (GB200 / GB300), else None
    fp4_flops: float = 0.0  # dense NVFP4 / MXFP4 tensor FLOP/s (Blackwell data-centre parts), 0.0 if none

    @property
    def block_scaled(self) -> bool:
        """Tensor cores that apply micro-block scales inside the MMA (MXFP8, NVFP4): Blackwell's 5th generation
        (NVIDIA Blackwell architecture technical brief, 'second-generation Transformer Engine'); Hopper has none."""
        return self.arch == "blackwell"


T = 1e12  # tera


def _gpus() -> list[GPU]:
    return [
        GPU("P100", "pascal", 6.0, 21.2 * T, 0.0, 16 * GB, 732 * GB, "nvlink1", 4, "pcie3", 300,
            source="P100 SXM2: hothardware GTC-2016, tech spec pages [S]; NVLink 1 x4 = 160 GB/s bidir [S]",
            notes="no tensor cores and no BF16: bf16_flops is the FP16 vector rate (2x FP32). HBM bandwidth "
                  "732 GB/s (datasheet) chosen over 720 GB/s (GTC-2016 launch), conflict #12"),
        GPU("V100", "volta", 7.0, 125 * T, 0.0, 32 * GB, 900 * GB, "nvlink2", 6, "pcie3", 300,
            source="V100 SXM2: NVIDIA 'Programming Tensor Cores in CUDA 9' [V]; NVLink 2 x6 = 300 GB/s bidir "
                   "(DGX-1 V100 whitepaper via iitr.ac.in) [S]",
            notes="no BF16: bf16_flops is the FP16 tensor rate at 1,530 MHz (125 TF, not the 120 TF launch "
                  "figure, conflict #13). 32 GB SKU (16 GB also exists)"),
        GPU("RTX2080Ti", "turing", 7.5, 53.8 * T, 0.0, 11 * GB, 616 * GB, "nvlink2", 2, "pcie3", 250,
            source="NVIDIA Turing architecture whitepaper, GeForce RTX 2080 Ti reference (1,545 MHz): FP16 tensor "
                   "107.6 TF with FP16 accumulate, 53.8 TF with FP32 accumulate; 11 GB GDDR6, 616 GB/s; 250 W; "
                   "2-way NVLink bridge 100 GB/s total = 2 NVLink 2 links [U: from memory of the whitepaper, "
                   "not checked against it]",
            notes="no BF16: bf16_flops is the FP16 tensor rate with FP32 accumulate (GeForce half rate), as for "
                  "RTX4090. PCIe 3.0 x16 host link. NVLink only as a 2-GPU bridge"),
        GPU("A100-40GB", "ampere", 8.0, 312 * T, 0.0, 40 * GB, 1555 * GB, "nvlink3", 12, "pcie4", 400,
            source="A100 SXM4 40 GB: Klockwood-A100 citing the NVIDIA A100 datasheet [S]; NVLink 3 x12 = 600 GB/s "
                   "bidir (NVIDIA 'Introducing HGX A100' devblog) [V]",
            notes="no FP8 on Ampere"),
        GPU("A100-80GB", "ampere", 8.0, 312 * T, 0.0, 80 * GB, 2039 * GB, "nvlink3", 12, "pcie4", 400,
            source="A100 SXM4 80 GB: Klockwood-A100 [S]; NVLink 3 x12 = 600 GB/s bidir [V]",
            notes="no FP8 on Ampere; a 500 W custom-thermal SKU exists [U]"),
        GPU("H100", "hopper", 9.0, 989.4 * T, 1978.9 * T, 80 * GB, 3.35e12, "nvlink4", 18, "pcie5", 700,
            source="H100 SXM5: Klockwood-H100, Scaleway docs, MLCommons system JSONs [S]; NVLink 4 x18 = 900 GB/s "
                   "bidir [S]; PCIe 5.0 x16",
            notes="dense figures (1,979 / 3,958 TF are sparse)"),
        GPU("H100-PCIe", "hopper", 9.0, 756 * T, 1513 * T, 80 * GB, 2.0e12, "nvlink4", 12, "pcie5", 350,
            source="H100 PCIe product brief PB-11133 via manuals.plus [S]: 80 GB HBM2e, '>2,000 GB/s', 350 W; "
                   "compute 756 / 1,513 TF dense [U]; NVLink bridge 600 GB/s bidir = 12 NVLink 4 links [S: "
                   "Azure/azurehpc-health-checks#162: on NCv5 H100 PCIe 12 of the 18 links are active by design]; "
                   "the 12 links carry 256.63 GB/s one way there (nvbandwidth device_to_device_memcpy_read_ce, "
                   "customTests/azure_gpu_bandwidth.nhc), 21.4 GB/s a link, like the 20.9 of an 18-link SXM5 H100's "
                   "~376 GB/s copy-engine writes (NVIDIA/nccl#1264) [D]",
            notes="NVLink only through 2-GPU bridges; compute figures not re-verified"),
        GPU("H800", "hopper", 9.0, 989.4 * T, 1978.9 * T, 80 * GB, 3.35e12, "nvlink4", 8, "pcie5", 700,
            source="H800 SXM: export variant of H100 SXM5 (same GH100 die, FP64 cut to ~1 TF, NVLink cut to "
                   "400 GB/s bidir = 8 NVLink 4 links): philisun.com 'H800 vs H100' [S]; DeepSeek member "
                   "mowentian, deepseek-ai/DeepSeek-V3#28: '400GB/s is the bidirectional theoretical value' [S]",
            notes="tensor, HBM and TDP as H100 SXM5 [U: assumed unchanged, sources only list NVLink and FP64 "
                  "cuts]"),
        GPU("H200", "hopper", 9.0, 989.4 * T, 1978.9 * T, 141 * GB, 4.8e12, "nvlink4", 18, "pcie5", 700,
            source="H200 SXM: lzwjava, aiminingco [S]; MLCommons v4.1 H200 JSON 'TGP 700W' [S]",
            notes="same silicon as H100; '1.97 PF dense' elsewhere is the sparse figure (conflict #1)"),
        GPU("B200", "blackwell", 10.0, 2250 * T, 4500 * T, 180 * GB, 8e12, "nvlink5", 18, "pcie5", 1000,
            source="HGX/DGX B200 (1,000 W): Klockwood-B200, hmc-tech [S]; NV-B200-RA '72 PFLOPS FP8, 1,440 GB HBM3' "
                   "for 8 GPUs [V]; NVLink 5 x18 = 1.8 TB/s bidir (NV-NVLink) [V]",
            notes="180 GB = DGX B200 1,440 GB / 8 (192 GB at launch; conflict #6). 8 TB/s from NVIDIA system "
                  "totals (7.7 TB/s in some sheets; #7). Host PCIe Gen5 though the die supports Gen6 (#11). "
                  "FP4 9,000 TF dense (18,000 sparse; Klockwood-B200, NV-B200-RA '144 PFLOPS FP4' for 8 GPUs)",
            fp4_flops=9000 * T),
        GPU("B300", "blackwell", 10.3, 2250 * T, 4500 * T, 288 * GB, 8e12, "nvlink5", 18, "pcie6", 1100,
            source="HGX B300 (Blackwell Ultra): Klockwood-B300 [S], verda.com [S]; NVLink 5 x18 [S]",
            notes="HGX B300 power envelope 1,100 W (GB300: 1,400 W, conflict #8). Host PCIe Gen6 through the "
                  "ConnectX-8 PCIe switch [S]. FP4 13,500 TF dense = HGX B300 108 PF dense / 8 (sources "
                  "differ: 105 vs 108 PF; Blackwell Ultra adds 50% dense NVFP4 over Blackwell: Hot Chips 2025 via tomshardware.com)",
            fp4_flops=13500 * T),
        GPU("GB200", "blackwell", 10.0, 2500 * T, 5000 * T, 186 * GB, 8e12, "nvlink5", 18, "pcie5", 1200,
            source="B200 inside the GB200 superchip (1,200 W): Klockwood-B200 [S]; 186 GB [D: 13.4-13.5 TB / 72]; "
                   "8 TB/s [D: 576 TB/s / 72]; NV-GB200-UG [V]",
            notes="one GPU of the superchip (1 Grace + 2 B200); 5 PF dense FP8 at 1,200 W, not the 4.5 PF HGX "
                  "value (conflict #9). CX-7 NICs on PCIe Gen5 of the compute tray [U: Grace- or GPU-attached]. "
                  "FP4 10,000 TF dense (Klockwood-B200; Hot Chips 2025 table via tomshardware.com: 10 PF per package)",
            c2c_link="nvlink-c2c", fp4_flops=10000 * T),
        GPU("GB300", "blackwell", 10.3, 2500 * T, 5000 * T, 288 * GB, 8e12, "nvlink5", 18, "pcie6", 1400,
            source="B300 inside GB300 NVL72: [D] rack 360 PF BF16 / 720 PF FP8 sparse / 72 / 2; 288 GB HBM3e; "
                   "8 TB/s (rack 576 TB/s); 1,400 W; Klockwood-B300, verda [S], NVL72 AI-factory RA [V]",
            notes="one GPU of the superchip (1 Grace + 2 B300); CX-8 800G NIC on PCIe Gen6. FP4 15,000 TF dense "
                  "(Hot Chips 2025, 'Blackwell Ultra: 15 PF dense NVFP4 per package, +50% over Blackwell', via tomshardware.com)",
            c2c_link="nvlink-c2c", fp4_flops=15000 * T),
        GPU("L40S", "ada", 8.9, 362.05 * T, 733 * T, 48 * GB, 864 * GB, None, 0, "pcie4", 350,
            source="L40S: mullet.se L40/L40S datasheet table, omegaco.ae [S]",
            notes="no NVLink. TDP 350 W (NVIDIA datasheet) over 300 W (TechPowerUp), conflict #14"),
        GPU("RTX4090", "ada", 8.9, 165.2 * T, 330.3 * T, 24 * GB, 1008 * GB, None, 0, "pcie4", 450,
            source="RTX 4090: Ada whitepaper figures via waredb, gigagpu, holynerdvana [S]",
            notes="FP32-accumulate tensor rates (GeForce half rate; FP16 accumulate doubles them), conflict #15. "
                  "No NVLink on Ada"),
        GPU("RTX5090", "blackwell", 12.0, 209.5 * T, 419.2 * T, 32 * GB, 1792 * GB, None, 0, "pcie5", 575,
            source="GeForce RTX 5090 (GB202, sm_120): 838.4 TF FP16 / 1,676.8 TF FP8 sparse with FP16 accumulate, "
                   "32 GB GDDR7, 1,792 GB/s, 575 W, PCIe 5.0 x16 (spheron.network spec table [S]); 209.5 TF FP16 "
                   "dense with FP32 accumulate (codesota [S])",
            notes="FP32-accumulate rates as for RTX4090; FP8 = half the FP16-accumulate dense 838.4 [D/U]. "
                  "Consumer Blackwell: no NVLink"),
        GPU("MI300X", "cdna3", 0.0, 1307.4 * T, 2614.9 * T, 192 * GB, 5.3e12, "xgmi", 7, "pcie5", 750,
            source="AMD MI300X: awesomeagents MI325X table, wheelersnetwork 2024-01 [S]; MLCommons 8x MI300X JSON "
                   "'750W', XGMI [S]; 7 xGMI links, 896 GB/s bidir, 8-GPU direct mesh [S]",
            notes="dense: 1,307.4 dense / 2,614.9 sparse BF16 (conflict #1). No switch: GPUs form a full mesh"),
    ]


GPUS: dict[str, GPU] = {gpu.name: gpu for gpu in _gpus()}

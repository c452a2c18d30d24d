"""Kernel efficiencies per GPU family, each from a published microbenchmark or paper, and the framework factor.

`training.compute` times every GEMM, attention kernel and memory-bound kernel of a step from these figures; a
framework then reaches `framework_factor` of that kernel-level rate (launch gaps, unfused small kernels, clocks
under the power limit), measured on one published single-node run per family and precision class (below).

Families: 'ampere', 'hopper', 'blackwell' (B200, GB200), 'blackwell-ultra' (B300, GB300: doubled SFU exponential
throughput), and 'other' (GPUs with no published training figures: Ada, Turing, Volta, Pascal, CDNA3), which takes
Hopper's kernel figures and a default framework factor, with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

# GEMM efficiency: a GEMM with inner dimension K reaches peak x GEMM_PEAK_FRACTION x K / (K + GEMM_K_HALF).
# The K term is each output tile's fixed prologue/epilogue cost; the two constants reproduce DeepGEMM's published
# H800 FP8 table (deepseek-ai/DeepGEMM PR #73: 4096x7168x16384 1470 TF, 4096x7168x2048 1204 TF, 4096x24576x1536
# 1166 TF, 4096x32768x512 748 TF of 1979: 0.743 / 0.608 / 0.589 / 0.378 against 0.747 / 0.612 / 0.575 / 0.384 here).
GEMM_K_HALF = 512
# Grouped (expert) GEMMs align every expert's token segment to the kernel's M block (DeepGEMM README, 'each expert
# segment must be aligned to the GEMM M block size'; 128 rows in CUTLASS / cuBLASLt grouped kernels).
GEMM_M_BLOCK = 128

# (family, GPU rate) -> (fraction of dense peak at K -> infinity, source)
GEMM_PEAK_FRACTION: dict[tuple[str, str], tuple[float, str]] = {
    ("hopper", "fp8_flops"): (0.767, "DeepGEMM PR #73 H800 (GH100) FP8 table, fitted with GEMM_K_HALF (see above)"),
    ("hopper", "bf16_flops"): (0.767, "same tile pipeline as FP8 on GH100 (assumed equal to DeepGEMM's FP8 figure)"),
    ("ampere", "bf16_flops"): (0.767, "assumed as Hopper; the Ampere framework factor absorbs the difference"),
    ("blackwell", "bf16_flops"): (0.73, "vLLM PR #20646 and #19566 (bench_fp8_gemm on B200, N=6144 K=4096, M=16384): "
                                        "torch BF16 1,360-1,513 TF of 2,250 = 0.60-0.67 at K=4096"),
    ("blackwell", "fp8_flops"): (0.64, "vLLM PR #19566 (B200, N=6144 K=4096, M=16384): FP8 tensor-scaled CUTLASS, "
                                       "no quantization, 2,545 TF of 4,500 = 0.566 at K=4096"),
    ("blackwell", "fp4_flops"): (0.49, "vLLM PR #20646 (B200, N=6144 K=4096, M=16384): NVFP4 CUTLASS, no quantization, "
                                       "3,904 TF of 9,000 = 0.434 at K=4096"),
}

# Flash attention, (forward, backward) fraction of the dense BF16 peak at head dim 128, causal, long sequences.
ATTENTION: dict[str, tuple[float, float, str]] = {
    "ampere": (0.70, 0.60, "FlashAttention-2 (Dao 2023, arXiv:2307.08691) sec. 4.1: forward up to 73% of A100 peak, "
                           "backward up to 63%"),
    "hopper": (0.75, 0.55, "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608) Fig. 5-6: BF16 forward 740 TF (75%), "
                           "backward ~550 TF at head dim 128"),
    "blackwell": (0.55, 0.40, "FlashAttention-4 (Dao et al. 2026) reports 1,613 TF forward on B200 (71.7%) and 1.3x over "
                              "cuDNN 9.13, the kernel Transformer Engine runs: 0.55; backward at Hopper's backward/forward "
                              "ratio (0.73)"),
    "blackwell-ultra": (0.55 * 1.35, 0.40 * (1 + 0.35 * 2 / 5),
                        "Blackwell's, with the forward 35% faster (NVIDIA technical blog 'Making Softmax More Efficient "
                        "with NVIDIA Blackwell Ultra': doubled MUFU.EX2 throughput, ~35% FPROP gain for DeepSeek-V3 "
                        "attention on GB300 vs GB200); the backward runs one exponential per 5 matmuls instead of 2, "
                        "so it gains 2/5 of that"),
}
ATTENTION_HEAD_DIM_64 = (0.75, "FlashAttention-3 Fig. 5: head dim 64 runs at ~3/4 of head dim 128's TFLOP/s")
# Softmax exponentials per attention score run on the SFUs: 16 MUFU.EX2 per clock per SM (CUDA C++ Programming
# Guide, arithmetic instruction throughput; unchanged on Blackwell, doubled on Blackwell Ultra: NVIDIA 'Making Softmax
# More Efficient with NVIDIA Blackwell Ultra'), against dense BF16 tensor FLOPs per clock per SM of 2048 (A100),
# 4096 (H100), 8192 (B200). So a score costs this many tensor FLOPs' time in exponentials; a forward pass does
# 4 x head_dim FLOPs per score (QK^T and PV), its backward 10 x head_dim, and flash attention overlaps the two, so a
# head dim with fewer FLOPs per score than this is bound by the SFUs (FlashAttention-4 sec. 1: Blackwell's exponential
# units did not scale with its tensor cores).
TENSOR_FLOPS_PER_EXP = {"ampere": 128, "hopper": 256, "blackwell": 512, "blackwell-ultra": 256, "other": 256}
ATTENTION_TILE = 128  # keys per Flash-Attention tile: a sliding window computes whole tiles (FA3 block_n = 128)

# Memory-bound kernels (norms, activations, casts, permutes, the optimizer) stream at this fraction of HBM bandwidth.
HBM_EFFICIENCY = (0.8, "STREAM-like copy kernels reach 80-90% of HBM bandwidth on A100/H100/B200 (e.g. 6.0 TB/s "
                       "device-to-device on B200 of 8 TB/s, newmind.ai B200 benchmark via TogetherAI)")


@dataclass(frozen=True)
class Anchor:
    """A published single-node run whose measured compute rate, divided by the kernel-level rate fabricsim predicts
    for the same run, gives the framework factor of its family and precision class."""

    family: str
    precision_class: str  # 'bf16' | 'low' (every FP8 / FP4 recipe)
    model: str
    gpu: str
    gpus: int
    micro_batch: int
    global_batch: int
    seq: int
    zero: int
    measured_tokens_per_s_per_gpu: float
    precision: str
    source: str
    peak_fraction: float = 0.0  # the run's published hardware FLOP/s over the dense peak of its precision


ANCHORS = (
    Anchor("ampere", "bf16", "mpt-7b", "A100-80GB", 8, 6, 96, 2048, 3, 4641.0, "bf16",
           "MosaicML llm-foundry scripts/train/benchmarking/README.md: MPT-7B, 8x A100-80GB, FSDP, no activation "
           "checkpointing, 4,641 tokens/s/GPU (HFU 64.23%)", 0.6423),
    Anchor("hopper", "bf16", "mpt-7b", "H100", 8, 6, 48, 2048, 3, 10643.0, "bf16",
           "MosaicML llm-foundry benchmarks: MPT-7B, 8x H100-80GB, amp_bf16, no activation checkpointing, "
           "10,643 tokens/s/GPU (HFU 46.44%)", 0.4644),
    Anchor("hopper", "low", "llama2-7b", "H100", 8, 1, 128, 4096, 1, 16847.0, "fp8",
           "NVIDIA NeMo 24.07 performance summary: Llama2-7B, 8x H100 (DP 8), FP8, 16,847 tokens/s/GPU (776 model "
           "TFLOP/s of the 1,978.9 dense FP8 peak)", 776 / 1978.9),
)
# Families without an anchor of their own borrow one: Blackwell runs the same Megatron-Core / Transformer Engine
# stack as Hopper (kernel differences are in the tables above); GPUs with no published training runs take Hopper's.
ANCHOR_FAMILY = {"blackwell": "hopper", "blackwell-ultra": "hopper", "other": "hopper"}


def default_efficiency(arch: str, precision: str) -> tuple[float, str]:
    """(fraction of the precision's dense peak, source) that a whole step's FLOPs reach on a GPU architecture: the
    published single-node figure of its anchor run (for FLOP-counted work without a kernel breakdown, e.g. trace
    replay). Architectures without an anchor take Hopper's, and the source says so."""
    fam = arch if arch in ("ampere", "hopper") else "other"
    cls = "bf16" if precision == "bf16" else "low"
    key = (ANCHOR_FAMILY.get(fam, fam), cls)
    anchor = next((a for a in ANCHORS if (a.family, a.precision_class) == key), None)
    if anchor is None:
        anchor = next(a for a in ANCHORS if (a.family, a.precision_class) == (key[0], "bf16"))
    borrowed = "" if fam == key[0] else f"{arch}: no published figure, using {key[0]}'s ("
    return anchor.peak_fraction, borrowed + anchor.source + (")" if borrowed else "")


def family(gpu) -> str:
    """The efficiency family of a catalog GPU."""
    if gpu.arch == "blackwell":
        if not gpu.block_scaled or gpu.fp4_flops == 0:
            return "other"
        return "blackwell-ultra" if gpu.compute_capability >= 10.3 else "blackwell"
    return gpu.arch if gpu.arch in ("ampere", "hopper") else "other"


def gemm_peak_fraction(fam: str, rate: str) -> float:
    """GEMM_PEAK_FRACTION for a family (Ultra and unlisted families take Blackwell's / Hopper's)."""
    base = {"blackwell-ultra": "blackwell", "other": "hopper"}.get(fam, fam)
    if (base, rate) in GEMM_PEAK_FRACTION:
        return GEMM_PEAK_FRACTION[(base, rate)][0]
    return GEMM_PEAK_FRACTION[(base, "bf16_flops")][0] if (base, "bf16_flops") in GEMM_PEAK_FRACTION else 0.767


def attention_efficiency(fam: str) -> tuple[float, float]:
    """(forward, backward) flash-attention fraction of the BF16 peak at head dim 128."""
    fwd, bwd, _ = ATTENTION.get(fam, ATTENTION["hopper"])
    return fwd, bwd

"""Training precisions: which tensor-core rate each one's GEMMs run at, which GPUs have it, what it costs around
the GEMMs, and what stays in BF16.

In every recipe (Transformer Engine `fp8_autocast` / `fp4` in Megatron-Core) only the Linear layers of the
transformer blocks run in low precision (fprop, dgrad and wgrad GEMMs). These stay BF16 (or FP32): the core
attention (TE DotProductAttention without `fp8_dot_product_attention`), the output layer and its loss (Megatron-
Core's `output_layer` is a plain ColumnParallelLinear outside TE), the embedding, the router (FP32 logits), norms,
activations and the MoE token permutation. Activations and gradients cross the network as BF16; the parameter
all-gather of the distributed optimizer / FSDP moves 1-byte FP8 weights when `fp8_param_gather` is on
(Megatron-Bridge `training/mixed_precision.py`: on for FP8 current scaling and MXFP8, off for blockwise FP8 and
NVFP4).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.errors import FabricsimError


@dataclass(frozen=True)
class Precision:
    name: str
    rate: str  # the GPU field that sets the GEMM rate: bf16_flops | fp8_flops | fp4_flops
    block_scaled: bool  # needs tensor cores that apply micro-block scales (Blackwell)
    element_bytes: float  # bytes per quantized element, scale factors included
    param_gather_bytes: float  # bytes per parameter of the ZeRO / FSDP parameter all-gather
    transposed_copy: bool  # the quantizer also writes a transposed copy (Hopper FP8 GEMMs take only TN layouts)
    extra_passes: float  # further full reads + writes of each quantized tensor (amax, Hadamard transforms)
    description: str


PRECISIONS: dict[str, Precision] = {p.name: p for p in (
    Precision("bf16", "bf16_flops", False, 2.0, 2.0, False, 0.0, "BF16 mixed precision (FP32 master weights)"),
    Precision("fp8", "fp8_flops", False, 1.0, 1.0, True, 1.0,
              "FP8 E4M3/E5M2 with one scale per tensor (TE Float8CurrentScaling or DelayedScaling; current scaling "
              "reads each tensor once more for its amax before casting)"),
    Precision("fp8-block", "fp8_flops", False, 1.0 + 4 / 128, 2.0, True, 0.0,
              "FP8 with 1x128 activation and 128x128 weight blocks, FP32 scales (DeepSeek-V3 report sec. 3.3.2; "
              "TE Float8BlockScaling); Megatron-Bridge gathers its parameters in BF16"),
    Precision("mxfp8", "fp8_flops", True, 1.0 + 1 / 32, 1.0, False, 0.0,
              "MXFP8: 1x32 blocks with an E8M0 scale each (OCP Microscaling spec v1.0; TE MXFP8BlockScaling), "
              "Blackwell tensor cores"),
    Precision("nvfp4", "fp4_flops", True, 0.5 + 1 / 16, 2.0, False, 1.0,
              "NVFP4: E2M1 values in 1x16 blocks with E4M3 scales and an FP32 tensor scale (TE NVFP4BlockScaling); "
              "16-point random Hadamard transforms on wgrad inputs and stochastic rounding of gradients (NVIDIA, "
              "'Pretraining LLMs with NVFP4', arXiv:2509.25149 sec. 4) add a pass over those tensors"),
)}


def precision(name: str) -> Precision:
    """The named precision, or a FabricsimError listing them."""
    if name not in PRECISIONS:
        raise FabricsimError(f"unknown precision '{name}': use one of {', '.join(PRECISIONS)}")
    return PRECISIONS[name]


def gemm_peak(gpu, name: str) -> float:
    """Dense tensor FLOP/s of `gpu` for the low-precision GEMMs of precision `name`; a FabricsimError names the fix
    when the GPU has no such tensor cores."""
    p = precision(name)
    rate = float(getattr(gpu, p.rate))
    if rate <= 0 or p.block_scaled and not gpu.block_scaled:
        have = [q for q in PRECISIONS.values() if getattr(gpu, q.rate) > 0 and (gpu.block_scaled or not q.block_scaled)]
        raise FabricsimError(f"the {gpu.name} ({gpu.arch}) has no {name} tensor cores: use "
                             f"{' or '.join(q.name for q in have)}")
    return rate

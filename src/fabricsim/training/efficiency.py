"""Default compute efficiency: the fraction of the run precision's dense peak that the kernels of one
training step reach while computing (hardware FLOPs, recompute included), per GPU architecture.

Each default is a published hardware-FLOPs utilisation (HFU) measured on ONE node with pure data
parallelism and no activation checkpointing, where communication runs over NVLink and overlaps with
compute: the closest published figure to "compute alone". Users override it with `efficiency=`.
"""

from __future__ import annotations

from fabricsim.errors import FabricsimError

# (arch, precision) -> (efficiency, source)
EFFICIENCY: dict[tuple[str, str], tuple[float, str]] = {
    ("ampere", "bf16"): (0.6423, "MosaicML llm-foundry benchmarks (scripts/train/benchmarking/README.md): MPT-7B, 8x A100-80GB, "
                                 "no activation checkpointing, HFU 64.23%"),
    ("hopper", "bf16"): (0.4644, "MosaicML llm-foundry benchmarks: MPT-7B, 8x H100-80GB, amp_bf16, no activation checkpointing, HFU 46.44%"),
    ("hopper", "fp8"): (776 / 1978.9, "NVIDIA NeMo 24.07 performance summary: Llama2-7B, 8x H100 (DP 8), FP8, 776 model TFLOP/s "
                                      "of the 1,978.9 dense FP8 peak (selective recompute adds < 1%)"),
}
# Blackwell: no published per-GPU training utilisation in our references; Hopper's figures are used and
# flagged (same tensor-core generation's software stack). Override with an explicit efficiency.
_FALLBACK = {"blackwell": "hopper"}


def default_efficiency(arch: str, precision: str) -> tuple[float, str]:
    """(efficiency, source) for a GPU architecture and precision."""
    key = (arch, precision)
    if key in EFFICIENCY:
        return EFFICIENCY[key]
    if (_FALLBACK.get(arch), precision) in EFFICIENCY:
        value, source = EFFICIENCY[(_FALLBACK[arch], precision)]
        return value, f"{arch}: no published figure, using {_FALLBACK[arch]}'s ({source})"
    known = ", ".join(f"{a}/{p}" for a, p in EFFICIENCY)
    raise FabricsimError(
        f"no published compute efficiency for {arch} GPUs at {precision} (known: {known}): pass an explicit efficiency, e.g. --efficiency 0.45")

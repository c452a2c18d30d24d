"""Transformer model specs: shapes, parameter counts and FLOPs per token.

FLOP conventions (model FLOPs per trained token, forward + backward = 3 x forward, a multiply-add = 2 FLOPs;
`CONVENTIONS` names them, and `train` output says which one each figure uses):
- 'megatron' (default; Megatron-LM `num_floating_point_operations` up to 2024, Narayanan et al. 2021 eq. 3
  without recompute, and NeMo 24.07's "model TFLOP/s"): 6 x (non-embedding activated parameters + output
  projection V*h) + 12 * layers * hidden * seq for attention scores and values (the full s x s product).
- 'megatron-bridge' (Megatron-Bridge `training/utils/flop_utils.py`, the "Model TFLOP/s" of its performance
  summary): as 'megatron', but attention counts the causal half (seq / 2) with the real query width, GQA key/value
  projections, MLA's low-rank projections, multi-token-prediction layers, and a gated MLP counts 3/2 only when
  its activation is SiLU (a GELU-gated MLP, GPT-OSS, counts as two matrices). Sliding windows are ignored.
- 'mosaic' (MosaicML llm-foundry `flops_per_batch`): 6 x all activated parameters (embeddings included) + the
  same 12 * layers * hidden * seq attention term.
- 'narayanan' (Narayanan et al. 2021, arXiv:2104.04473 eq. 3, the per-GPU teraFLOP/s and % of peak of its
  Table 1): 'megatron' plus the forward pass that full activation recomputation repeats (96 B s l h^2 instead
  of 72 B s l h^2; the logits are not recomputed).
- '6n' (Kaplan et al. 2020): 6 x non-embedding activated parameters, no attention term.
Model FLOPs never include activation recomputation (except 'narayanan', as published); the hardware work a
step really does (causal and windowed attention, recompute, Flash-Attention's backward) is `training.compute`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta

from fabricsim import inputs
from fabricsim.errors import FabricsimError

CONVENTIONS = ("megatron", "megatron-bridge", "mosaic", "narayanan", "6n")

# Bounds of a model file's fields, each far beyond published models. Layers bound the layout search too: it
# tries every pipeline depth up to the layer count.
MAX_LAYERS = 10_000  # 10x the deepest transformer trained (DeepNet, 1,000 layers: Wang et al. 2022, arXiv:2203.00555)
MAX_WIDTH = 1 << 20  # hidden, head and low-rank widths: 57x the widest published (18,432: Nemotron-4 340B, PaLM 540B)
MAX_FFN = 1 << 22  # 57x the widest published FFN (73,728: Nemotron-4 340B)
MAX_VOCAB = 1 << 24  # 65x the largest published vocabulary (256,000: Nemotron-4, Gemma)
MAX_SEQ = 1 << 27  # 13x the longest published context (10M tokens: Gemini 1.5 report, arXiv:2403.05530)
MAX_HEADS = 1 << 16
MAX_EXPERTS = 1 << 20  # PEER's 1,048,576 experts (He 2024, arXiv:2407.04153), the most published


Layers = Annotated[int, Meta(ge=1, le=MAX_LAYERS)]
Width = Annotated[int, Meta(ge=1, le=MAX_WIDTH)]
OptionalWidth = Annotated[int, Meta(ge=0, le=MAX_WIDTH)]  # 0: not used / derived
Heads = Annotated[int, Meta(ge=1, le=MAX_HEADS)]
Ffn = Annotated[int, Meta(ge=0, le=MAX_FFN)]
Experts = Annotated[int, Meta(ge=1, le=MAX_EXPERTS)]
Count = Annotated[int, Meta(ge=0, le=MAX_EXPERTS)]  # shared experts, router groups
LayerCount = Annotated[int, Meta(ge=0, le=MAX_LAYERS)]


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer. Dense when experts == 1.

    MoE: the last `layers - dense_layers` layers replace the FFN by `experts` routed experts of
    width `moe_ffn` (each token visits `top_k`) plus `shared_experts` always-on experts.
    MLA (DeepSeek): when `kv_lora_rank` > 0 attention uses low-rank Q (`q_lora_rank`) and KV
    (`kv_lora_rank`) projections with per-head dims `head_dim` (no-RoPE part), `rope_dim` and `v_head_dim`.
    Sliding windows: `windowed_layers` of the layers attend to the last `window` tokens only (GPT-OSS alternates
    banded and dense layers). `mtp_layers`: DeepSeek-V3 multi-token-prediction modules (one transformer layer,
    a 2h -> h projection and the shared output head each). `activation`: the MLP's nonlinearity ('silu' for
    SwiGLU; FLOP conventions that count gating only for SiLU read it). `linear_bias`, `activation_clamp` and
    `rope_yarn_factor` change which kernels Megatron-Core runs (see `training.compute`), not the FLOPs.
    """

    name: Annotated[str, Meta(min_length=1)]
    layers: Layers
    hidden: Width
    heads: Heads
    kv_heads: Heads
    ffn: Ffn
    vocab: Annotated[int, Meta(ge=1, le=MAX_VOCAB)]
    seq: Annotated[int, Meta(ge=1, le=MAX_SEQ)]
    experts: Experts = 1
    top_k: Experts = 1
    moe_ffn: Ffn = 0
    shared_experts: Count = 0
    # leading dense layers of an MoE model; -1: all dense when experts == 1, none otherwise
    dense_layers: Annotated[int, Meta(ge=-1, le=MAX_LAYERS)] = -1
    gated: bool = True  # SwiGLU-style FFN with 3 matrices instead of 2
    tied_embeddings: bool = False
    head_dim: OptionalWidth = 0  # 0: hidden // heads
    q_lora_rank: OptionalWidth = 0
    kv_lora_rank: OptionalWidth = 0
    rope_dim: OptionalWidth = 0
    v_head_dim: OptionalWidth = 0
    window: Annotated[int, Meta(ge=0, le=MAX_SEQ)] = 0  # sliding-window width in tokens (0: full causal attention)
    windowed_layers: LayerCount = 0  # how many layers use the sliding window
    mtp_layers: LayerCount = 0  # DeepSeek-V3 multi-token prediction modules
    activation: Literal["silu", "gelu", "quick-gelu", "squared-relu"] = "silu"  # silu: SwiGLU
    dropout: Annotated[float, Meta(ge=0, lt=1)] = 0.0  # hidden / attention dropout: masks kept for the backward (1 B each)
    router_groups: Count = 0  # group-limited routing: experts in this many groups (DeepSeek-V3 n_group)
    router_group_topk: Count = 0  # ... of which a token uses this many (topk_group)
    linear_bias: bool = False  # biases on the Linear layers (Megatron add_bias_linear)
    # the GLU's inputs clamped to this magnitude (activation_func_clamp_value; 0: none), 1e5x GPT-OSS's 7
    activation_clamp: Annotated[float, Meta(ge=0, le=1e6)] = 0.0
    rope_yarn_factor: Annotated[float, Meta(ge=0, le=MAX_SEQ)] = 0.0  # YaRN RoPE scaling factor (0: plain RoPE)
    source: str = ""

    def __post_init__(self) -> None:
        inputs.check_fields(self, "model")
        _check(self)

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def n_dense_layers(self) -> int:
        if self.dense_layers >= 0:
            return self.dense_layers
        return 0 if self.is_moe else self.layers

    @property
    def n_moe_layers(self) -> int:
        return self.layers - self.n_dense_layers

    @property
    def kv_dim(self) -> int:
        """Width of K (= V) per token over all KV heads: what context parallelism exchanges."""
        if self.kv_lora_rank:
            return self.kv_lora_rank + self.rope_dim  # MLA caches the compressed latent (DeepSeek-V2 sec. 2.1)
        return self.kv_heads * (self.head_dim or self.hidden // self.heads)

    @cached_property
    def attention_params(self) -> int:
        h, hd = self.hidden, self.head_dim or self.hidden // self.heads
        if self.kv_lora_rank:
            qk = hd + self.rope_dim
            q = h * self.q_lora_rank + self.q_lora_rank * self.heads * qk if self.q_lora_rank else h * self.heads * qk
            kv = h * (self.kv_lora_rank + self.rope_dim) + self.kv_lora_rank * self.heads * (hd + self.v_head_dim)
            return q + kv + self.heads * self.v_head_dim * h
        return h * self.heads * hd * 2 + h * self.kv_heads * hd * 2

    def _ffn_params(self, width: int) -> int:
        return (3 if self.gated else 2) * self.hidden * width

    @cached_property
    def expert_params(self) -> int:
        """Parameters of all routed experts (what expert parallelism shards)."""
        return self.n_moe_layers * self.experts * self._ffn_params(self.moe_ffn)

    @cached_property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    def _layer_params(self, experts_counted: int) -> tuple[int, int]:
        dense = self.n_dense_layers * (self.attention_params + self._ffn_params(self.ffn))
        moe_each = (
            self.attention_params
            + (experts_counted + self.shared_experts) * self._ffn_params(self.moe_ffn)
            + self.hidden * self.experts  # router
        )
        return dense, self.n_moe_layers * moe_each

    @cached_property
    def params(self) -> int:
        """Total parameters (norms and biases ignored: < 0.1%)."""
        return sum(self._layer_params(self.experts)) + self.embedding_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token uses: top_k routed experts only."""
        return sum(self._layer_params(self.top_k)) + self.embedding_params

    @cached_property
    def active_nonembedding_params(self) -> int:
        return sum(self._layer_params(self.top_k))

    @property
    def q_dim(self) -> int:
        """Width of the attention output (heads x value head dim): the out-projection's input."""
        return self.heads * (self.v_head_dim or self.head_dim or self.hidden // self.heads)

    def flops_per_token(self, seq: int | None = None, convention: str = "megatron") -> float:
        """Model FLOPs (fwd + bwd) per trained token; see the module docstring for conventions."""
        s = seq or self.seq
        attention = 12.0 * self.layers * self.hidden * s
        if convention == "megatron":
            return 6.0 * (self.active_nonembedding_params + self.vocab * self.hidden) + attention
        if convention == "narayanan":
            return (8.0 * self.active_nonembedding_params + attention * 4.0 / 3.0) + 6.0 * self.vocab * self.hidden
        if convention == "megatron-bridge":
            return self._bridge_flops(s)
        if convention == "mosaic":
            return 6.0 * self.active_params + attention
        if convention == "6n":
            return 6.0 * self.active_nonembedding_params
        raise FabricsimError(f"unknown FLOP convention '{convention}': use one of {', '.join(CONVENTIONS)}")

    def _bridge_flops(self, s: int) -> float:
        """Megatron-Bridge `num_floating_point_operations` (training/utils/flop_utils.py, transformer branch) per token."""
        h, layers = self.hidden, self.layers + self.mtp_layers
        gate = 1.5 if self.gated and self.activation == "silu" else 1.0
        moe_layers = self.n_moe_layers + (self.mtp_layers if self.is_moe else 0)
        dense_layers = layers - moe_layers
        mlp = 12.0 * h * (self.ffn * gate * dense_layers + self.moe_ffn * (self.top_k + self.shared_experts) * gate * moe_layers)
        if self.kv_lora_rank:
            qk = self.head_dim + self.rope_dim
            q = self.q_lora_rank * (h + self.heads * qk + 1) if self.q_lora_rank else h * self.heads * qk
            per_layer = (q + self.kv_lora_rank * (h + self.heads * (self.head_dim + self.v_head_dim) + 1)
                         + h * self.rope_dim + self.heads * self.v_head_dim * h
                         + s * self.heads * qk / 2 + s * self.heads * self.v_head_dim / 2)
            attn = 6.0 * layers * per_layer
        else:
            hd = self.head_dim or h // self.heads
            ratio = self.heads * hd / h
            attn = 12.0 * layers * h * h * (1 + self.kv_heads / self.heads + s / h / 2) * ratio
        mtp = 6.0 * self.mtp_layers * (3 * h + 2 * h * h)
        return mlp + attn + mtp + 6.0 * h * self.vocab * (self.mtp_layers + 1)

    def attention_flops_per_token(self, seq: int | None = None) -> float:
        """The s x s part (QK^T and AV, fwd + bwd) of `flops_per_token`."""
        return 12.0 * self.layers * self.hidden * (seq or self.seq)


def _check(m: ModelSpec) -> None:
    """Checks across fields (each field's own type and range: the annotations)."""
    if m.heads % m.kv_heads:
        raise FabricsimError(f"heads ({m.heads}) must be a multiple of kv_heads ({m.kv_heads})")
    if not m.head_dim and m.hidden % m.heads:  # Megatron-Core: kv_channels = hidden // heads unless given
        raise FabricsimError(f"hidden ({m.hidden}) is not a multiple of heads ({m.heads}), so the head size is not "
                             "whole: set head_dim, or give hidden and heads that divide")
    if m.is_moe and (m.moe_ffn < 1 or m.top_k > m.experts):
        raise FabricsimError(f"an MoE model needs moe_ffn >= 1 and top_k <= experts ({m.experts})")
    if m.n_dense_layers > m.layers:
        raise FabricsimError(f"dense_layers ({m.dense_layers}) exceeds layers ({m.layers})")
    if not m.is_moe and m.ffn < 1:
        raise FabricsimError("a dense model needs ffn >= 1")


def _m(**kw) -> ModelSpec:
    return ModelSpec(**kw)


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _m(name="gpt3-175b", layers=96, hidden=12288, heads=96, kv_heads=96, ffn=49152, vocab=50257, seq=2048,
           gated=False, tied_embeddings=True, activation="gelu", dropout=0.1,
           source="Brown et al. 2020 (arXiv:2005.14165) Table 2.1: 96 layers, d_model 12288, 96 heads, ctx 2048; GPT-2 BPE vocab 50257; ffn = 4 d_model"),
        _m(name="llama3-8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, seq=8192,
           source="Llama 3 paper (arXiv:2407.21783) Table 3; HF meta-llama/Meta-Llama-3-8B config.json (intermediate_size 14336, vocab 128256)"),
        _m(name="llama3-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256, seq=8192,
           source="Llama 3 paper (arXiv:2407.21783) Table 3; HF meta-llama/Meta-Llama-3-70B config.json (intermediate_size 28672)"),
        _m(name="llama3-405b", layers=126, hidden=16384, heads=128, kv_heads=8, ffn=53248, vocab=128256, seq=8192,
           source="Llama 3 paper (arXiv:2407.21783) Table 3 (126 layers, 16384 dim, FFN 53248, 128 heads, 8 KV heads)"),
        _m(name="mixtral-8x7b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, seq=32768,
           experts=8, top_k=2, moe_ffn=14336,
           source="Jiang et al. 2024 (arXiv:2401.04088) Table 1: dim 4096, 32 layers, 32 heads, 8 KV heads, hidden 14336, 8 experts, top-2, vocab 32000, ctx 32768; 46.7B total / 12.9B active"),
        _m(name="deepseek-v3", layers=61, hidden=7168, heads=128, kv_heads=128, ffn=18432, vocab=129280, seq=4096,
           experts=256, top_k=8, moe_ffn=2048, shared_experts=1, dense_layers=3,
           head_dim=128, q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, v_head_dim=128, mtp_layers=1,
           router_groups=8, router_group_topk=4,
           source="DeepSeek-V3 report (arXiv:2412.19437) sec. 4.2 and HF deepseek-ai/DeepSeek-V3 config.json: 61 layers (first 3 dense, ffn 18432), "
                  "hidden 7168, MLA (128 heads, q_lora 1536, kv_lora 512, qk_nope 128, rope 64, v 128), 256 routed experts (2048) + 1 shared, top-8, vocab 129280; "
                  "pre-training seq 4096; group-limited routing (n_group 8, topk_group 4: 'each token is sent to at most 4 nodes', "
                  "sec. 3.2.2); one multi-token-prediction module (sec. 2.2; Megatron-Bridge recipes/deepseek/deepseek_v3.py mtp_num_layers=1); "
                  "671B total / 37B active (MTP module excluded)"),
        _m(name="gpt-oss-120b", layers=36, hidden=2880, heads=64, kv_heads=8, head_dim=64, ffn=2880, vocab=201088, seq=4096,
           experts=128, top_k=4, moe_ffn=2880, window=128, windowed_layers=18, activation="quick-gelu",
           linear_bias=True, activation_clamp=7.0, rope_yarn_factor=32.0,
           source="OpenAI gpt-oss-120b model card (arXiv:2508.10925) Table 1 and sec. 2.1: 36 layers, residual width 2880, 128 experts "
                  "(width 2880, SwiGLU) top-4, 64 query heads of 64 dims and 8 KV heads (GQA), layers alternate a 128-token banded window and "
                  "dense attention, o200k_harmony vocab 201,088; 116.8B total / 5.1B active; Megatron-Bridge models/gpt_oss/gpt_oss_provider.py "
                  "(window_size (128, 0), window_attn_skip_freq 2, quick_gelu GLU, add_bias_linear, activation_func_clamp_value 7.0, "
                  "YaRN RoPE with yarn_rotary_scaling_factor 32); seq 4096 is the Megatron-Bridge performance recipe's"),
        _m(name="gpt3-175b-v131k", layers=96, hidden=12288, heads=96, kv_heads=96, ffn=49152, vocab=131072, seq=4096,
           gated=False, tied_embeddings=True, activation="gelu",
           source="NVIDIA/Megatron-LM README (Performance benchmarking): 'the standard GPT-3 model (slightly more than 175 billion parameters "
                  "due to larger vocabulary size)', 'All models use a vocabulary size of 131,072 and a sequence length of 4096'; GPT-3 shape "
                  "from Brown et al. 2020 Table 2.1 (96 layers, d_model 12288, 96 heads); Megatron's GPT ties embeddings by default"),
        _m(name="gpt-1t", layers=128, hidden=25600, heads=160, kv_heads=160, ffn=102400, vocab=51200, seq=2048,
           gated=False, tied_embeddings=True, activation="gelu",
           source="Narayanan et al. 2021 (arXiv:2104.04473) Table 1, 1008B row; NVIDIA/Megatron-LM examples/academic_paper_scripts/sc21/"
                  "run_table_1.sh (1T: 128 layers, hidden 25600, 160 heads) and CONFIG.sh (seq 2048, GPT-2 BPE vocab padded to 51,200)"),
        # Architectures of the published training benchmarks of the calibration set (used by validation.training).
        _m(name="gpt3-5b", layers=24, hidden=4096, heads=32, kv_heads=32, ffn=16384, vocab=50257, seq=2048, gated=False, tied_embeddings=True,
           activation="gelu", dropout=0.1,
           source="NeMo-Framework-Launcher conf/training/gpt3/5b.yaml (24 layers, hidden 4096, ffn 16384, 32 heads, hidden and attention dropout 0.1)"),
        _m(name="gpt3-20b", layers=44, hidden=6144, heads=48, kv_heads=48, ffn=24576, vocab=50257, seq=2048, gated=False, tied_embeddings=True,
           activation="gelu", dropout=0.1,
           source="NeMo-Framework-Launcher conf/training/gpt3/20b.yaml (44 layers, hidden 6144, ffn 24576, 48 heads, dropout 0.1)"),
        _m(name="llama2-7b", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, seq=4096,
           source="Touvron et al. 2023 (arXiv:2307.09288); HF meta-llama/Llama-2-7b-hf config.json"),
        _m(name="llama2-13b", layers=40, hidden=5120, heads=40, kv_heads=40, ffn=13824, vocab=32000, seq=4096,
           source="HF meta-llama/Llama-2-13b-hf config.json"),
        _m(name="llama2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=32000, seq=4096,
           source="HF meta-llama/Llama-2-70b-hf config.json"),
        _m(name="nemotron-8b", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=16384, vocab=256000, seq=4096, gated=False,
           activation="squared-relu", source="NeMo-Framework-Launcher conf/training/nemotron/nemotron_8b.yaml (squared-ReLU, untied, vocab 256000)"),
        _m(name="nemotron-22b", layers=40, hidden=6144, heads=48, kv_heads=48, ffn=24576, vocab=256000, seq=4096, gated=False,
           activation="squared-relu", source="NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml (40 layers, hidden 6144, ffn 24576, 48 heads, squared-ReLU, untied)"),
        _m(name="nemotron-340b", layers=96, hidden=18432, heads=96, kv_heads=8, ffn=73728, vocab=256000, seq=4096, gated=False,
           activation="squared-relu", source="Nemotron-4 340B report (arXiv:2406.11704) Table 1: 96 layers, hidden 18432, 96 heads, 8 KV heads, vocab 256000, squared-ReLU"),
        *(
            _m(name=f"mpt-{tag}", layers=nl, hidden=d, heads=nh, kv_heads=nh, ffn=4 * d, vocab=50368, seq=2048, gated=False, tied_embeddings=True,
               activation="gelu", source=f"mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-{tag}.yaml (d_model {d}, n_heads {nh}, n_layers {nl}, expansion 4, vocab 50368, tied wte)")
            for tag, d, nh, nl in (("1b", 2048, 16, 24), ("3b", 2560, 20, 32), ("7b", 4096, 32, 32),
                                   ("13b", 5120, 40, 40), ("30b", 7168, 64, 48), ("70b", 8192, 64, 80))
        ),
    )
}

def model_from_dict(data: dict, origin: str) -> ModelSpec:
    """Build and check a ModelSpec from plain data (one YAML document); `name` defaults to the file's stem."""
    if isinstance(data, dict) and "name" not in data:
        data = {**data, "name": Path(origin).stem}
    return inputs.convert(data, ModelSpec, origin, " (`fabricsim schema model` prints every field)")


def load_model(name_or_path: str) -> ModelSpec:
    """A built-in model by name, or a YAML file with ModelSpec fields."""
    if name_or_path.lower() in MODELS:
        return MODELS[name_or_path.lower()]
    path = Path(name_or_path)
    if "/" in name_or_path or "\\" in name_or_path or name_or_path.lower().endswith((".yaml", ".yml", ".json")):
        if not path.exists():  # a path, not a name: say so, as cluster files do
            raise FabricsimError(f"model file {name_or_path} does not exist: check the path, or use a built-in model: "
                                 f"{', '.join(MODELS)}")
    elif not path.is_file():
        raise FabricsimError(f"unknown model '{name_or_path}': use a built-in ({', '.join(MODELS)}) or a path to a YAML model file")
    return model_from_dict(inputs.parse_yaml(inputs.read_text(path, "model file"), str(path)), str(path))

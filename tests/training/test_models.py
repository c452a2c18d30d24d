import pytest

from fabricsim.errors import FabricsimError
from fabricsim.training.models import MODELS, load_model

PUBLISHED = {  # name: (total, active) parameters as the papers state them
    "gpt3-175b": (175e9, 175e9),
    "llama3-8b": (8.0e9, 8.0e9),
    "llama3-70b": (70.6e9, 70.6e9),
    "llama3-405b": (405e9, 405e9),
    "mixtral-8x7b": (46.7e9, 12.9e9),
    "deepseek-v3": (671e9, 37e9),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_param_counts_match_papers(name):
    total, active = PUBLISHED[name]
    m = MODELS[name]
    assert m.params == pytest.approx(total, rel=0.02)
    assert m.active_params == pytest.approx(active, rel=0.02)


def test_megatron_flops_match_nemo_published_throughput():
    # NeMo 24.07: Llama3-70B 738 TFLOP/s/GPU at 1533 tokens/s/GPU; GPT3-175B 782 at 726 (model FLOPs per token).
    assert MODELS["llama3-70b"].flops_per_token(8192) == pytest.approx(738e12 / 1533, rel=0.01)
    assert MODELS["gpt3-175b"].flops_per_token(2048) == pytest.approx(782e12 / 726, rel=0.01)


def test_flop_conventions():
    m = MODELS["llama3-8b"]
    six_n = m.flops_per_token(convention="6n")
    assert six_n == 6 * m.active_nonembedding_params
    attention = 12 * m.layers * m.hidden * m.seq
    assert m.flops_per_token(convention="megatron") == six_n + 6 * m.vocab * m.hidden + attention
    assert m.flops_per_token(convention="mosaic") == 6 * m.active_params + attention
    with pytest.raises(FabricsimError, match="convention"):
        m.flops_per_token(convention="nope")


def test_moe_flops_use_active_parameters():
    m = MODELS["mixtral-8x7b"]
    assert m.flops_per_token(convention="6n") == pytest.approx(6 * 12.6e9, rel=0.02)


def test_builtin_by_name_and_yaml(tmp_path):
    assert load_model("LLaMA3-8B") is MODELS["llama3-8b"]
    f = tmp_path / "tiny.yaml"
    f.write_text("layers: 2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\n")
    m = load_model(str(f))
    assert m.name == "tiny" and m.layers == 2 and m.params > 0


@pytest.mark.parametrize("text, match", [
    ("layers: 2\nhidden: 64\n", "missing keys 'heads', 'kv_heads', 'ffn', 'vocab' and 'seq': add them"),
    ("layers: 2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\nwidth: 3\n", "unknown key 'width': valid keys are name, layers"),
    ("layers: -2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\n", "field 'layers' is -2: it must be a whole number from 1 to 10,000"),
    ("layers: 2\nhidden: [64\n", r"bad\.yaml line 3: malformed YAML"),
    ("layers: two\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\n", "whole number"),
    ("- 1\n- 2\n", "mapping"),
    ("layers: 2\nhidden: 64\nheads: 4\nkv_heads: 3\nffn: 256\nvocab: 1000\nseq: 128\n", "multiple of kv_heads"),
    ("layers: 2\nhidden: 60\nheads: 8\nkv_heads: 8\nffn: 256\nvocab: 1000\nseq: 128\n", r"hidden \(60\) is not a multiple of heads \(8\)"),
])
def test_yaml_errors(tmp_path, text, match):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(FabricsimError, match=match):
        load_model(str(f))


def test_unknown_model_lists_builtins():
    with pytest.raises(FabricsimError, match="llama3-8b"):
        load_model("no-such-model")

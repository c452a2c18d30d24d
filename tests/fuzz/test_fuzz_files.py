"""Fuzzed cluster and model YAML: a spec whose figures are sane, or one FabricsimError, nothing else."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.topology import ClusterSpec, build, preset_spec
from fabricsim.training.models import CONVENTIONS, MODELS, ModelSpec, model_from_dict
from fabricsim.inputs import parse_yaml
from tests.fuzz.conftest import RUNS, run_fuzz
from tests.fuzz.strategies import cluster_fields, edited_yaml

CLUSTERS = [preset_spec(name).to_yaml() for name in ("dgx-h100", "gb200-nvl72", "pcie-l40s-8", "dgx1-v100")]
CLUSTER_FIELDS = [f.name for f in dataclasses.fields(ClusterSpec)]
MODEL_FIELDS = [f.name for f in dataclasses.fields(ModelSpec)]
MODEL_TEXTS = ["layers: 2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\n",
               *("\n".join(f"{k}: {v!r}" if isinstance(v, str) else f"{k}: {str(v).lower()}"
                           for k, v in dataclasses.asdict(MODELS[m]).items() if k != "source")
                 for m in ("mixtral-8x7b", "deepseek-v3"))]
SMALL_TOPOLOGY = 256  # build (and check) the topology of a parsed spec of at most this many GPUs and NICs


def sane(x: float) -> bool:
    return math.isfinite(x) and x >= 0


def check_cluster(text: str) -> None:
    try:
        spec = ClusterSpec.from_yaml(text)
    except FabricsimError:
        event("cluster: refused")
        return
    values = dataclasses.asdict(spec)
    assert all(sane(v) for v in values.values() if isinstance(v, (int, float)) and not isinstance(v, bool))
    assert ClusterSpec.from_yaml(spec.to_yaml()) == spec
    if spec.nodes * max(spec.gpus_per_node, spec.nics_per_node, spec.pcie_switches_per_node) <= SMALL_TOPOLOGY \
            and spec.nvswitch_chips <= SMALL_TOPOLOGY:
        try:
            topo = build(spec)
        except FabricsimError:
            event("cluster: parsed, build refused")
            return
        event("cluster: built")
        assert topo.n_gpus == spec.nodes * spec.gpus_per_node
        assert np.all(np.isfinite(topo.link_capacity)) and np.all(topo.link_capacity > 0)
        assert np.all(np.isfinite(topo.link_latency)) and np.all(topo.link_latency >= 0)


def check_model(text: str) -> None:
    try:
        model = model_from_dict(parse_yaml(text, "m.yaml"), "m.yaml")
    except FabricsimError:
        event("model: refused")
        return
    event("model: parsed")
    assert model.params > 0 and model.active_params > 0 and model.kv_dim >= 0
    for convention in CONVENTIONS:
        assert sane(model.flops_per_token(convention=convention))
    assert sane(model.attention_flops_per_token())


@pytest.mark.parametrize("profile", RUNS)
def test_cluster_yaml(profile):
    @given(st.sampled_from(CLUSTERS).flatmap(lambda base: edited_yaml(base, CLUSTER_FIELDS)))
    def fuzz(text):
        check_cluster(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_cluster_yaml_in_range(profile):
    @given(cluster_fields().map(lambda d: yaml.safe_dump(d, sort_keys=False)))
    def fuzz(text):
        check_cluster(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_cluster_text(profile):
    @given(st.text(max_size=200))
    def fuzz(text):
        check_cluster(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_model_yaml(profile):
    @given(st.sampled_from(MODEL_TEXTS).flatmap(lambda base: edited_yaml(base, MODEL_FIELDS)))
    def fuzz(text):
        check_model(text)

    run_fuzz(profile, fuzz)


@st.composite
def duplicated_key(draw, texts: list[str]):
    """A valid 'key: value' document with one of its top-level lines repeated later, with another value:
    (text, key, line of the first, line of the repeat)."""
    lines = draw(st.sampled_from(texts)).splitlines()
    tops = [i for i, line in enumerate(lines) if line[:1].isalpha() and ":" in line]
    i = draw(st.sampled_from(tops))
    key = lines[i].split(":", 1)[0]
    j = draw(st.integers(i + 1, len(lines)))
    while j < len(lines) and lines[j].startswith((" ", "-")):
        j += 1  # not inside a nested block or a list
    lines.insert(j, f"{key}: {draw(st.integers(1, 64) | st.sampled_from(['ib-ndr', 'null', '[1, 2]']))}")
    return "\n".join(lines) + "\n", key, i + 1, j + 1


@pytest.mark.parametrize("profile", RUNS)
def test_a_repeated_key_is_always_refused(profile):
    @given(duplicated_key(CLUSTERS + MODEL_TEXTS))
    def fuzz(case):
        text, key, first, second = case
        with pytest.raises(FabricsimError) as err:
            parse_yaml(text, "f.yaml")
        assert str(err.value) == f"key '{key}' appears twice (lines {first} and {second}) in f.yaml: keep one"

    run_fuzz(profile, fuzz)

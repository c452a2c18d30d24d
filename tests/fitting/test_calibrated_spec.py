"""The cluster file's `calibrated:` section: it round-trips, its bounds and keys are checked, and the engine uses it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fabricsim.engine.capacity import link_efficiency
from fabricsim.errors import FabricsimError
from fabricsim.topology import build, preset_spec
from fabricsim.topology.calibrated import BY_NAME, PARAMETERS, Calibrated, Fitted, LogUsed
from fabricsim.topology.spec import ClusterSpec
from fabricsim.tuner.select import best

SHA = "ab" * 32
LOG = LogUsed("run.log", SHA, "all_reduce", 16, "20 rows, 8 B .. 8 GiB, out-of-place")


def calibrated(**values: float) -> Calibrated:
    return Calibrated(**{k: Fitted(v, 0.5, ("run.log",), 20) for k, v in values.items()}, logs=(LOG,), method="test")


def test_a_spec_without_calibration_writes_no_calibrated_key():
    assert "calibrated" not in preset_spec("dgx-h100").to_yaml()


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from([p.name for p in PARAMETERS]),
                       st.floats(0.0, 1.0, allow_nan=False), min_size=1))
def test_calibrated_specs_round_trip_through_yaml(values):
    values = {k: min(max(v, BY_NAME[k].lower), BY_NAME[k].upper) for k, v in values.items()}
    spec = dataclasses.replace(preset_spec("dgx-h100", nodes=2), calibrated=calibrated(**values))
    text = spec.to_yaml()
    back = ClusterSpec.from_yaml(text)
    assert back == spec and back.to_yaml() == text


@pytest.mark.parametrize("edit, message", [
    (("value: 0.8", "value: 1.5"), "calibrated.net_efficiency.value"),
    (("catalog:", "catalgo:"), "unknown key 'calibrated.net_efficiency.catalgo' (did you mean 'catalog'?)"),
    (("sha256:", "sha:"), "unknown key 'calibrated.logs[0].sha'"),
    (("    - run.log", "    - other.log"), "names log other.log that 'calibrated.logs' does not list"),
])
def test_a_bad_calibrated_section_is_one_error_naming_the_field(edit, message):
    text = dataclasses.replace(preset_spec("dgx-h100", nodes=2), calibrated=calibrated(net_efficiency=0.8)).to_yaml()
    assert edit[0] in text
    with pytest.raises(FabricsimError, match=None) as err:
        ClusterSpec.from_yaml(text.replace(edit[0], edit[1], 1))
    assert message in str(err.value)


def test_a_latency_outside_its_bounds_is_refused():
    with pytest.raises(FabricsimError, match=r"launch_latency is 0.5 s: it must lie in \[0, 0.01\]"):
        calibrated(launch_latency=0.5)


def test_efficiencies_replace_the_catalog_fraction_of_their_kind_only():
    spec = preset_spec("dgx-h100", nodes=2)
    topo, cal = build(spec), build(dataclasses.replace(spec, calibrated=calibrated(net_efficiency=0.5)))
    kinds = np.array([__import__("fabricsim").hardware.get_link(t).kind for t in topo.techs])[topo.link_tech]
    net = np.isin(kinds, ("infiniband", "ethernet"))
    assert net.any() and (link_efficiency(cal)[net] == 0.5).all()
    assert (link_efficiency(cal)[~net] == link_efficiency(topo)[~net]).all()


def test_launch_latency_adds_once_per_call_and_net_step_latency_per_network_step():
    spec = preset_spec("dgx-h100", nodes=2)
    ranks = np.arange(16, dtype=np.int32)

    def t(cal, **kw):
        topo = build(dataclasses.replace(spec, calibrated=cal))
        return best(topo, "all_reduce", 1 << 10, ranks=ranks, algos=["ring"], protos=["ll"], **kw).result.time

    base = t(None)
    assert t(calibrated(launch_latency=7e-6)) == pytest.approx(base + 7e-6, rel=1e-9)
    # a 16-rank ring all-reduce on 2 nodes: 2(n-1) = 30 steps, each pays the mean hop latency over the ring's hops
    # (2 of its 16 hops per step cross the network)
    extra = t(calibrated(net_step_latency=10e-6)) - base
    assert 0 < extra <= 30 * 10e-6 and extra == pytest.approx(30 * 10e-6 * 2 / 16, rel=0.05)


def test_a_slower_network_makes_a_large_two_node_all_reduce_slower():
    spec = preset_spec("dgx-h100", nodes=2)
    ranks = np.arange(16, dtype=np.int32)
    fast = best(build(spec), "all_reduce", 1 << 30, ranks=ranks).result.busbw
    slow = best(build(dataclasses.replace(spec, calibrated=calibrated(net_efficiency=0.48))), "all_reduce", 1 << 30,
                ranks=ranks).result.busbw
    assert slow < 0.75 * fast


def test_a_calibrated_cluster_file_validates_against_the_cluster_schema():
    import jsonschema
    import yaml

    from fabricsim.inputs import json_schema

    doc = json_schema(ClusterSpec)
    spec = dataclasses.replace(preset_spec("dgx-h100", nodes=2),
                               calibrated=calibrated(net_efficiency=0.8, launch_latency=3e-6))
    jsonschema.validate(yaml.safe_load(spec.to_yaml()), doc)
    bad = yaml.safe_load(spec.to_yaml())
    bad["calibrated"]["net_efficiency"]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, doc)


def test_a_sweep_over_a_calibrated_cluster_file_is_refused_not_silently_uncalibrated(tmp_path):
    from fabricsim.sweeps.plan import _base
    from fabricsim.topology import save_cluster

    plain, cal = tmp_path / "plain.yaml", tmp_path / "cal.yaml"
    save_cluster(preset_spec("dgx-h100"), plain)
    save_cluster(dataclasses.replace(preset_spec("dgx-h100"), calibrated=calibrated(nvlink_efficiency=0.7)), cal)
    base, _label, _identity = _base(str(plain), tmp_path / "sweep.yaml")
    assert "calibrated" not in base["spec"]  # keys of sweeps over plain files are as before the field existed
    with pytest.raises(FabricsimError, match="has a calibrated: section, which sweeps do not carry yet"):
        _base(str(cal), tmp_path / "sweep.yaml")

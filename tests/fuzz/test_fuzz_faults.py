"""Fuzzed faults: the SPEC grammar of --fail / --degrade, the `faults:` section of a cluster file and faults resolved
against a topology. A well-formed value (a faulted topology with capacities it can carry) or one FabricsimError."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.topology import ClusterSpec, build, load_cluster, preset_spec
from fabricsim.topology.faulted import apply_faults, report_of
from fabricsim.topology.faults import MAX_SEED, Faults, check_target, faults_of, parse_factor, split_degrade
from fabricsim.topology.names import CLASSES
from tests.fuzz.conftest import RUNS, run_fuzz
from tests.fuzz.strategies import json_values, yaml_value

POD = load_cluster("superpod-h100", gpus=256)  # leaves and spines, NICs, NVSwitches: every class but cores
# Pieces of targets: real names and globs, link arrows, counts, and spellings at the grammar's edges.
NAMES = ["spine0", "spine3", "spine*", "su0.leaf0", "su?.leaf2", "su1.leaf*", "node3.nic0", "node3.nic*", "node5.gpu3",
         "node5", "node31", "node32", "domain3.nvswitch0", "node0.pcisw0", "node0.cpu0", "node*", "*", "[", "[!a]",
         "su9.leaf0", "core0", "node-1.gpu0", "node3.", ".gpu0", "node1.gpu8"]
PIECES = [*NAMES, " -> ", "->", " (ib-ndr)", "(nvlink4)", "(", ")", "random:", "%", ":", *CLASSES, "bogus-links",
          "0", "1", "2", "3", "50", "100", "101", "1.5", "2.0", "1e3", "-1", " ", "\t", "\n", "/", "17/18", "0.5"]
VALID = ["spine0", "spine*", "su0.leaf0", "su?.leaf2", "node3.nic0", "node3.nic*", "node5.gpu3", "node5",
         "domain3.nvswitch0", "node3.nic0 -> su0.leaf0", "su1.leaf* -> spine2 (ib-ndr)", "node0.gpu1 -> *",
         "random:1:spines", "random:2:nics", "random:10%:spine-links", "random:3:nvlinks", "random:1:gpus"]
valid_target = st.sampled_from(VALID) | st.builds(lambda n, p, c: f"random:{n}{p}:{c}", st.integers(0, 40),
                                                  st.sampled_from(["", "%"]), st.sampled_from(CLASSES))
noise = (st.lists(st.sampled_from(PIECES) | st.text(max_size=4), min_size=1, max_size=6).map("".join)
             | st.builds(lambda n, p, c: f"random:{n}{p}:{c}", st.sampled_from(["0", "1", "3", "2.5", "100", "250",
                                                                                "999999999999"]),
                         st.sampled_from(["", "%"]), st.sampled_from([*CLASSES, "spine", "x"]))
             | st.builds(lambda a, b, t: f"{a} -> {b}{t}", st.sampled_from(NAMES), st.sampled_from(NAMES),
                         st.sampled_from(["", " (ib-ndr)", " (nvlink4)", " (pcie*)", " ()", " (a) (b)"]))
             | st.text(max_size=16))
spec_text = valid_target | valid_target | noise
factor_text = (st.sampled_from(["0.5", "1", "1.0", "0", "-0.5", "2", "3/4", "17/18", "1/0", "0/0", "nan", "inf",
                                "1e-300", "5e-324", "1/3", "4/3", "", " ", "/", "1/", "0x1", "½", "1_0"])
               | st.floats().map(str) | st.text(max_size=6))
valid_factor = st.sampled_from(["0.5", "1", "3/4", "17/18", "0.25", "1e-3"])
valid_degrade = st.builds(lambda t, f: f"{t}:{f}", valid_target, valid_factor)
degrade_text = (valid_degrade
                | st.builds(lambda t, f: f"{t}:{f}", spec_text, factor_text) | st.text(max_size=20))


def refused(fn, *args):
    """(True, None) when `fn` refuses with a FabricsimError, else (False, its value)."""
    try:
        return False, fn(*args)
    except FabricsimError:
        return True, None


@pytest.mark.parametrize("profile", RUNS)
def test_spec_grammar(profile):
    @given(spec_text, factor_text, degrade_text)
    def fuzz(target, factor, degrade):
        no, text = refused(check_target, target, "--fail")
        assert no or (text == target.strip() and text)
        no, value = refused(parse_factor, factor, "--degrade")
        assert no or (math.isfinite(value) and 0 < value <= 1)
        no, pair = refused(split_degrade, degrade)
        if not no:
            spec, f = pair
            assert spec and spec == spec.strip() and 0 < f <= 1
        event("degrade: refused" if no else "degrade: parsed")

    run_fuzz(profile, fuzz)


def check_resolved(faults: Faults) -> None:
    """`faults` on the pod: a variant whose links are the built ones at their factor at most, or one error."""
    no, topo = refused(apply_faults, POD, faults)
    if no:
        event("resolve: refused")
        return
    event("resolve: applied" if faults else "resolve: no faults")
    if not faults:
        assert topo is POD
        return
    origin = np.arange(topo.n_links) if topo.link_origin is None else np.asarray(topo.link_origin)
    assert topo.n_links <= POD.n_links and np.all(topo.link_capacity > 0)
    assert np.all(topo.link_capacity <= POD.link_capacity[origin] * (1 + 1e-12))
    report = report_of(topo)
    assert report is not None and len(report.lines) == len(faults.targets())
    assert set(report.failed).isdisjoint(int(c) for c in origin)  # a failed cable is gone, both directions
    assert all(0 < f < 1 for _, f in report.degraded) and all(0 < s <= 1 for _, s in report.gpu_speed)
    again = apply_faults(POD, faults)  # the same draws every time
    np.testing.assert_array_equal(again.link_capacity, topo.link_capacity)


@pytest.mark.parametrize("profile", RUNS)
def test_faults_resolved_on_a_topology(profile):
    @given(st.lists(spec_text, max_size=3), st.lists(degrade_text, max_size=3),
           st.integers(0, MAX_SEED) | st.sampled_from([0, 1, 7]))
    def fuzz(fail, degrade, seed):
        no, faults = refused(faults_of, fail, degrade, seed)
        if not no:
            check_resolved(faults)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_faults_of_arbitrary_values(profile):
    @given(json_values, json_values, json_values)
    def fuzz(fail, degrade, seed):
        no, faults = refused(faults_of, fail, degrade, seed)
        assert no or isinstance(faults, Faults)

    run_fuzz(profile, fuzz)


BASE = preset_spec("superpod-h100", None, 256).to_yaml()


@st.composite
def faults_section(draw) -> str:
    """A `faults:` section: lists of fuzzed targets, or any YAML value in any of its places."""
    def items(strategy):
        values = draw(st.lists(strategy, max_size=3))
        return "[" + ", ".join(repr(v) if draw(st.booleans()) else v for v in values) + "]"

    lines = ["faults:"]
    keys = st.sampled_from(["fail", "degrade", "seed"] * 4 + ["bogus", "Fail", ""])
    for key in draw(st.lists(keys, min_size=1, max_size=4)):
        if draw(st.integers(0, 9)) == 0:
            value = draw(yaml_value())
        elif key == "fail":
            value = items(valid_target | valid_target | spec_text)
        elif key == "degrade":
            value = items(valid_degrade | valid_degrade | degrade_text)
        else:
            value = str(draw(st.integers(0, 9) | st.integers(-3, MAX_SEED + 3)))
        lines.append(f"  {key}: {value}")
    if draw(st.integers(0, 12)) == 0:
        lines = [f"faults: {draw(yaml_value())}"]
    return "\n".join(lines)


@pytest.mark.parametrize("profile", RUNS)
def test_faults_section_of_a_cluster_file(profile):
    @given(faults_section())
    def fuzz(section):
        no, spec = refused(ClusterSpec.from_yaml, BASE + "\n" + section + "\n")
        if no:
            event("section: refused")
            return
        event("section: parsed")
        assert isinstance(spec.faults, Faults) and ClusterSpec.from_yaml(spec.to_yaml()) == spec
        healthy = ClusterSpec.from_yaml(BASE)
        assert spec.faults.seed <= MAX_SEED and spec == replace(healthy, faults=spec.faults)
        no, topo = refused(build, spec)
        if not no:
            assert (report_of(topo) is not None) == bool(spec.faults)

    run_fuzz(profile, fuzz)

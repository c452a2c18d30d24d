"""Fuzzed sweep files: a plan whose points are distinct and typed, or one FabricsimError, nothing else."""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fabricsim import sweeps
from fabricsim.errors import FabricsimError
from tests.fuzz.conftest import RUNS, run_fuzz
from tests.fuzz.strategies import edited_yaml

# One 'key: value' per line (flow style), as edited_yaml edits them.
SWEEPS = [
    "cluster: dgx-h100\nperf: {collective: all_gather, sizes: {min: 1K, max: 1M, factor: 4}}\n"
    "axes: {cluster.nodes: [1, 2], perf.collective: [all_reduce, alltoall], cluster.nic_gbps: [200, 400]}\n"
    "zip: [[cluster.nodes, cluster.nic_gbps]]\nexclude: [{perf.collective: alltoall, cluster.nodes: {min: 2}}]\n",
    "name: t\ncluster: superpod-h100\ntrain: {model: llama3-8b, search: true}\n"
    "axes: {cluster.gpus: [64, 128], train.model: [llama3-8b, llama3-70b], train.tp: [1, 2]}\n"
    "exclude: [{train.tp: 2, cluster.gpus: 64}]\n",
]
FIELDS = ["name", "cluster", "perf", "train", "axes", "zip", "exclude", "faults"]


def check_sweep(directory, text: str) -> None:
    path = directory / "sweep.yaml"
    path.write_text(text)
    try:
        plan = sweeps.load(path)
    except FabricsimError:
        event("sweep: refused")
        return
    event("sweep: planned")
    keys = [p["key"] for p in plan.points]
    assert plan.points and len(set(keys)) == len(keys)
    assert [p["index"] for p in plan.points] == list(range(len(plan.points)))
    assert all(set(p["options"]) == set(plan.points[0]["options"]) for p in plan.points)


@pytest.mark.parametrize("profile", RUNS)
def test_sweep_yaml(profile, tmp_path):
    @given(st.sampled_from(SWEEPS).flatmap(lambda base: edited_yaml(base, FIELDS)))
    def fuzz(text):
        check_sweep(tmp_path, text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_sweep_text(profile, tmp_path):
    @given(st.text(max_size=200))
    def fuzz(text):
        check_sweep(tmp_path, text)

    run_fuzz(profile, fuzz)

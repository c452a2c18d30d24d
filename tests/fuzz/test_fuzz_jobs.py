"""Fuzzed jobs files: a jobs file whose jobs place and whose sizes and times read, or one FabricsimError."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.inputs import parse_yaml
from fabricsim.multijob.placement import Request, parse_ranks, place
from fabricsim.multijob.spec import JobSpec, JobsFile, TrainJob, jobs_from
from fabricsim.topology import load_cluster
from fabricsim.units import parse_duration, parse_size
from tests.fuzz.conftest import RUNS, run_fuzz
from tests.fuzz.strategies import edited_yaml

BASE = """cluster: dgx-h100
nodes: 3
placement: packed
seed: 3
jobs:
- name: a
  gpus: 8
  collective: all_reduce
  size: 1G
  iterations: 3
  start: 1ms
- name: b
  ranks: 8-15
  collective: alltoall
  size: 64M
  gap: 20us
- name: t
  gpus: 4
  placement: scattered
  train:
    model: llama3-8b
    tp: 4
"""
FIELDS = [*JobsFile.__struct_fields__, *JobSpec.__struct_fields__, *TrainJob.__struct_fields__]
TOPO = load_cluster("dgx-h100", nodes=3)


def check(text: str, record=event) -> None:
    try:
        spec = jobs_from(parse_yaml(text, "jobs.yaml"), "jobs.yaml")
        requests = [Request(j.name, j.gpus, j.placement or spec.placement, spec.seed,
                            None if j.ranks is None else parse_ranks(j.ranks, TOPO.n_gpus, j.name)) for j in spec.jobs]
        placed = place(TOPO, requests)
        times = [parse_duration(j.start) + parse_duration(j.gap) for j in spec.jobs]
        sizes = [parse_size(j.size) for j in spec.jobs if j.size is not None]
    except FabricsimError:
        record("jobs: refused")
        return
    record("jobs: placed")
    used = [int(g) for p in placed for g in p]
    assert len(used) == len(set(used)) and all(0 <= g < TOPO.n_gpus for g in used)
    assert all(math.isfinite(t) and t >= 0 for t in times) and all(s >= 0 for s in sizes)


def test_the_base_file_places():
    seen = []
    check(BASE, seen.append)
    assert seen == ["jobs: placed"]


@pytest.mark.parametrize("profile", RUNS)
def test_jobs_yaml(profile):
    @given(edited_yaml(BASE, FIELDS))
    def fuzz(text):
        check(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_jobs_mapping(profile):
    value = st.none() | st.booleans() | st.integers(-5, 5000) | st.floats(allow_nan=True) | st.text(max_size=12)
    job = st.dictionaries(st.sampled_from(JobSpec.__struct_fields__), value, max_size=8)

    @given(st.fixed_dictionaries({"cluster": st.just("dgx-h100"), "jobs": st.lists(job, max_size=3)},
                                 optional={k: value for k in ("nodes", "placement", "seed", "level")}))
    def fuzz(data):
        try:
            jobs_from(data)
        except FabricsimError:
            event("mapping: refused")

    run_fuzz(profile, fuzz)

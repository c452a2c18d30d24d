"""A benchmark that times one call on an idle device (torch.distributed) measures PyTorch's per-call host
overhead as well as NCCL's kernel; validation adds it to the prediction of such rows and of no others."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.calibration_data import default_path
from fabricsim.validation.accuracy import _as_timed, predict
from fabricsim.validation.calibration import TORCH_DIST_CALL_OVERHEAD, case_for, cases, harness_overhead, load_rows

ROW = {"id": "r", "kind": "collective", "collective": "all_reduce", "size_bytes": 1 << 20, "busbw_GBps": 40.0,
       "hardware": {"gpu": "H200", "gpus_per_node": 8, "nodes": 1}}


def test_only_torch_distributed_rows_carry_a_host_overhead():
    torch = case_for({**ROW, "measurement": "torch.distributed benchmark (busbw formula as nccl-tests)"})
    nccl_tests = case_for({**ROW, "measurement": "nccl-tests row"})
    unstated = case_for(ROW)
    assert torch.host_overhead == TORCH_DIST_CALL_OVERHEAD > 0
    assert nccl_tests.host_overhead == unstated.host_overhead == 0.0
    assert harness_overhead({"measurement": "nccl-tests row"}) == 0.0


@given(time=st.floats(1e-7, 10.0), busbw=st.floats(1e-3, 1e4), overhead=st.floats(0.0, 1e-3))
def test_the_timed_call_is_longer_by_the_overhead_and_moves_the_same_bytes(time, busbw, overhead):
    case = dataclasses.replace(case_for(ROW), host_overhead=overhead)
    timed, bus = _as_timed(case, time, busbw)
    assert timed == pytest.approx(time + overhead, rel=1e-12)
    assert bus * timed == pytest.approx(busbw * time, rel=1e-9)  # busbw x time is the bytes: unchanged
    assert bus <= busbw


@pytest.mark.skipif(not default_path().exists(), reason=f"calibration data not found at {default_path()}")
def test_a_torch_distributed_row_is_predicted_as_its_harness_times_it():
    all_cases, _ = cases(load_rows(None))
    case = next(c for c in all_cases if c.host_overhead > 0 and c.size_bytes and c.collective == "all_reduce")
    kernel_only = predict(dataclasses.replace(case, host_overhead=0.0), level="analytical")
    timed = predict(case, level="analytical")
    n = len(case.ranks)
    bus_bytes = case.size_bytes * 2 * (n - 1) / n / 1e9  # nccl-tests' AllReduce bus factor; GB/s -> s
    assert bus_bytes / timed.predicted - bus_bytes / kernel_only.predicted == pytest.approx(case.host_overhead, rel=1e-6)
    assert timed.nccl_predicted < kernel_only.nccl_predicted  # NCCL's model is timed the same way

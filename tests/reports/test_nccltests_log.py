"""nccl-tests log parser over every layout in fixtures/ (see fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_log import parse_nccl_tests

FIX = Path(__file__).parent / "fixtures"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_v2_17_mpi_prefixed_real_rows():
    log = parse_nccl_tests(read("v2_17_all_reduce_10n_mpi.log"))
    assert (log.collective, log.nranks, log.fmt) == ("all_reduce", 80, "text")
    assert (log.nccl_tests_version, log.nccl_version) == ("2.17.8", "2.29.2")
    assert [r.size_bytes for r in log.rows] == [33554432, 134217728, 1073741824, 2147483648, 17179869184]
    first, last = log.rows[0], log.rows[-1]
    assert (first.count, first.dtype, first.redop, first.root) == (4194304, "double", "sum", -1)
    assert (first.out_of_place.time_us, first.out_of_place.algbw, first.out_of_place.busbw) == (798.52, 42.02, 82.99)
    assert first.out_of_place.wrong == 0
    assert last.out_of_place.time_us == 105854 and last.out_of_place.busbw == 320.54
    assert log.avg_busbw == 265.631


def test_v2_9_layout_without_redop_and_root():
    log = parse_nccl_tests(read("v2_9_all_gather_noroot.log"))
    assert log.nranks == 8 and log.collective is None
    row = log.rows[2]
    assert (row.size_bytes, row.dtype, row.redop, row.root) == (134217728, "float", None, None)
    assert row.out_of_place.time_us == 1160.2 and row.in_place.busbw == 100.22
    assert row.out_of_place.wrong == 0.0


def test_exponent_na_and_srun_prefix():
    log = parse_nccl_tests(read("v2_19_sendrecv_exponent_na.log"))
    assert (log.collective, log.nranks, log.nccl_version) == ("sendrecv", 16, "2.30.7")
    assert log.rows[1].out_of_place.busbw == 15.22
    assert log.rows[2].out_of_place.time_us == pytest.approx(1.7e10)
    assert all(r.out_of_place.wrong is None for r in log.rows)


def test_per_iteration_columns():
    log = parse_nccl_tests(read("v2_19_reduce_scatter_per_iter.log"))
    assert log.collective == "reduce_scatter" and len(log.rows) == 2
    row = log.rows[1]
    assert (row.out_of_place.time_us, row.out_of_place.busbw) == (3391.20, 277.05)
    assert (row.in_place.time_us, row.in_place.busbw) == (3397.98, 276.49)
    assert row.extra == {}


def test_json_output():
    log = parse_nccl_tests(read("v2_19_all_reduce.json"))
    assert (log.fmt, log.collective, log.nranks, log.nccl_version) == ("json", "all_reduce", 8, "2.30.7")
    assert log.rows[1].size_bytes == 1073741824 and log.rows[1].root == -1
    assert log.rows[1].out_of_place.time_us == 3960.2
    assert log.avg_busbw == 268.4


def test_binary_name_from_command_line():
    text = "$ mpirun -np 2 ./build/all_gather_perf -b 8 -e 8\n" + read("v2_9_all_gather_noroot.log")
    assert parse_nccl_tests(text).collective == "all_gather"


@pytest.mark.parametrize("text", [read("malformed_no_rows.log"), "", "hello\nworld\n", "NCCL INFO only\n"])
def test_no_rows_is_an_error(text):
    with pytest.raises(FabricsimError, match="no nccl-tests data rows"):
        parse_nccl_tests(text)


def test_broken_json_is_an_error():
    with pytest.raises(FabricsimError, match="not valid JSON"):
        parse_nccl_tests('{"results": [')

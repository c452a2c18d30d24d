"""A sweep that starts below one element (per rank, where the size is the whole buffer) says its first rows print
as size 0 and move nothing, as nccl-tests' do, and where to start instead."""

from __future__ import annotations

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.reports.sweep import empty_rows_note


def test_the_note_counts_the_rows_and_gives_the_start():
    assert empty_rows_note("all_gather", [8, 16, 32, 64], "float", 8) == (
        "2 sizes below 32 B (one float for each of 8 ranks: 8 x 4 B) print as size 0 and move nothing, as in nccl-tests: "
        "start at minbytes=32 to leave them out")
    assert empty_rows_note("all_reduce", [2, 4], "half", 8) is None
    assert empty_rows_note("all_reduce", [0, 4], "float", 8) is None  # -b 0 -e ... asked for size 0 itself


def test_perf_prints_it_and_the_rows_stay_as_nccl_tests_prints_them(capsys):
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "-b", "2", "-e", "8"]) == 0
    out, err = capsys.readouterr()
    assert err == ("note: size 2 below 4 B (one float) prints as size 0 and moves nothing, as in nccl-tests: start "
                   "at -b 4 to leave it out\n")
    assert [line.split()[0] for line in out.splitlines() if line.strip()[:1].isdigit()] == ["0", "4", "8"]
    assert fs.perf("dgx-h100", "all_reduce", fs.sizes(4, 8)).notes == ()


def test_one_rule_for_the_smallest_size_that_moves_data(capsys):
    from fabricsim.reports.sweep import least_bytes

    assert least_bytes("all_reduce", "half", 64) == (2, "one half")
    assert least_bytes("alltoall", "float", 64) == (256, "one float for each of 64 ranks: 64 x 4 B")
    assert main(["whatif", "failures", "-c", "superpod-h100", "--gpus", "64", "--size", "2"]) == 2
    assert capsys.readouterr().err == ("error: --size 2: all_reduce on 64 GPUs moves nothing below 4 bytes (one "
                                       "float): give a larger size, e.g. --size 1G\n")  # not 'one float per rank'

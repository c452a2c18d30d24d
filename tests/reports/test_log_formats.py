"""The layouts real calibration logs come in (issue 13): excerpts in fixtures/ (sources in fixtures/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_log import parse_nccl_tests, parse_runs

FIX = Path(__file__).parent / "fixtures"


def read(name: str) -> str:
    return (FIX / name).read_text()


def sizes(log) -> list[int]:
    return [r.size_bytes for r in log.rows]


def test_tag_output_inside_rows():
    """mpirun --tag-output writes '[1,0]<stdout>:' before each chunk rank 0 prints, so inside the row too."""
    log = parse_nccl_tests(read("aws_p5_tag_output_in_rows.log"))
    assert sizes(log) == [8, 16, 32, 1048576, 2097152, 4194304, 17179869184]
    first, big = log.rows[0], log.rows[3]
    assert (first.dtype, first.redop, first.root) == ("float", "sum", -1)
    assert (first.out_of_place.time_us, first.in_place.time_us) == (85.70, 74.97)
    assert (big.out_of_place.time_us, big.out_of_place.busbw, big.in_place.busbw) == (138.1, 14.24, 16.10)
    assert log.nccl_version == "2.22.3"  # from an NCCL INFO line of rank 0
    assert log.avg_busbw == 124.584
    assert log.nranks == 2  # the excerpt keeps two of the sixteen '#  Rank' lines


def test_collective_named_only_in_the_closing_line():
    log = parse_nccl_tests(read("oke_gb200_concluded_only.log"))
    assert log.collective == "all_reduce"
    assert log.nranks == 128  # the one '#  Rank 127' line left by the author
    assert log.nccl_version == "2.29.2"  # bare 'NCCL version 2.29.2+cuda13.1' (NCCL_DEBUG=VERSION)
    assert sizes(log)[-1] == 34359738368 and log.rows[-1].out_of_place.time_us == 99744.6


def test_block_without_column_titles():
    log = parse_nccl_tests(read("oke_gb200_headerless.log"))
    assert log.collective is None  # nothing in the block names it: the caller passes it
    assert len(log.rows) == 7 and log.rows[3].out_of_place.time_us == 35.89
    assert log.rows[3].in_place.busbw == 105.65 and log.rows[3].root == -1
    assert log.nranks == 8  # 'nranks 8' of the Destroy INFO lines
    assert log.avg_busbw == 260.778


def test_hash_prefixes_stripped():
    log = parse_nccl_tests(read("dstack_lambda_hash_stripped.log"))
    assert log.collective == "all_reduce"
    assert (log.nccl_tests_version, log.nccl_version) == ("2.17.6", "2.26.2")  # nccl-library=22602
    assert log.avg_busbw == 137.179
    assert log.rows[5].size_bytes == 524288 and log.rows[5].out_of_place.time_us == 240.71
    nebius = parse_nccl_tests(read("dstack_nebius_concluded_stripped.log"))
    assert nebius.collective == "all_reduce" and nebius.avg_busbw == 125.499
    assert nebius.rows[-1].out_of_place.busbw == 467.54


def test_several_runs_in_one_file():
    two, four = parse_runs(read("kalavai_two_runs.log"))
    assert (two.nranks, four.nranks) == (2, 4)
    assert (two.avg_busbw, four.avg_busbw) == (1.96915, 1.40135)
    assert sizes(two)[-1] == 67108864 and sizes(four)[-1] == 134217728
    assert four.rows[0].out_of_place.time_us == 18.90
    with pytest.raises(FabricsimError, match=r"the log holds 2 nccl-tests runs \(unnamed 8-67108864 B, unnamed "
                                             r"8-134217728 B\): split it"):
        parse_nccl_tests(read("kalavai_two_runs.log"))


def test_a_run_without_its_avg_line_ends_where_the_next_run_starts():
    text = re.sub(r"(?m)^# (Out of bounds|Avg bus).*\n", "", read("kalavai_two_runs.log"))
    runs = parse_runs(text)
    assert [len(r.rows) for r in runs] == [8, 8] and [r.nranks for r in runs] == [2, 4]
    assert all(r.avg_busbw is None for r in runs)


def test_the_closing_line_names_the_run_before_the_next():
    a = read("oke_gb200_concluded_only.log")
    b = read("kalavai_two_runs.log").split("# nThread 1 nGpus 4")[0]
    runs = parse_runs(a + b)
    assert [r.collective for r in runs] == ["all_reduce", None]
    assert [r.nccl_version for r in runs] == ["2.29.2", None]
    runs = parse_runs(a + "$ mpirun -np 2 ./build/all_gather_perf -b 8 -e 64M\n" + b)
    assert [r.collective for r in runs] == ["all_reduce", "all_gather"]  # the command opens the second run


REAL = ["aws_p5_tag_output_in_rows.log", "oke_gb200_concluded_only.log", "oke_gb200_headerless.log",
        "dstack_lambda_hash_stripped.log", "dstack_nebius_concluded_stripped.log"]


def _rows(log):
    return [(r.size_bytes, r.out_of_place, r.in_place) for r in log.rows]


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(REAL), data=st.data())
def test_tags_anywhere_between_fields_change_nothing(name, data):
    """A --tag-output tag at any field boundary of any line parses as the untagged line."""
    text = read(name)
    plain = parse_nccl_tests(text)
    lines = text.splitlines()
    out = []
    for line in lines:
        cuts = [m.start() for m in re.finditer(r"(?<=\S)\s", line)]
        keep = data.draw(st.lists(st.sampled_from(cuts), max_size=3, unique=True)) if cuts else []
        for c in sorted(keep, reverse=True):
            line = line[:c] + "[1,0]<stdout>:" + line[c:]
        out.append("[1,0]<stdout>:" + line)
    tagged = parse_nccl_tests("\n".join(out))
    assert _rows(tagged) == _rows(plain)
    assert (tagged.collective, tagged.nccl_version, tagged.avg_busbw) == (plain.collective, plain.nccl_version,
                                                                         plain.avg_busbw)


@pytest.mark.parametrize("name", REAL)
def test_stripping_every_hash_changes_nothing(name):
    text = read(name)
    stripped = re.sub(r"(?m)^(\s*(?:\[1,\d+\]<stdout>:)?)#", r"\1", text)
    assert "#" not in re.sub(r"#wrong", "", stripped)
    a, b = parse_nccl_tests(text), parse_nccl_tests(stripped)
    assert _rows(a) == _rows(b)
    assert (a.collective, a.nccl_version, a.nranks, a.avg_busbw) == (b.collective, b.nccl_version, b.nranks, b.avg_busbw)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(REAL), min_size=1, max_size=4))
def test_concatenated_runs_parse_as_each_alone(names):
    """Runs written one after the other come back one by one, each as it parses alone."""
    runs = parse_runs("\n".join(read(n) for n in names))
    assert [_rows(r) for r in runs] == [_rows(parse_nccl_tests(read(n))) for n in names]
    alone = [parse_nccl_tests(read(n)) for n in names]
    assert [(r.collective, r.nranks, r.nccl_version, r.avg_busbw) for r in runs] == \
        [(r.collective, r.nranks, r.nccl_version, r.avg_busbw) for r in alone]

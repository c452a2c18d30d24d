"""Fuzzed nccl-tests logs (text and -J JSON) through the parser and the comparison: sane figures or one
FabricsimError."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.reports import compare
from fabricsim.reports.nccltests_log import parse_nccl_tests
from fabricsim.reports.nccltests_table import PerfRow
from fabricsim.units import MAX_BYTES
from tests.fuzz.conftest import RUNS, run_fuzz
from tests.fuzz.strategies import edited_json, edited_log

FIXTURES = Path(__file__).parents[1] / "reports" / "fixtures"
TEXT_LOGS = [p.read_text() for p in sorted(FIXTURES.glob("*.log"))]
JSON_LOGS = [p.read_text() for p in sorted(FIXTURES.glob("*.json"))]


def check_log(text: str) -> None:
    try:
        log = parse_nccl_tests(text)
    except FabricsimError:
        return
    assert log.rows and (log.nranks is None or log.nranks >= 1)
    assert all(0 <= r.size_bytes <= MAX_BYTES and r.count >= 0 for r in log.rows)
    for placement in ("out", "in"):  # what `fabricsim compare` does with the rows, against a fixed prediction
        try:
            kept, skipped = compare.comparable(log.rows, placement)
        except FabricsimError:
            continue
        predicted = [PerfRow(r.size_bytes, r.count, r.dtype, "sum", -1, 1e-3, r.size_bytes / 1e-3, r.size_bytes / 1e-3)
                     for r in kept]
        try:
            rows = compare.compare_rows(kept, predicted, log.collective or "all_reduce", log.nranks or 8, placement)
        except FabricsimError:
            continue
        summary = compare.summarize(rows)
        figures = [v for r in rows for v in (r.measured_time_s, r.measured_busbw, r.predicted_time_s, r.error_pct)]
        assert all(math.isfinite(v) for v in figures) and all(r.measured_time_s > 0 for r in rows)
        assert math.isfinite(summary.median_abs_pct) and summary.median_abs_pct >= 0
        compare.format_table(rows, summary, "fuzz", skipped)
        compare.format_json(rows, summary, {}, skipped)


@pytest.mark.parametrize("profile", RUNS)
def test_text_logs(profile):
    @given(st.sampled_from(TEXT_LOGS).flatmap(edited_log))
    def fuzz(text):
        check_log(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_json_logs(profile):
    @given(st.sampled_from(JSON_LOGS).flatmap(edited_json))
    def fuzz(text):
        check_log(text)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_any_text(profile):
    @given(st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
    def fuzz(text):
        check_log(text)

    run_fuzz(profile, fuzz)

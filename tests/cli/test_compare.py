"""`fabricsim compare`: real nccl-tests logs against predictions on a preset cluster."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.cli.compare import compare
from fabricsim.errors import FabricsimError
from fabricsim.reports.compare import compare_rows, summarize
from fabricsim.reports.nccltests_log import ParsedRow, Placement
from fabricsim.reports.nccltests_table import PerfRow

FIXTURES = Path(__file__).resolve().parents[1] / "reports" / "fixtures"
LOG_10N = str(FIXTURES / "v2_17_all_reduce_10n_mpi.log")
SIZES_10N = [33554432, 134217728, 1073741824, 2147483648, 17179869184]


def run(*args: str):
    return CliRunner().invoke(compare, list(args))


def ok(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def fails(*args: str) -> str:
    result = run(*args)
    assert isinstance(result.exception, FabricsimError), result.output + repr(result.exception)
    message = str(result.exception)
    assert "\n" not in message
    return message


def test_table_one_row_per_size_and_finite_summary():
    out = ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10")
    data = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    assert [int(d[0]) for d in data] == SIZES_10N
    assert [float(d[1]) for d in data] == [798.52, 1250.59, 6149.19, 12586.1, 105854.0]  # measured time, out-of-place
    assert all(math.isfinite(float(d[5])) for d in data)
    assert all("/" in d[6] for d in data)  # algo/proto/channels picked
    summary = next(line for line in out.splitlines() if line.startswith("# rows 5:"))
    assert "median" in summary and "p90" in summary and "mean signed" in summary
    assert "nan" not in out and "inf" not in out
    assert any(line.startswith("# worst size ") for line in out.splitlines())


def test_json_parses_and_matches_the_log():
    doc = json.loads(ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--format", "json"))
    assert doc["collective"] == "all_reduce" and doc["log_nranks"] == 80 and doc["gpus"] == 80
    assert [r["size_bytes"] for r in doc["rows"]] == SIZES_10N
    assert doc["rows"][0]["measured_busbw_GBps"] == pytest.approx(82.99, abs=0.01)
    for r in doc["rows"]:
        assert r["error_pct"] == pytest.approx((r["predicted_busbw_GBps"] / r["measured_busbw_GBps"] - 1) * 100)
    s = doc["summary"]
    assert s["rows"] == 5 and all(math.isfinite(v) for v in s.values())
    assert s["median_abs_pct"] <= s["p90_abs_pct"] <= abs(s["worst_error_pct"])
    assert doc["skipped"] == []


def test_in_place_columns_and_nccl_model():
    doc = json.loads(ok(LOG_10N, "--cluster", "dgx-h100", "--gpus", "80", "--placement", "in", "--cost-model", "nccl",
                        "--format", "json"))
    assert doc["rows"][0]["measured_time_us"] == pytest.approx(801.71)
    assert doc["cost_model"] == "nccl" and len(doc["rows"]) == 5


def test_output_is_deterministic():
    args = (LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--level", "analytical")
    assert ok(*args) == ok(*args)


def test_plot_writes_png(tmp_path):
    png = tmp_path / "cmp.png"
    ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--level", "analytical", "--plot", str(png))
    first = png.read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--level", "analytical", "--plot", str(png))
    assert png.read_bytes() == first


def test_plot_to_missing_directory_is_one_line_error(tmp_path):
    msg = fails(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--plot", str(tmp_path / "no" / "x.png"))
    assert "cannot write plot" in msg


def test_rank_mismatch_says_how_to_fix():
    msg = fails(LOG_10N, "--cluster", "dgx-h100", "--nodes", "1")
    assert msg == "the log ran on 80 ranks but dgx-h100 --nodes 1 has 8 GPUs: use --gpus 80"


def test_main_prints_error_and_exits_2(capsys):
    from fabricsim.cli.main import main

    assert main(["compare", str(FIXTURES / "missing.log"), "--cluster", "dgx-h100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read nccl-tests log") and err.count("\n") == 1


@pytest.mark.parametrize("args, expect", [
    ((str(FIXTURES / "missing.log"), "--cluster", "dgx-h100"), "cannot read nccl-tests log"),
    ((str(FIXTURES / "malformed_no_rows.log"), "--cluster", "dgx-h100"), "no nccl-tests data rows"),
    ((str(FIXTURES / "v2_19_all_reduce.json"), "--cluster", "no-such-cluster"), "unknown cluster"),
    ((str(FIXTURES / "v2_9_all_gather_noroot.log"), "--cluster", "dgx-h100"), "pass --collective"),
    ((str(FIXTURES / "v2_19_all_reduce.json"), "--cluster", "dgx-h100", "--collective", "all_gather"),
     "drop --collective"),
])
def test_bad_input_is_one_line_error(args, expect):
    assert expect in fails(*args)


def test_log_without_collective_and_zero_count_row():
    out = ok(str(FIXTURES / "v2_9_all_gather_noroot.log"), "--cluster", "dgx1-v100", "--collective", "all_gather")
    data = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    assert [int(d[0]) for d in data] == [1048576, 134217728]
    assert "# skipped size 8 B: count 0: no data moved" in out


@pytest.mark.parametrize("name, nodes", [("v2_19_sendrecv_exponent_na.log", "2"),
                                         ("v2_19_reduce_scatter_per_iter.log", "1"),
                                         ("v2_19_all_reduce.json", "1")])
def test_every_fixture_layout(name, nodes):
    doc = json.loads(ok(str(FIXTURES / name), "--cluster", "dgx-h100", "--nodes", nodes, "--level", "analytical",
                        "--format", "json"))
    assert doc["rows"] and all(math.isfinite(r["error_pct"]) for r in doc["rows"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 1 << 34), st.floats(1.0, 1e7), st.floats(0.01, 100.0)),
                min_size=1, max_size=12),
       st.integers(2, 4096))
def test_error_is_busbw_ratio(cases, nranks):
    """A prediction k times faster than measured has busbw error (k - 1) * 100 %, whatever the size."""
    measured, predicted = [], []
    for size, time_us, k in cases:
        measured.append(ParsedRow(size, size // 4, "float", "sum", -1, Placement(time_us, 0.0, 0.0, None), None))
        t = time_us * 1e-6 / k
        bus = 2 * (nranks - 1) / nranks * size / t
        predicted.append(PerfRow(size, size // 4, "float", "sum", -1, t, size / t, bus, "ring", "simple", 1))
    rows = compare_rows(measured, predicted, "all_reduce", nranks, "out")
    for row, (_, _, k) in zip(rows, cases):
        assert row.error_pct == pytest.approx((k - 1) * 100, rel=1e-9, abs=1e-9)
        assert row.predicted_busbw / row.measured_busbw == pytest.approx(k, rel=1e-9)
    s = summarize(rows)
    abs_err = sorted(abs(r.error_pct) for r in rows)
    assert s.rows == len(rows) and s.median_abs_pct <= s.p90_abs_pct <= abs_err[-1] + 1e-9
    assert abs(s.worst_error_pct) == pytest.approx(abs_err[-1])


def test_a_log_is_predicted_under_the_nccl_it_printed_unless_told_otherwise():
    assert json.loads(ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--format", "json"))["nccl"] == "NCCL 2.29.2"
    doc = json.loads(ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10", "--format", "json", "--nccl-version", "2.17"))
    assert doc["nccl"] == "NCCL 2.17.1" and all(r["algo"] != "nvls_tree" for r in doc["rows"])
    assert "NCCL 2.29.2 rules" in ok(LOG_10N, "--cluster", "dgx-h100", "--nodes", "10").splitlines()[0]

"""`fs.sweep` and `fs.report`: a sweep file run from Python returns what it did and reads back as data; the report
of its results is written; the SweepResult's repr is short."""

from __future__ import annotations

import pytest

import fabricsim as fs
from tests.sweeps.helpers import write_sweep

SWEEP = """
cluster: dgx-h100
perf: {level: analytical, sizes: [1M, 64M]}
axes: {cluster.nodes: [1, 2]}
"""


def test_sweep_runs_resumes_and_reads_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = []
    result = fs.sweep(write_sweep(tmp_path, SWEEP), workers=1, progress=lambda *a: seen.append(a))
    assert isinstance(result, fs.SweepResult) and result.output.name == "sweep.parquet"
    assert (result.total, result.computed, result.resumed, result.failed, result.backend) == (4, 4, 0, 0, "pool")
    assert seen[0] == (0, 4, 0) and seen[-1] == (4, 4, 0)
    assert repr(result).startswith("SweepResult('sweep': 4 points, 4 computed, 0 resumed, 0 failed")
    records = result.to_records()
    assert [r["point"] for r in records] == [0, 1, 2, 3] and {r["cluster.gpus"] for r in records} == {8, 16}
    again = fs.sweep(tmp_path / "sweep.yaml", workers=1)
    assert (again.computed, again.resumed) == (0, 4)
    pytest.importorskip("plotly", reason="the report extra is not installed")
    page = result.report(tmp_path / "r.html", point=records[-1]["key"][:8])
    assert page.read_text().count("id=\"chart-") == 3  # busbw, algorithms, links


def test_csv_and_a_bad_format(tmp_path):
    result = fs.sweep(write_sweep(tmp_path, SWEEP), tmp_path / "out.csv", workers=1)
    assert result.format == "csv" and result.to_pandas().shape[0] == 4
    with pytest.raises(fs.FabricsimError, match="unknown results format 'xlsx'"):
        fs.sweep(tmp_path / "sweep.yaml", tmp_path / "out.x", format="xlsx")
    with pytest.raises(fs.FabricsimError, match="no results files given"):
        fs.report([], tmp_path / "r.html")
    with pytest.raises(fs.FabricsimError, match="results file .* does not exist"):
        fs.report(tmp_path / "none.parquet", tmp_path / "r.html")

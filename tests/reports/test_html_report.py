"""The HTML report as text: its sections follow the rows it is given, data never becomes markup, the same rows give
the same bytes, and perf / train / compare --report write it for one run. (tests/reports/test_report_browser.py
opens it in a real browser.)"""

from __future__ import annotations

import importlib.util
import re

import pytest

# looked for, not imported, when the file is collected (itables loads pandas): every xdist worker collects every file
pytestmark = pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("plotly", "itables")),
                                reason="the report extra is not installed (pip install 'fabricsim[report]')")

from fabricsim.cli.main import main  # noqa: E402
from fabricsim.reports import html_report  # noqa: E402

EVIL = "<script>alert('pwned')</script> & \"co\""


def perf_rows(name: str = "dgx-h100") -> list[dict]:
    """Rows as a sweep writes them, for two clusters (the second named `name`) and three sizes (figures made up:
    only drawing is tested)."""
    rows = []
    for nodes in (1, 2):
        for i, size in enumerate((1 << 20, 1 << 25, 1 << 30)):
            rows.append({"key": f"k{nodes}{i}", "point": len(rows), "kind": "perf", "status": "ok", "error": None,
                         "cluster": "dgx-h100", "cluster.name": name if nodes == 2 else "dgx-h100",
                         "cluster.nodes": nodes,
                         "cluster.gpus": 8 * nodes, "perf.collective": "all_reduce", "perf.size": size,
                         "size_bytes": size, "time_us": 10.0 * (i + 1), "busbw_GBps": 100.0 * (i + 1) / nodes,
                         "algo": "ring" if i < 2 else "nvls", "proto": "simple"})
    rows.append({**rows[0], "key": "bad", "point": len(rows), "status": "failed", "error": EVIL, "busbw_GBps": None})
    return rows


def charts(page: str) -> set[str]:
    return set(re.findall(r"id=\"chart-([a-z]+)\"", page))


def test_sections_follow_the_rows():
    page = html_report.build(perf_rows(), "t")
    assert charts(page) == {"busbw", "algorithms"}
    assert "no training points" in page and "no fault columns" in page and "no collective point to show" in page
    faulty = [{**r, "faults.failed_spines": f} for f in (0, 1, 2) for r in perf_rows() if r["status"] == "ok"]
    assert "failures" in charts(html_report.build(faulty, "t"))


def test_data_never_becomes_markup():
    page = html_report.build(perf_rows(EVIL), EVIL)
    assert "<script>alert" not in page and "</script> &" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt; &amp; &quot;co&quot;" in page  # title, summary
    # in the charts' and the table's JSON the name arrives as entities, which Plotly and DataTables show as text
    assert '"name":"name=&lt;script&gt;alert' in page  # a chart's legend entry
    assert "\\\"&lt;script&gt;alert('pwned')&lt;/script&gt; &amp;" in page  # a cell of the table's data


def test_the_same_rows_give_the_same_bytes():
    assert html_report.build(perf_rows(), "t") == html_report.build(perf_rows(), "t")


def test_the_page_needs_no_network():
    page = html_report.build(perf_rows(), "t")
    assert not re.search(r"<script[^>]*\bsrc=", page) and not re.search(r"<link[^>]*\bhref=", page)
    assert "Plotly.newPlot" in page and "dt_src" not in page  # plotly.js and the DataTables bundle embedded


def test_perf_train_and_compare_write_a_report(tmp_path):
    perf = tmp_path / "perf.html"
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "-b", "1M", "-e", "64M", "-f", "8", "--level", "analytical",
                 "--report", str(perf)]) == 0
    assert charts(perf.read_text()) == {"busbw", "algorithms", "links"}
    train = tmp_path / "train.html"
    assert main(["train", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,16", "--report",
                 str(train)]) == 0
    assert charts(train.read_text()) == {"scaling"}
    log = "tests/reports/fixtures/v2_17_all_reduce_10n_mpi.log"
    cmp = tmp_path / "compare.html"
    assert main(["compare", log, "-c", "dgx-h100", "--nodes", "10", "--level", "analytical", "--report",
                 str(cmp)]) == 0
    page = cmp.read_text()
    assert charts(page) == {"busbw", "algorithms"} and "source=measured" in page and "source=predicted" in page

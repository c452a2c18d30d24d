"""The sweep report in a real browser: headless Chromium (Debian's `chromium`; .ci/run installs it) driven by
Playwright, which reports console messages, page errors, dialogs and every request the page makes. The report of
real sweep results (a cluster whose name holds a script) must draw every chart, log no error, fetch nothing from
the network, show the name as text, and sort and filter its table. The screenshot is saved to
build/test-reports/report.png.

Playwright, not a hand-rolled DevTools client or `--dump-dom`: it is maintained with Chromium's protocol, runs the
page's scripts to completion before we look (waiting on a condition, not a sleep), and gives console messages,
uncaught errors and network requests as events, which `--dump-dom` cannot. Its own browser download is not used:
it drives the system's chromium."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fabricsim import sweeps
from fabricsim.reports.results import ResultsWriter, read_rows, typed_row
from fabricsim.sweeps import run
from fabricsim.sweeps.reporting import report
from fabricsim.topology import preset_spec
from tests.sweeps.helpers import write_sweep

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

pytest.importorskip("plotly", reason="the report extra is not installed (pip install 'fabricsim[report]')")
EVIL = "<script>alert('pwned')</script>-h100"
SHOT = Path("build") / "test-reports" / "report.png"


def _browser():
    """Playwright and Chromium's path, or a skip saying what is missing (a failure under CI, which installs both)."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing, sync_playwright = "playwright is not installed (pip install -e '.[test]')", None
    path = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if missing is None and path is None:
        missing = "no chromium on PATH (apt-get install -y chromium; .ci/run installs it)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return sync_playwright, path


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    spec = preset_spec("dgx-h100").to_yaml().replace("name: dgx-h100", f'name: "{EVIL}"')
    (d / "evil.yaml").write_text(spec)
    perf = sweeps.load(write_sweep(d, """
        cluster: evil.yaml
        perf: {level: analytical, sizes: [64K, 4M, 256M]}
        axes: {cluster.nodes: [1, 2], perf.collective: [all_reduce, all_gather]}
        """, "perf.yaml"))
    train = sweeps.load(write_sweep(d, """
        cluster: dgx-h100
        train: {model: llama3-8b}
        axes: {cluster.nodes: [1, 2]}
        """, "train.yaml"))
    run.run(perf, d / "perf.parquet", workers=2)
    run.run(train, d / "train.parquet", workers=2)
    # the collective results with a fault column, as failure sweeps will write them: the healthy figure, then half
    faults = {**perf.columns, "faults.failed_spines": "int"}
    rows = read_rows(d / "perf.parquet")
    writer = ResultsWriter(d / "faults.parquet", faults, "parquet")
    for lost in (0, 1):
        for r in rows:
            writer.write(typed_row({**r, "key": r["key"] + str(lost), "faults.failed_spines": lost,
                                    "busbw_GBps": r["busbw_GBps"] / (1 + lost)}, faults))
    writer.close()
    out = d / "report.html"
    report([d / "faults.parquet", d / "train.parquet"], out)
    return out


def test_the_report_renders_in_chromium(report_file, pytestconfig):
    sync_playwright, chromium = _browser()
    problems, requests, dialogs = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report_file.as_uri())
            page.wait_for_function("document.querySelectorAll('table.dataTable tbody tr').length > 0 && "
                                   "[...document.querySelectorAll('div[id^=chart-]')].every("
                                   "d => d.querySelector('.main-svg'))", timeout=30_000)
            charts = page.evaluate("[...document.querySelectorAll('div[id^=chart-]')].map(d => [d.id, "
                                   "d.querySelectorAll('.scatterlayer .trace, .heatmaplayer image, .hm').length])")
            assert dict(charts).keys() == {"chart-busbw", "chart-algorithms", "chart-scaling", "chart-failures",
                                           "chart-links"}
            assert all(n > 0 for _, n in charts), charts  # every chart drew its data
            text = page.inner_text("body")
            assert EVIL in text and not dialogs  # the name is text on the page; its script never ran
            assert page.evaluate("document.querySelectorAll('script').length") == page.evaluate(
                "[...document.querySelectorAll('script')].filter(s => !s.textContent.includes('pwned')).length")
            info = page.locator("#results_info")
            total = info.inner_text()
            kind = page.locator("#results_wrapper th input[placeholder=kind]").first  # the kind column's filter
            kind.press_sequentially("train")
            page.wait_for_function("document.querySelector('#results_info').innerText.includes('filtered')")
            assert page.locator("#results tbody tr").count() == 2 and "(filtered from" in info.inner_text()
            kind.press("Control+A")
            kind.press("Backspace")
            page.wait_for_function(f"document.querySelector('#results_info').innerText === {total!r}")
            busbw = page.evaluate("[...document.querySelectorAll('#results_wrapper thead th')].findIndex("
                                  "th => th.querySelector('input[placeholder=busbw_GBps]'))")
            column = (f"[...document.querySelectorAll('#results tbody tr')].map(tr => tr.children[{busbw}].innerText)"
                      ".filter(v => v.trim()).map(Number).filter(x => !Number.isNaN(x))")  # training rows have none
            before = page.evaluate(column)
            assert before != sorted(before)  # the click has something to sort
            page.locator("#results_wrapper th:has(input[placeholder=busbw_GBps]) .dt-column-order").first.click()
            # DataTables redraws after the click's event: wait for the redrawn rows, not a sleep (a busy machine
            # read them before the redraw)
            page.wait_for_function(f"(v => v.length > 3 && v.every((x, i) => i === 0 || v[i - 1] <= x))({column})")
            shown = page.evaluate(f"[...document.querySelectorAll('#results tbody tr')].map("
                                  f"tr => tr.children[{busbw}].innerText)")
            values = [float(v) for v in shown if v.strip()]
            assert len(values) > 3 and values == sorted(values)  # the header sorts the column
            SHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(pytestconfig.rootpath) / SHOT), full_page=True)
        finally:
            browser.close()
    assert not problems, problems
    assert all(u.startswith(("file:", "blob:", "data:")) for u in requests), requests  # no network

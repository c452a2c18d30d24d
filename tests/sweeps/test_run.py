"""Running sweeps on the local pool: one row per point with its configuration, the same bytes however the work is
split, failures recorded per point, resumable, and no point lost or duplicated when a worker or the driver is
killed mid-sweep."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys

import pytest

from fabricsim import sweeps
from fabricsim.reports.results import read_rows
from fabricsim.sweeps import compute, run, store
from tests.sweeps.helpers import PERF_SWEEP, pool_workers, write_sweep

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kill tests read Linux's /proc")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The 16-point sweep run once, one worker, one point per task: what every other run must write, byte for byte."""
    d = tmp_path_factory.mktemp("reference")
    plan = sweeps.load(write_sweep(d))
    out = d / "results.parquet"
    done = run.run(plan, out, workers=1, task_points=1)
    assert (done.total, done.computed, done.failed) == (16, 16, 0)
    return plan, out.read_bytes(), out


def test_rows_hold_the_point_configuration_and_its_figures(reference):
    import pandas  # here, not at the top: every xdist worker collects this file, one runs it
    plan, _, out = reference
    df = pandas.read_parquet(out)
    assert list(df.columns) == list(plan.columns)
    assert list(df["point"]) == list(range(16)) and df["key"].is_unique
    assert set(df["status"]) == {"ok"}
    assert set(df["cluster.nodes"]) == {1, 2} and set(df["cluster.gpus"]) == {8, 16}
    assert (df["cluster.gpu"] == "H100").all() and (df["perf.level"] == "analytical").all()
    big = df[(df["perf.collective"] == "all_reduce") & (df["cluster.nodes"] == 1) & (df["perf.size"] == 256 << 20)]
    assert big["busbw_GBps"].iloc[0] > 300 and big["algo"].iloc[0] == "nvls"  # 8x H100: NVLS at large sizes
    # the same figures fabricsim perf gives for that point
    import fabricsim as fs

    expect = fs.perf("dgx-h100", "all_reduce", [256 << 20], level="analytical").to_records()[0]
    assert big["busbw_GBps"].iloc[0] == expect["busbw_GBps"] and big["time_us"].iloc[0] == expect["time_us"]


def test_the_same_bytes_however_the_work_is_split(reference, tmp_path):
    plan, expected, _ = reference
    out = tmp_path / "r.parquet"
    run.run(plan, out, workers=2)  # several points per task, two workers finishing in any order
    assert out.read_bytes() == expected
    assert not store.journal_path(out).exists() and not store.temporary_path(out).exists()


def test_csv_holds_the_same_rows(reference, tmp_path):
    import pandas  # here, not at the top: every xdist worker collects this file, one runs it
    plan, _, parquet = reference
    out = tmp_path / "r.csv"
    run.run(plan, out, workers=2)
    assert read_rows(out, plan.columns) == read_rows(parquet)
    assert pandas.read_csv(out).shape == (16, len(plan.columns))


def test_a_script_without_the_main_guard_is_told_so_and_charges_no_point(tmp_path):
    """forkserver workers import the driver's script again: unguarded, the workers cannot start; the sweep says why
    and records no point as failed, so the guarded rerun computes every point."""
    write_sweep(tmp_path, PERF_SWEEP.replace("[1, 2]", "[1]"))
    call = 'print(fs.sweep("sweep.yaml", "out.csv", format="csv", workers=1).failed)'
    (tmp_path / "bare.py").write_text(f"import fabricsim as fs\n{call}\n")
    (tmp_path / "guarded.py").write_text(f"import fabricsim as fs\nif __name__ == '__main__':\n    {call}\n")
    bare = subprocess.run([sys.executable, "bare.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert bare.returncode != 0 and "must guard it with `if __name__ == '__main__':`" in bare.stderr
    guarded = subprocess.run([sys.executable, "guarded.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert guarded.returncode == 0 and guarded.stdout.strip() == "0", guarded.stderr
    assert len(read_rows(tmp_path / "out.csv")) == 8  # 2 collectives x 4 sizes


def test_an_empty_text_setting_read_back_from_csv_still_rebuilds_the_point(reference):
    """CSV has no empty-versus-missing: a cluster's '' setting (pcie_switch where a node has no PCIe switch) reads
    back as no value, and the report's link view takes it as the '' it was written from."""
    from fabricsim.sweeps.reporting import links_of

    _, _, parquet = reference
    row = next(r for r in read_rows(parquet) if r["status"] == "ok" and r["kind"] == "perf")
    blank = {**row, "cluster.pcie_switch": None, "cluster.pcie_switches_per_node": 0}
    assert links_of(blank).title == links_of({**blank, "cluster.pcie_switch": ""}).title


def test_a_rerun_computes_nothing_and_new_values_only_what_is_new(reference, tmp_path):
    import pandas  # here, not at the top: every xdist worker collects this file, one runs it
    plan, expected, _ = reference
    out = tmp_path / "r.parquet"
    out.write_bytes(expected)
    again = run.run(plan, out, workers=2)
    assert (again.computed, again.resumed) == (0, 16) and out.read_bytes() == expected
    bigger = sweeps.load(write_sweep(tmp_path, PERF_SWEEP.replace("[1, 2]", "[1, 2, 4]")))
    grown = run.run(bigger, out, workers=2)
    assert (grown.total, grown.computed, grown.resumed) == (24, 8, 16)
    df = pandas.read_parquet(out)
    assert list(df["point"]) == list(range(24)) and df["key"].is_unique and set(df["cluster.nodes"]) == {1, 2, 4}


def test_failures_are_rows_with_their_error_and_the_sweep_goes_on(tmp_path):
    import pandas  # here, not at the top: every xdist worker collects this file, one runs it
    plan = sweeps.load(write_sweep(tmp_path, """
        cluster: dgx-h100
        perf: {level: analytical, sizes: [1M]}
        axes:
          cluster.gpus: [8, 12, 16]
          perf.algo: [ring, collnet_direct]
        """))
    done = run.run(plan, tmp_path / "r.parquet", workers=2)
    df = pandas.read_parquet(tmp_path / "r.parquet")
    assert done.total == 6 and done.failed == 4 == (df["status"] == "failed").sum()
    errors = dict(zip(zip(df["cluster.gpus"], df["perf.algo"]), df["error"]))
    assert "not whole nodes of 8 GPUs" in errors[(12, "ring")]
    assert "CollNet is off on dgx-h100" in errors[(8, "collnet_direct")]
    assert pandas.isna(errors[(8, "ring")]) and pandas.isna(errors[(16, "ring")])
    again = run.run(plan, tmp_path / "r.parquet", workers=2)
    assert again.computed == 0  # a failure is a finished point; --retry-failed computes it again
    assert run.run(plan, tmp_path / "r.parquet", workers=2, retry_failed=True).computed == 4


def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(reference, tmp_path):
    plan, expected, _ = reference
    killed = []

    def kill_one(done: int, total: int, failed: int) -> None:
        if done >= 2 and not killed:
            workers = pool_workers(os.getpid())
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])

    out = tmp_path / "r.parquet"
    done = run.run(plan, out, workers=2, task_points=1, progress=kill_one)
    assert killed, "no worker was found to kill"
    assert (done.total, done.failed, done.computed) == (16, 0, 16)
    assert out.read_bytes() == expected  # every point once, with the figures of the run nobody killed


DRIVER_KILLED_AFTER_FOUR = """
import os, sys
from fabricsim import sweeps
from fabricsim.sweeps import run

def killed_after_four(done, total, failed):
    if done >= 4:
        os._exit(137)  # as SIGKILL does: no cleanup, no results file, the journal as far as it was written

if __name__ == "__main__":
    run.run(sweeps.load(sys.argv[1]), sys.argv[2], workers=1, task_points=1, progress=killed_after_four)
"""


def test_the_driver_killed_mid_sweep_resumes_from_its_journal(reference, tmp_path):
    plan, expected, _ = reference
    out = tmp_path / "r.parquet"
    journal = store.journal_path(out)
    # a driver that dies at a known point, in a process of its own (one killed from outside raced its own finish: a
    # sweep of 16 points can end between two polls of its journal)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER_KILLED_AFTER_FOUR)
    log = tmp_path / "driver.err"
    with log.open("w") as err:
        driver = subprocess.Popen([sys.executable, str(script), str(write_sweep(tmp_path)), str(out)], cwd=tmp_path,
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=err)
        try:
            code = driver.wait(timeout=120)
        finally:
            try:
                os.killpg(driver.pid, signal.SIGKILL)  # the pool the dead driver left (it ends by itself too)
            except ProcessLookupError:
                pass
    assert code == 137, log.read_text()
    kept = [json.loads(line)["key"] for line in journal.read_text().splitlines() if line.strip()]
    assert 4 <= len(kept) < 16 and not out.exists()
    with journal.open("a") as f:
        f.write('{"key": "cut short by the kil')  # a line the kill cut in half is ignored
    done = run.run(plan, out, workers=2)
    assert done.resumed == len(set(kept)) and done.computed == 16 - done.resumed
    assert out.read_bytes() == expected and not journal.exists()


def test_points_on_one_cluster_build_it_once_per_worker(monkeypatch, tmp_path):
    from fabricsim import topology

    plan = sweeps.load(write_sweep(tmp_path))
    built = []
    real = topology.build
    monkeypatch.setattr(topology, "build", lambda spec: built.append(spec.nodes) or real(spec))
    monkeypatch.setattr(compute, "_TOPOLOGIES", type(compute._TOPOLOGIES)())
    rows = [r for task in plan.tasks(workers=1, task_points=3) for r in compute.run_task(task)]
    assert len(rows) == 16 and built == [1, 2]  # 16 points, 6 tasks, two clusters: two builds


def test_the_command_prints_a_summary_and_draws_a_bar_on_a_terminal(monkeypatch, tmp_path):
    from fabricsim.cli import progress
    from fabricsim.cli.main import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    sweep_file = write_sweep(tmp_path, """
        cluster: dgx-h100
        perf: {level: analytical, sizes: [1M, 2M]}
        axes: {cluster.gpus: [8, 12]}
        """)
    term, out = Terminal(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)
    assert main(["sweep", str(sweep_file), "-o", str(tmp_path / "r.csv"), "--workers", "1"]) == 0
    assert "4 points: 4 computed, 0 already done, 2 failed" in out.getvalue()
    drawn = term.getvalue()
    assert "sweep:" in drawn and "failed=" in drawn and "/4 [00:00<" in drawn  # done/total [elapsed<time left]
    assert "note: point" in drawn and "not whole nodes" in drawn

"""`fabricsim jobs`: the table, JSON, the placement comparison, plot and trace files, and clear errors."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.main import main

JOBS = """cluster: dgx-h100
nodes: 4
jobs:
  - {name: ar, gpus: 16, collective: all_reduce, size: 64M, iterations: 3}
  - {name: ag, gpus: 16, collective: all_gather, size: 64M, iterations: 2, start: 1ms, gap: 100us}
"""


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def jobs_file(tmp_path):
    path = tmp_path / "jobs.yaml"
    path.write_text(JOBS)
    return str(path)


def test_table_names_every_job_and_its_slowdown(capsys, jobs_file):
    rc, out, err = run(capsys, "jobs", jobs_file)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("# fabricsim jobs on dgx-h100: 32 GPUs, engine level flow")
    assert lines[1].split()[:4] == ["job", "GPUs", "communication", "per"]
    assert lines[2].startswith("ar ") and lines[3].startswith("ag ") and "packed" in lines[2]
    assert "fabric utilisation over the" in out


def test_json_and_placement_comparison(capsys, jobs_file):
    rc, out, _ = run(capsys, "jobs", jobs_file, "--format", "json", "--placement", "scattered", "--level", "analytical")
    doc = json.loads(out)
    assert rc == 0 and doc["placement"] == "scattered" and doc["level"] == "analytical"
    assert [j["name"] for j in doc["jobs"]] == ["ar", "ag"] and all(j["slowdown"] >= 1 - 1e-12 for j in doc["jobs"])
    rc, out, _ = run(capsys, "jobs", jobs_file, "--compare-placement", "--format", "json")
    assert rc == 0 and [r["placement"] for r in json.loads(out)["runs"]] == ["packed", "scattered"]
    rc, out, _ = run(capsys, "jobs", jobs_file, "--compare-placement")
    assert "packed alone ms" in out and "scattered alone ms" in out


def test_plot_and_trace_are_written(capsys, jobs_file, tmp_path):
    pytest.importorskip("matplotlib")
    png, trace = tmp_path / "jobs.png", tmp_path / "jobs.json"
    rc, _, _ = run(capsys, "jobs", jobs_file, "--compare-placement", "--plot", str(png), "--trace", str(trace))
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "M" and e["name"] == "process_name" for e in events) == 6  # 2 jobs + fabric, twice


@pytest.mark.parametrize("text, args, message", [
    ("cluster: dgx-h100\njobs: []\n", (), "jobs lists 0 jobs"),
    ("cluster: dgx-h100\njobs:\n  - {name: a, gpus: 16, collective: all_reduce, size: 1G}\n", (),
     "job 'a' needs 16 GPUs but only 8 of the cluster's 8 are free"),
    ("cluster: nowhere.yaml\njobs:\n  - {name: a, gpus: 8, collective: all_reduce, size: 1G}\n", (),
     "cluster file nowhere.yaml does not exist"),
    (JOBS, ("--compare-placement", "--placement", "packed"), "--compare-placement runs packed and scattered"),
    (JOBS, ("--plot", "out.gif"), "fabricsim writes .png, .pdf, .svg files"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, text, args, message):
    path = tmp_path / "jobs.yaml"
    path.write_text(text)
    rc, out, err = run(capsys, "jobs", str(path), *args)
    assert rc == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_a_missing_file_is_one_line(capsys, tmp_path):
    rc, _, err = run(capsys, "jobs", str(tmp_path / "none.yaml"))
    assert rc == 2 and "cannot read jobs file" in err


def test_schema_jobs(capsys):
    rc, out, _ = run(capsys, "schema", "jobs")
    doc = json.loads(out)
    assert rc == 0 and "jobs" in doc["$defs"]["JobsFile"]["properties"]

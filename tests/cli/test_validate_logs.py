"""`fabricsim validate --logs`: the table, --summary-only and JSON over a small index of fixture excerpts."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.main import main
from tests.validation.log_index import entry, write_index


def test_cli_logs_json_and_table(tmp_path, capsys):
    index = write_index(tmp_path, entry(env={"NCCL_DEBUG": "INFO"}))
    assert main(["validate", "--logs", "--data", str(index), "--level", "analytical", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"JSON holds {c}"))
    (log,) = doc["logs"]
    assert log["id"] == "oke-gb200-8gpu-ar" and log["busbw_points"] == 4 and len(log["rows"]) == 7
    assert doc["summary"][-1]["group"] == "all" and doc["summary"][-1]["logs"] == 1
    assert main(["validate", "--logs", "--data", str(index), "--level", "analytical", "--summary-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nccl-tests logs: absolute % error") and "oke-gb200-8gpu-ar" not in out
    assert main(["validate", "--logs", "--data", str(index), "--level", "analytical"]) == 0
    out = capsys.readouterr().out
    assert "NCCL_DEBUG=INFO: no effect (logging only)" in out  # how the run's environment is honoured
    assert "what each log's cluster file cannot say" in out  # and the cluster files' gaps (this one says it all)


def test_cli_logs_errors(tmp_path, capsys):
    assert main(["validate", "--logs", "--p2p"]) == 2
    assert "--logs scores the nccl-tests logs alone" in capsys.readouterr().err
    assert main(["validate", "--logs", "--data", str(tmp_path / "none.jsonl")]) == 2
    assert "pass --data PATH to the logs' index.jsonl" in capsys.readouterr().err

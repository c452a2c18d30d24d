"""Rows whose own source doubts them are printed and marked, and left out of every median and p90."""

from __future__ import annotations

import json

from fabricsim.cli.validate import accuracy_table
from fabricsim.validation.accuracy import Prediction, set_aside_summary, summary
from fabricsim.validation.calibration import cases
from fabricsim.validation.set_aside import DOUBTFUL_SOURCES, doubtful

DOUBTED = "github:NVIDIA/nccl issue #2409"


def _row(rid: str, source: str, busbw: float) -> dict:
    return {"id": rid, "kind": "collective", "source": source, "collective": "all_reduce",
            "size_bytes": 1 << 30, "busbw_GBps": busbw, "trust": "medium",
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1, "total_gpus": 8}}


def _predicted(rows: list[dict], predicted: float) -> list[Prediction]:
    found, skipped = cases(rows)
    assert not skipped
    return [Prediction(c, predicted, "ring", "simple", None, None) for c in found]


def test_a_listed_source_gives_its_reason_naming_it_and_others_none():
    assert DOUBTED in DOUBTFUL_SOURCES
    assert doubtful(DOUBTED).startswith(DOUBTED + ": ") and "misconfigured" in doubtful(DOUBTED)
    assert doubtful(f"  {DOUBTED} ") == doubtful(DOUBTED)
    assert doubtful("github:NVIDIA/nccl issue #2408") == ""
    assert doubtful("") == ""


def test_set_aside_rows_are_in_no_group_but_printed_with_the_reason():
    preds = _predicted([_row("coll-good-1", "some vendor page", 100.0), _row("coll-good-2", "some vendor page", 100.0),
                        _row("coll-doubted", DOUBTED, 100.0)], 110.0)
    preds[2] = Prediction(preds[2].case, 400.0, "ring", "simple", None, None)  # 300% off
    assert [p.case.set_aside != "" for p in preds] == [False, False, True]
    groups = {g[0]: g for g in summary(preds)}
    assert groups["all"][1] == 2 and abs(groups["all"][2] - 10.0) < 1e-9 and abs(groups["all"][3] - 10.0) < 1e-9
    (reason, n, med, p90), = set_aside_summary(preds)
    assert reason == doubtful(DOUBTED) and n == 1 and abs(med - 300.0) < 1e-9
    table = accuracy_table(preds, [], show_rows=True)
    doubted_line = next(line for line in table.splitlines() if line.startswith("coll-doubted"))
    assert doubted_line.endswith("set aside")
    assert not any(line.endswith("set aside") for line in table.splitlines() if line.startswith("coll-good"))
    assert f"set aside 1 row (in no group above; median 300.0%, p90 300.0%): their own source doubts them: {reason}" in table


def test_json_marks_the_row_and_lists_the_reason(capsys):
    from fabricsim.cli.validate import _print_accuracy

    preds = _predicted([_row("coll-good", "some vendor page", 100.0), _row("coll-doubted", DOUBTED, 100.0)], 150.0)
    _print_accuracy(preds, [], "json", summary_only=False)
    doc = json.loads(capsys.readouterr().out)
    marks = {r["id"]: r["set_aside"] for r in doc["rows"]}
    assert marks == {"coll-good": None, "coll-doubted": doubtful(DOUBTED)}
    assert doc["summary"][-1]["family"] == "all" and doc["summary"][-1]["rows"] == 1
    assert doc["set_aside"] == [{"reason": doubtful(DOUBTED), "rows": 1, "median": 50.0, "p90": 50.0}]

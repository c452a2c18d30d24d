"""A row whose calibration figure its own source contradicts is scored on the source's figure, marked and explained."""

from __future__ import annotations

import json

from fabricsim.cli.validate import _print_accuracy, accuracy_table
from fabricsim.validation.accuracy import Prediction
from fabricsim.validation.calibration import cases
from fabricsim.validation.errata import CORRECTED_BUSBW, corrected_busbw

FIXED = "coll-autodl-2080ti-all_gather-peak"


def _row(rid: str, busbw: float) -> dict:
    return {"id": rid, "kind": "collective", "source": "a blog post", "collective": "all_gather",
            "size_bytes": 1 << 30, "busbw_GBps": busbw, "trust": "medium",
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1, "total_gpus": 8}}


def test_a_corrected_row_is_scored_on_the_source_figure_and_others_on_their_own():
    found, skipped = cases([_row(FIXED, 7.69), _row("coll-other", 7.69)])
    assert not skipped
    fixed, other = found
    assert fixed.measured == CORRECTED_BUSBW[FIXED][0] == 3.84 and "algbw" in fixed.corrected
    assert other.measured == 7.69 and other.corrected == ""
    assert corrected_busbw("coll-other") is None


def test_the_table_and_json_mark_the_row_and_give_the_reason(capsys):
    found, _ = cases([_row(FIXED, 7.69), _row("coll-other", 7.69)])
    preds = [Prediction(c, 5.0, "ring", "simple", None, None) for c in found]
    table = accuracy_table(preds, [], show_rows=True)
    lines = table.splitlines()
    assert next(x for x in lines if x.startswith(FIXED)).endswith("corrected")
    assert not next(x for x in lines if x.startswith("coll-other")).endswith("corrected")
    assert f"  {FIXED}: {CORRECTED_BUSBW[FIXED][1]}" in lines
    _print_accuracy(preds, [], "json", summary_only=False)
    marks = {r["id"]: r["corrected"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert marks == {FIXED: CORRECTED_BUSBW[FIXED][1], "coll-other": None}

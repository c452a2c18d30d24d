import json

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.training.calibration import calibration_rows, median_error

MEASUREMENTS = "/work/shared/calibration/measurements.jsonl"


def engine_or_skip():
    try:
        from fabricsim.training.comm import engine_comm_model
        from fabricsim.topology import load_cluster

        engine_comm_model(load_cluster("dgx-h100", gpus=8)).time("all_reduce", __import__("numpy").arange(8)[None], 1 << 20)
    except (ImportError, AttributeError, TypeError) as err:  # engine / schedules not in this tree yet
        pytest.skip(f"real engine unavailable: {err}")
    return engine_comm_model


def test_calibration_rows_with_engine_meet_target():
    import os

    if not os.path.exists(MEASUREMENTS):
        pytest.skip("shared calibration file not present")
    rows = calibration_rows(MEASUREMENTS, engine_or_skip())
    compared = [r for r in rows if r.error_pct is not None]
    assert len(compared) >= 20
    assert median_error(rows) <= 15.0
    assert all(r.skipped for r in rows if r.predicted is None)


def test_skips_say_why_and_bad_lines_error(tmp_path):
    f = tmp_path / "m.jsonl"
    row = {"id": "x", "kind": "training", "model": "GPT 1T", "hardware": {"gpu": "H100-SXM", "total_gpus": 8}}
    f.write_text(json.dumps(row) + "\n" + json.dumps({"kind": "collective"}) + "\n")
    rows = calibration_rows(f, comm_factory=lambda topo: None)
    assert len(rows) == 1 and "architecture" in rows[0].skipped
    with pytest.raises(FabricsimError, match="no calibration row"):
        median_error(rows)
    f.write_text("{not json\n")
    with pytest.raises(FabricsimError, match="line 1"):
        calibration_rows(f, comm_factory=lambda topo: None)

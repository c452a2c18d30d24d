import json

import pytest

from fabricsim.calibration_data import default_path
from fabricsim.errors import FabricsimError
from fabricsim.validation.training import calibration_rows, format_rows, median_error
from fabricsim.training.comm import engine_comm_model
from tests.conftest import REPORTS

MEASUREMENTS = default_path()
TARGET_MEDIAN = 15.0  # issue target: median absolute error <= 15% on the training rows


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason=f"calibration data not found at {MEASUREMENTS}")
def test_calibration_rows_with_engine_meet_target():
    rows = calibration_rows(MEASUREMENTS, engine_comm_model)
    REPORTS.append("fabricsim validate --training (training throughput vs published runs, engine-timed communication)\n"
                   + format_rows(rows))
    compared = [r for r in rows if r.error_pct is not None]
    assert len(compared) >= 30
    assert median_error(rows) <= TARGET_MEDIAN
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

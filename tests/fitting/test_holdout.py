"""Calibration scored honestly: fit on one real log of a cluster, predict its other logs (fitting.holdout). The
table goes to the accuracy report (tests/conftest.py; `-s` or `-v` prints it) and the pooled held-out error must
fall. Analytical engine level, as the logs' accuracy test, to keep the suite's time."""

from __future__ import annotations

import pytest

from fabricsim.fitting import holdout
from fabricsim.validation.logs import default_index
from tests.conftest import REPORTS

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

needs_data = pytest.mark.skipif(not default_index().is_file(), reason=f"calibration logs not found at {default_index()}")


@pytest.fixture(scope="module")
def held():
    return holdout.run(level="analytical")


@needs_data
def test_held_out_error_is_printed_and_lower_than_uncalibrated(held):
    pairs, skipped = held
    table = holdout.table(pairs, skipped)
    REPORTS.append(table)
    print("\n" + table)
    assert {h.cluster for h in pairs} == {name for name, _, _ in holdout.GROUPS} and not skipped
    pooled = holdout.pooled_errors(pairs)
    assert pooled["busbw_after"] < pooled["busbw_before"]
    assert pooled["time_after"] < pooled["time_before"]


@needs_data
def test_every_fit_leaves_the_parameters_its_log_does_not_exercise_alone(held):
    for h in held[0]:
        assert set(h.fit.after).isdisjoint(h.fit.not_fitted)
        if len(h.fit.calibrated.logs) == 1 and h.fit.calibrated.logs[0].gpus <= 8:
            assert "net_efficiency" not in h.fit.after  # one node or one NVLink domain: no network row

"""fabricsim's predictions against every calibration collective: the error is printed, and a regression fails."""

from __future__ import annotations

import pytest

from fabricsim.cli.validate import accuracy_table
from fabricsim.validation.accuracy import run, stats, summary
from fabricsim.calibration_data import default_path
from tests.conftest import REPORTS

# Regression bounds on the calibration set (absolute % error of busbw). Issue 13's targets: median <= 6% over all
# rows scored and p90 <= 25% on high-trust rows. Achieved at the analytical level: see build/test-reports; the
# bounds sit above the achieved values, not at the targets. The rows of nccl#2409 (RoCE, whose reporter calls the
# figures below what the hardware should reach) are set aside by their own source (validation.set_aside): printed,
# in no median. Beyond p90 sit the 2x RTX 2080 Ti box, H100 PCIe with NVLink bridge, and the mid-size (1-128 MiB)
# and CollNetChain gaps.
MEDIAN_BOUND = 6.5
P90_BOUND = 40.0

pytestmark = pytest.mark.skipif(not default_path().exists(), reason=f"calibration data not found at {default_path()}")


@pytest.fixture(scope="module")
def predictions():
    return run(level="analytical")


def test_every_collective_row_is_predicted_or_skipped_with_a_reason(predictions):
    preds, skipped = predictions
    assert len(preds) == 120
    assert all(s.reason for s in skipped)


def test_accuracy_does_not_regress(predictions):
    preds, skipped = predictions
    REPORTS.append("fabricsim validate (calibration accuracy, analytical engine level)\n"
                   + accuracy_table(preds, skipped, show_rows=False))
    fam, n, med, p90, *_ = summary(preds)[-1]
    assert fam == "all"
    assert med <= MEDIAN_BOUND, f"median abs busbw error {med:.1f}% exceeds {MEDIAN_BOUND}%"
    assert p90 <= P90_BOUND, f"p90 abs busbw error {p90:.1f}% exceeds {P90_BOUND}%"


def test_topology_simulation_is_no_worse_than_nccls_own_model(predictions):
    """On the rows both predict, fabricsim's median and p90 error do not exceed NCCL's cost model's."""
    preds, _ = predictions
    both = [p for p in preds if p.nccl_error is not None and not p.case.set_aside]
    ours, nccl = stats([p.error for p in both]), stats([p.nccl_error for p in both])
    assert ours[1] <= nccl[1] + 0.5 and ours[2] < nccl[2], f"fabricsim {ours[1:]} vs NCCL model {nccl[1:]}"

"""The doctor over the calibration set's 16 real nccl-tests logs (found through fabricsim.calibration_data), each on
its validation cluster file with the environment, collective and NCCL version its index entry records: a log that
falls more than 25% below the prediction overall gets a named cause, and a log that matches gets none it guesses."""

from __future__ import annotations

import re

import pytest

from fabricsim.diagnosis import diagnose, report
from fabricsim.validation.calibration import LogEntry, load_rows
from fabricsim.validation.logs import cluster_file, default_index
from tests.conftest import REPORTS

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

needs_data = pytest.mark.skipif(not default_index().is_file(), reason=f"calibration logs not found at {default_index()}")


def _version(text) -> str | None:
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def diagnoses():
    index = default_index()
    out = {}
    for e in sorted(load_rows(index, LogEntry), key=lambda e: e["id"]):
        text = (index.parent / e["log"]).read_text()
        out[e["id"]] = diagnose(text, e["log"], cluster=cluster_file(e["id"]), env=e.get("env") or {},
                                collective=e["collective"], nccl_version=_version(e.get("nccl_version")),
                                nranks=e["hardware"]["total_gpus"], level="analytical")
    return out


def _short_overall(d) -> bool:
    """validation.logs' view of a log: the median over busbw at >= 1 MiB or time at <= 64 KiB below 0.75x."""
    return any(v is not None and v < 1.0 - d.threshold for v in report.bands(d).values())


def _row(lid: str, d) -> str:
    b = report.bands(d)
    band = " ".join(f"{v:5.2f}" if v is not None else "    -" for v in (b["large"], b["small"]))
    ranges = "; ".join(f"{report._span(r.range)}: " + (", ".join(f"{c.rule}[{c.state}]" for c in r.causes) or "none")
                       for r in d.short) or "-"
    return f"{lid:<30} {d.verdict:<8} {band}  {ranges}"


# Logs that fall short overall with no rule that explains them, and why (printed with the report): the p5 logs' mid sizes
# once EFA's per-step cost is in the prediction (the chunk sizes the run set, NCCL_BUFFSIZE and NVLS chunks, are not
# modelled: issue 13 item 5); oke-gb200-8gpu-ar, whose mid sizes match since NCCL's per-call chunking
# (engine.chunking), at <= 256 KiB across two trays of one NVL72 domain, where no documented per-hop cost exists
# (issue 13 items 3 and 7).
UNEXPLAINED = {"aws-p5-16gpu-ar-b": "512 KiB - 128 MiB with EFA in the prediction: NCCL_BUFFSIZE 8 MiB and the plugin's "
                                    "NVLS chunk sizes are not modelled",
               "oke-gb200-8gpu-ar": "small-message time across the trays of an NVL72 domain: no documented cost"}


@needs_data
def test_every_short_log_gets_a_cause_and_matching_logs_no_guess(diagnoses):
    assert len(diagnoses) == 16
    REPORTS.append("fabricsim doctor on the calibration logs (analytical level): verdict, median measured/predicted "
                   "busbw >= 1 MiB and time <= 64 KiB, causes per short range\n"
                   + "\n".join(_row(lid, d) for lid, d in diagnoses.items()))
    for lid, d in diagnoses.items():
        if _short_overall(d) and lid in UNEXPLAINED:
            REPORTS.append(f"doctor: {lid} falls short overall with no cause found: {UNEXPLAINED[lid]}")
        elif _short_overall(d):
            assert d.causes, f"{lid} falls short overall but the doctor names no cause"
        else:
            assert all(c.state == "shown" for c in d.causes), f"{lid} matches overall; a cause it does not show was named"
        if d.verdict == "matches":
            assert not d.causes


@needs_data
def test_the_known_causes_are_found(diagnoses):
    for lid in ("aws-p5-16gpu-ar-a", "aws-p5-16gpu-ar-b"):  # their cluster files name EFA: in the prediction
        found = [f for r in diagnoses[lid].short for f in r.findings if f.rule == "transport"]
        assert found and all(f.state == "in the prediction" and "EFA" in f.title for f in found)
    # the tuner plugin it loaded, aws-ofi-nccl 1.9.2, leaves 2 nodes to NCCL's internal tuning: no algorithm cause
    assert not [c for r in diagnoses["aws-p5-16gpu-ar-a"].short for c in r.causes if c.rule == "algorithm"]
    tcpx = diagnoses["dstack-gcp-a3high-16gpu-ag"].short[0].causes[0]
    assert tcpx.rule == "transport" and "TCPX" in tcpx.title
    for lid in ("dgxa100-4gpu-ar", "dgxh100-4gpu-ar"):
        assert diagnoses[lid].verdict == "matches"
    host = [f for f in diagnoses["dgxa100-4gpu-ar-p2p-off"].short[0].findings if f.rule == "host"]
    assert host and host[0].state == "in the prediction"  # NCCL_P2P_DISABLE=1 from the index, applied

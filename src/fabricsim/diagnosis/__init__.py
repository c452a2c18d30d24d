"""The cluster doctor (issue 15): a real nccl-tests log against what its hardware should deliver, the size ranges
that fall short, and their likely causes ranked with the log's own lines as evidence.

`diagnose(text, source, ...)` returns a `Diagnosis`; `report.text` / `report.json_doc` print it.
"""

from fabricsim.diagnosis.diagnose import DEFAULT_THRESHOLD, Diagnosis, Finding, RangeDiagnosis, diagnose

__all__ = ["DEFAULT_THRESHOLD", "Diagnosis", "Finding", "RangeDiagnosis", "diagnose"]

"""Design-space sweeps: a sweep file's axes expanded into points, computed on a local process pool or on Ray,
each point one row of a Parquet or CSV results file, resumable by content key.

`kinds` (what can vary), `spec` (the sweep file's schema), `plan` (points, keys, tasks), `compute` (a worker's
side), `runners` (pool and Ray), `store` (journal, resume) and `run` (the driver).
"""

from __future__ import annotations

from pathlib import Path

from fabricsim.sweeps.plan import Plan


def load(path: str | Path) -> Plan:
    """The plan of a sweep file: its points in order, with their keys; a bad file is one FabricsimError."""
    from fabricsim.sweeps import plan, spec

    return plan.build(spec.load(path), path)

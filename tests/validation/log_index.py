"""A small logs index over the excerpts in tests/reports/fixtures (their sources: that folder's README)."""

from __future__ import annotations

import json
from pathlib import Path

FIX = Path(__file__).parents[1] / "reports" / "fixtures"


def entry(**changes) -> dict:
    """An index entry for the oke-gb200-8gpu-ar excerpt (fields as the calibration index gives them)."""
    e = {"id": "oke-gb200-8gpu-ar", "hardware": {"gpu": "GB200", "gpus_per_node": 4, "nodes": 2, "total_gpus": 8},
         "collective": "all_reduce", "family": "Blackwell", "nccl_version": "2.26.6 (container tag)", "env": {},
         "trust": "high", "log": "oke_gb200_headerless.log"}
    return {**e, **changes}


def write_index(tmp_path, *entries) -> Path:
    """An index.jsonl of `entries` in tmp_path, beside copies of their fixture logs."""
    index = tmp_path / "index.jsonl"
    index.write_text("".join(json.dumps(e) + "\n" for e in entries))
    for e in entries:
        (tmp_path / e["log"]).write_text((FIX / e["log"]).read_text())
    return index

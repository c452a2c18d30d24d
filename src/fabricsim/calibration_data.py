"""Where the calibration measurements (real published results) live.

`FABRICSIM_CALIBRATION` names the file; otherwise `shared/calibration/measurements.jsonl` is looked for
beside the checkout (the layout CI and developers have) and then under the current directory's parents.
"""

from __future__ import annotations

import os
from pathlib import Path

_RELATIVE = Path("shared") / "calibration" / "measurements.jsonl"


def default_path() -> Path:
    """The calibration file to use when none is given (it may not exist: callers say so)."""
    env = os.environ.get("FABRICSIM_CALIBRATION")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for base in (repo.parent, repo, *Path.cwd().resolve().parents, Path.cwd().resolve()):
        if (base / _RELATIVE).exists():
            return base / _RELATIVE
    return repo.parent / _RELATIVE

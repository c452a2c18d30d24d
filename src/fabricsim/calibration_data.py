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


def require(path: str | Path | None = None) -> Path:
    """`path`, or the default calibration file, checked to exist: a missing one is a FabricsimError naming
    `FABRICSIM_CALIBRATION` and `--data`, the two ways to point fabricsim at it."""
    from fabricsim.errors import FabricsimError

    if path:
        return Path(path)
    found = default_path()
    if found.exists():
        return found
    env = os.environ.get("FABRICSIM_CALIBRATION")
    if env:
        raise FabricsimError(f"FABRICSIM_CALIBRATION is {env}, which does not exist: point it at a measurements.jsonl "
                             "file, or pass --data PATH")
    raise FabricsimError(f"no calibration data found ({_RELATIVE} beside the fabricsim checkout or above the current "
                         "directory): set FABRICSIM_CALIBRATION=/path/to/measurements.jsonl or pass --data PATH")

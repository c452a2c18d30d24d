"""Shared pytest setup: the accuracy tables the validation tests compute go to a file, named in one line at
the end of the run (`-v` prints them too); `.ci/run` prints the file after the tests."""

from __future__ import annotations

import os
from pathlib import Path

# Every engine run of the suite checks the engine's physical invariants (fabricsim.engine.invariants), CLI runs in
# subprocesses included; FABRICSIM_CHECK_INVARIANTS=0 turns it off for timing a run.
os.environ.setdefault("FABRICSIM_CHECK_INVARIANTS", "1")

REPORTS: list[str] = []
REPORT_FILE = Path("build") / "test-reports" / "accuracy.txt"  # under pytest's rootdir (build/ is ignored by git)


def pytest_configure(config):
    from fabricsim.engine import invariants

    invariants.ON = os.environ["FABRICSIM_CHECK_INVARIANTS"] not in ("", "0")


def pytest_terminal_summary(terminalreporter, config):
    if not REPORTS:
        return
    path = Path(config.rootpath) / REPORT_FILE
    text = "\n\n".join(r.rstrip("\n") for r in REPORTS) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as err:
        terminalreporter.write_line(f"accuracy tables not written to {path}: {err.strerror}")
        path = None
    if config.option.verbose > 0 or path is None:
        terminalreporter.write_sep("-", "accuracy tables")
        for line in text.splitlines():
            terminalreporter.write_line(line)
    if path is not None:
        terminalreporter.write_line(f"accuracy tables ({len(REPORTS)}): {path.relative_to(config.rootpath)}")

"""Shared pytest setup: the accuracy tables the validation tests compute go to a file, named in one line at
the end of the run (`-v` prints them too); `.ci/run` prints the file after the tests. Under pytest-xdist (`-n 2`)
each worker sends the tables its tests made to the controller, which writes them in the order the tests were found:
the same file as a run in one process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Every engine run of the suite checks the engine's physical invariants (fabricsim.engine.invariants), CLI runs in
# subprocesses included; FABRICSIM_CHECK_INVARIANTS=0 turns it off for timing a run.
os.environ.setdefault("FABRICSIM_CHECK_INVARIANTS", "1")

REPORTS: list[str] = []  # tests append their tables here
REPORT_FILE = Path("build") / "test-reports" / "accuracy.txt"  # under pytest's rootdir (build/ is ignored by git)
_ORDER: dict[str, int] = {}  # test id -> its place in the collection as found (every xdist worker finds the same)
_TABLES: list[tuple[int, int, str]] = []  # (place of the test that made it, its place among that test's, table)


def pytest_configure(config):
    from fabricsim.engine import invariants

    invariants.ON = os.environ["FABRICSIM_CHECK_INVARIANTS"] not in ("", "0")


def pytest_collection_modifyitems(config, items):
    """Files marked `costly` (a module fixture that takes seconds) run first, in their order: xdist hands out whole
    files (--dist loadfile), and a worker given one of them last would finish alone while the other waits."""
    _ORDER.update((item.nodeid, i) for i, item in enumerate(items))  # before: the tables keep the files' order
    items.sort(key=lambda item: item.get_closest_marker("costly") is None)  # stable: the rest keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Note which test made each table, so the file's order does not depend on which worker ran what."""
    start = len(REPORTS)
    yield
    place = _ORDER.get(item.nodeid, len(_ORDER))
    _TABLES.extend((place, k, table) for k, table in enumerate(REPORTS[start:]))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # an xdist worker: hand the tables to the controller
        session.config.workeroutput["accuracy_tables"] = [list(t) for t in _TABLES]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the xdist controller: a worker finished; keep the tables it made."""
    _TABLES.extend(tuple(t) for t in getattr(node, "workeroutput", {}).get("accuracy_tables", []))


def pytest_terminal_summary(terminalreporter, config):
    if not _TABLES:
        return
    path = Path(config.rootpath) / REPORT_FILE
    text = "\n\n".join(t.rstrip("\n") for _, _, t in sorted(_TABLES)) + "\n"
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
        terminalreporter.write_line(f"accuracy tables ({len(_TABLES)}): {path.relative_to(config.rootpath)}")

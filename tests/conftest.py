"""Shared pytest setup: the accuracy tables the validation tests compute are printed at the end of every run."""

from __future__ import annotations

REPORTS: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for text in REPORTS:
        terminalreporter.write_line("")
        for line in text.splitlines():
            terminalreporter.write_line(line)

"""Where finished points live while a sweep runs, so that killing the driver or a worker loses none of them.

Each finished task's rows are appended to a journal beside the output (`results.parquet.journal`, one JSON row
per line) and synced to disk before the driver counts them done. The output itself is written in point order to
a temporary file and renamed over the output when every point is in; the journal is removed after that. A rerun
reads the rows of the output and of the journal, keyed by content, so a point finished once is neither computed
again nor written twice; a line cut short by a kill is ignored (its task is computed again).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.reports.results import read_rows, typed_row


def journal_path(output: Path) -> Path:
    return output.with_name(output.name + ".journal")


def temporary_path(output: Path) -> Path:
    return output.with_name(output.name + ".partial")


def finished(output: Path, columns: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """key -> row of every point already finished: in the output of an earlier run, then in the journal."""
    done: dict[str, dict[str, Any]] = {}
    if output.exists():
        for row in read_rows(output, columns):
            if isinstance(row.get("key"), str):
                done[row["key"]] = typed_row(row, columns)
    journal = journal_path(output)
    if journal.exists():
        with journal.open(encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # the last line of a journal whose driver was killed mid-write
                    continue
                if isinstance(row, dict) and isinstance(row.get("key"), str):
                    done[row["key"]] = typed_row(row, columns)
    return done


class Journal:
    """Rows appended as JSON lines, on disk before `append` returns."""

    def __init__(self, output: Path):
        self.path = journal_path(output)
        try:
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as err:
            raise FabricsimError(f"cannot write {self.path}: {err.strerror}; check the output directory") from None
        if self._file.tell():  # a line cut short by a kill: end it, so the next row starts a line of its own
            self._file.write("\n")

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self._file.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

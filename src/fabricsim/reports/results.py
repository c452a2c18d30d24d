"""The results table of a sweep: one row per point, typed columns, written as Parquet or CSV and read back.

Columns are declared before any row exists (name -> 'int' | 'float' | 'str' | 'bool', every one nullable), so a
file's schema never depends on which points ran or failed, and the same rows give the same bytes. Config columns
carry the point's settings under their kind's prefix ('cluster.nic_gbps', 'perf.collective', 'train.tp'); result
columns are the figures, named with their units as `fabricsim perf --format json` names them ('busbw_GBps').

Parquet goes through pyarrow (the `fabricsim[parquet]` extra), imported only when a Parquet file is written or
read; CSV through the standard library, floats written as Python's shortest exact repr so they read back equal.
"""

from __future__ import annotations

import csv
import math
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError, option

KINDS = ("int", "float", "str", "bool")
FORMATS = ("parquet", "csv")
SUFFIXES = {".parquet": "parquet", ".csv": "csv"}  # a results file's name -> its format
ROW_GROUP = 4096  # rows per Parquet row group: the writer holds at most this many rows
_NO_PYARROW = "Parquet needs pyarrow: pip install 'fabricsim[parquet]', or write --format csv"

# Every row: its content key, its place in the sweep, what it computed, and whether it worked.
POINT_COLUMNS: dict[str, str] = {"key": "str", "point": "int", "kind": "str", "status": "str", "error": "str"}

# A collective point: nccl-tests' figures as `fabricsim perf --format json` records them (reports.nccltests_table
# `record`), without the in-place copies, which fabricsim predicts equal to the out-of-place ones.
PERF_COLUMNS: dict[str, str] = {
    "size_bytes": "int", "count": "int", "type": "str", "redop": "str", "root": "int", "time_us": "float",
    "algbw_GBps": "float", "busbw_GBps": "float", "algo": "str", "proto": "str", "channels": "int", "level": "str",
    "bound": "str", "bottleneck": "str",
}

# A training point: the step figures of `fabricsim train --format json`, flattened, with tokens/s per GPU beside.
TRAIN_COLUMNS: dict[str, str] = {
    "model": "str", "gpus": "int", "layout": "str", "global_batch": "int", "micro_batch": "int",
    "micro_batches": "int", "precision": "str", "recompute": "str", "step_time_s": "float", "tokens_per_s": "float",
    "tokens_per_s_per_gpu": "float", "tflops_per_gpu": "float", "mfu_bf16": "float", "mfu": "float",
    "efficiency": "float", "compute_s": "float", "bubble_s": "float", "comm_fraction": "float",
    "exposed_tp_s": "float", "exposed_cp_s": "float", "exposed_ep_s": "float", "exposed_pp_s": "float",
    "exposed_dp_s": "float", "memory_GB": "float", "hbm_GB": "float", "over_hbm": "bool",
}


def kind_of(typ: Any) -> str:
    """The column kind holding values of a Python type: bool, int, float, str; a type that admits several (a
    Literal[1, 2, 3, 'auto']) is held as text."""
    kinds = set(_kinds(typ)) - {"none"}
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "str"


def _kinds(typ: Any) -> Iterable[str]:
    origin = typing.get_origin(typ)
    if origin is typing.Annotated:
        yield from _kinds(typing.get_args(typ)[0])
    elif origin is typing.Literal:
        for v in typing.get_args(typ):
            yield "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "str"
    elif origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for t in typing.get_args(typ):
            yield from _kinds(t)
    elif typ is type(None):
        yield "none"
    else:
        yield {bool: "bool", int: "int", float: "float"}.get(typ, "str")


def cell(value: Any, kind: str) -> Any:
    """`value` as a `kind` column holds it (None stays None; 400 in a float column is 400.0; a non-finite float is
    None, as neither Parquet readers nor CSV agree on one)."""
    if value is None:
        return None
    if kind == "float":
        value = float(value)
        return value if math.isfinite(value) else None
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    return value if isinstance(value, str) else str(value)


def typed_row(row: Mapping[str, Any], columns: Mapping[str, str]) -> dict[str, Any]:
    """`row` with every column of `columns` present (missing ones None), in column order, each value of its kind."""
    return {name: cell(row.get(name), kind) for name, kind in columns.items()}


def perf_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """The result columns of one nccl-tests record (`reports.nccltests_table.record`)."""
    return {k: record[k] for k in PERF_COLUMNS}


def train_row(step: Mapping[str, Any]) -> dict[str, Any]:
    """The result columns of one training step (`StepResult.as_dict()`)."""
    out = {k: step.get(k) for k in TRAIN_COLUMNS}
    exposed = step.get("exposed_s") or {}
    for name in TRAIN_COLUMNS:
        if name.startswith("exposed_"):
            out[name] = exposed.get(name[len("exposed_"):-len("_s")])
    out["memory_GB"] = (step.get("memory_per_gpu") or {}).get("total_GB")
    out["tokens_per_s_per_gpu"] = step["tokens_per_s"] / step["gpus"] if step.get("gpus") else None
    return out


def format_of(path: str | Path, fmt: str | None, *, reading: bool = False) -> str:
    """'parquet' or 'csv': `fmt` when given, else from the file name's suffix (.parquet or .csv; any other is an
    error, rather than Parquet written into a file whose name says otherwise; `reading`: a file to read, which no
    format option names)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise FabricsimError(f"unknown results format '{fmt}': use parquet or csv")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        fix = ("give a .parquet or .csv file that `fabricsim sweep` wrote" if reading else
               f"name it .parquet or .csv (the formats fabricsim writes), or pass {option('format')}")
        raise FabricsimError(f"results file {path}: {f'suffix {suffix!r}' if suffix else 'no suffix'} is no results "
                             f"format: {fix}")
    return SUFFIXES[suffix]


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401  (the submodule the writer and reader use)
    except ImportError:
        raise FabricsimError(_NO_PYARROW) from None
    return pyarrow


def arrow_schema(columns: Mapping[str, str]):
    """The pyarrow schema of `columns`."""
    pa = _pyarrow()
    types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
    return pa.schema([pa.field(name, types[kind], nullable=True) for name, kind in columns.items()])


class ResultsWriter:
    """Rows appended in order to a Parquet or CSV file; Parquet rows are written a row group at a time."""

    def __init__(self, path: str | Path, columns: Mapping[str, str], fmt: str):
        self.path, self.columns, self.fmt = Path(path), dict(columns), fmt
        self._rows: list[dict[str, Any]] = []
        try:
            if fmt == "parquet":
                pq = _pyarrow().parquet
                self._schema = arrow_schema(self.columns)
                self._parquet = pq.ParquetWriter(str(self.path), self._schema, compression="zstd")
            else:
                self._file = self.path.open("w", newline="", encoding="utf-8")
                self._csv = csv.writer(self._file, lineterminator="\n")
                self._csv.writerow(self.columns)
        except OSError as err:
            raise FabricsimError(f"cannot write results {self.path}: {err.strerror}; check the directory") from None

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row (already typed: `typed_row`)."""
        if self.fmt == "csv":
            self._csv.writerow([_csv_text(row.get(name), kind) for name, kind in self.columns.items()])
            return
        self._rows.append(dict(row))
        if len(self._rows) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            pa = _pyarrow()
            self._parquet.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def close(self) -> None:
        """Write what is held and close the file (its contents are then on disk)."""
        import os

        if self.fmt == "csv":
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            return
        self._flush()
        self._parquet.close()


def _csv_text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        return repr(float(value))
    return str(value)


def _from_csv(text: str, kind: str) -> Any:
    if text == "":
        return None
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    return text


def read_rows(path: str | Path, columns: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The rows of a results file (Parquet, or CSV with its values typed by `columns`: text where a column is not
    named there; an empty CSV field reads as None)."""
    p = Path(path)
    if not p.is_file():
        raise FabricsimError(f"results file {p} does not exist: give the file `fabricsim sweep` wrote (-o)")
    if format_of(p, None, reading=True) == "csv":
        return _read_csv(p, columns or {})
    pq = _pyarrow().parquet
    try:
        return pq.read_table(str(p)).to_pylist()
    except Exception as err:  # pyarrow raises its own ArrowInvalid / OSError kinds for a file it cannot read
        raise FabricsimError(f"cannot read results {p} as Parquet ({err}): give a file `fabricsim sweep` wrote, "
                             "or a .csv one") from None


def _read_csv(path: Path, columns: Mapping[str, str]) -> list[dict[str, Any]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            head = next(reader, None)
            if not head:
                raise FabricsimError(f"results {path} is empty: give a file `fabricsim sweep` wrote")
            kinds = [columns.get(name) or _guess(name) for name in head]
            return [{name: _from_csv(text, kind) for name, kind, text in zip(head, kinds, line)} for line in reader]
    except UnicodeDecodeError:
        raise FabricsimError(f"results {path} is not UTF-8 text: give a CSV file `fabricsim sweep` wrote") from None
    except ValueError as err:
        raise FabricsimError(f"results {path}: a value does not read as its column's type ({err}); the file was "
                             "changed after fabricsim wrote it") from None


def _guess(name: str) -> str:
    """The kind of a column a CSV header names, from the tables above; config columns read as text unless known."""
    return {**POINT_COLUMNS, **PERF_COLUMNS, **TRAIN_COLUMNS}.get(name, "str")


def to_frame(rows: Sequence[Mapping[str, Any]]):
    """The rows as a pandas DataFrame (the `fabricsim[pandas]` extra)."""
    try:
        import pandas
    except ImportError:
        raise FabricsimError("reading results into a DataFrame needs pandas: pip install 'fabricsim[pandas]'") from None
    return pandas.DataFrame.from_records(list(rows))

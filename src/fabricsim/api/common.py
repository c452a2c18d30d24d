"""Helpers the API's functions share: progress callback types, size and algorithm lists, DataFrames."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from fabricsim.errors import FabricsimError

if TYPE_CHECKING:
    import pandas

Progress = Callable[[int, int], None]  # progress(done, total)
SweepProgress = Callable[[int, int, int], None]  # progress(points done, points in all, points failed)
Sizes = int | str | Iterable[int | str]


def parse_sizes(value: Sizes) -> list[int]:
    """A size, or a list of them (K/M/G suffixes allowed), as bytes; an empty list is an error."""
    from fabricsim.units import parse_size

    if isinstance(value, (int, str)):
        items: list = [value]
    elif isinstance(value, (list, tuple, range)) or type(value).__name__ == "ndarray":
        items = list(value)
    else:
        raise FabricsimError(f"sizes={value!r}: give a size ('1G', 1048576) or a list of sizes, e.g. "
                             "fs.sizes('8', '8G', factor=8)")
    if not items:
        raise FabricsimError("no sizes given: pass a size such as '1G', or a list such as fs.sizes('8', '8G', factor=8)")
    return [parse_size(s) for s in items]


def env_mapping(value: object) -> dict[str, str]:
    """`env=` as a dict of NCCL variable -> the text the run set ({} for None); anything else one FabricsimError."""
    from collections.abc import Mapping

    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise FabricsimError(f"env={value!r:.60}: give the run's NCCL environment as a mapping of variable to value, "
                             "e.g. env={'NCCL_BUFFSIZE': '4194304'}")
    return dict(value)


def names(value: str | Sequence[str] | None, kind: str, collective: str) -> list[str] | None:
    """An NCCL_ALGO / NCCL_PROTO list ('ring,tree', ['Ring', 'tree'], '^nvls', 'allreduce:tree;allgather:ring') read by
    vocab's parser -> canonical names, '^' on the first when they are excluded; None or '' -> None."""
    from fabricsim import vocab

    parse = vocab.parse_algorithms if kind == "algo" else vocab.parse_protocols
    selection = parse(value, collective)
    return selection.spec().split(",") if selection else None


def dataframe(records: list[dict[str, Any]]) -> pandas.DataFrame:
    """A result's records as a pandas DataFrame (pandas is the optional `fabricsim[pandas]` extra)."""
    try:
        import pandas
    except ImportError:
        raise FabricsimError("to_pandas needs pandas: pip install 'fabricsim[pandas]' (or use to_records())") from None
    return pandas.DataFrame.from_records(records)

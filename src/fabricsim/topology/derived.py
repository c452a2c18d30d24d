"""The bounded store of data derived from one topology: routing tables, routes, link classes, NCCL systems,
unit-message timings, effective capacities.

A built `Topology` is immutable, so what is derived from it stays true for its whole life. Each topology owns
one `DerivedStore` (`Topology.derived`), made empty with it and freed with it: nothing derived outlives the
topology, and no module keeps a cache keyed on one. The store keeps the most recently used entries, bounded
by their number and by the bytes of the numpy arrays they hold; arrays it holds are made read-only, so a
caller cannot change what the next caller reads. Values must not refer back to the topology (that would make
a reference cycle and keep the topology alive until the cycle collector runs).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

DERIVED_ENTRIES = 256  # entries kept per topology (a tuner sweep makes a few dozen: tables, routes, unit timings)
DERIVED_BYTES = 1 << 30  # bytes of numpy arrays kept per topology (a 131,072-GPU sweep's routes and flows fit)
MEMO_ENTRIES = 512  # small entries of one kind kept per topology (`memo`: a tuner sweep makes a few dozen call shapes)

T = TypeVar("T")


def held_bytes(value: Any, freeze: bool = False) -> int:
    """Bytes of the numpy arrays reachable from `value` through dataclass fields, tuples, lists and dict values
    (each array counted once); `freeze`: make them read-only on the way."""
    seen: set[int] = set()
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray):
            total += v.nbytes
            if freeze and v.flags.writeable:
                v.setflags(write=False)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return total


class DerivedStore:
    """Get-or-compute by key, least recently used dropped first beyond `max_entries` entries or `max_bytes`
    bytes (the newest entry always stays, unless `keep_oversized` is False: then a value larger than `max_bytes` is
    returned and not kept)."""

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None,
                 keep_oversized: bool = True) -> None:
        self.max_entries = DERIVED_ENTRIES if max_entries is None else int(max_entries)
        self.max_bytes = DERIVED_BYTES if max_bytes is None else int(max_bytes)
        self.keep_oversized = keep_oversized
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value stored under `key`, computed by `compute()` and stored when absent."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        value = compute()
        size = held_bytes(value, freeze=True)
        if size > self.max_bytes and not self.keep_oversized:
            return value
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:  # computed twice at once (threads): keep the newer
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while len(self._entries) > 1 and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of numpy arrays the stored values hold."""
        return self._bytes

    def kinds(self) -> dict[str, int]:
        """Entries per kind (a key's first element when it is a tuple starting with a string): what is stored."""
        out: dict[str, int] = {}
        for key in list(self._entries):
            kind = key[0] if isinstance(key, tuple) and key and isinstance(key[0], str) else str(key)
            out[kind] = out.get(kind, 0) + 1
        return out

    def __repr__(self) -> str:
        return f"DerivedStore({len(self._entries)} entries, {self._bytes / 2**20:.1f} MiB)"


def memo(derive: Callable[[Hashable, Callable[[], DerivedStore]], DerivedStore], kind: str, key: Hashable,
         compute: Callable[[], T]) -> T:
    """`compute()` kept under `key` in a bounded store of its own, itself kept under (`kind`,) by `derive` (a
    topology's `derive` or `derive_structure`): many small entries of one kind (one per call shape) that neither
    grow without bound nor push the topology's large entries (routing tables, routes) out of its store."""
    return derive((kind,), lambda: DerivedStore(max_entries=MEMO_ENTRIES)).get(key, compute)

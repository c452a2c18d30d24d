"""Unit parsing and formatting. Inside fabricsim everything is SI: bytes, seconds, bytes/s.

Conversions happen only at the edges (CLI, YAML, reports) through these helpers.
"""

from __future__ import annotations

import re
from fractions import Fraction

from fabricsim.errors import FabricsimError

GB = 1e9  # decimal gigabyte, as nccl-tests and NVIDIA datasheets use
US = 1e-6  # one microsecond in seconds
Gbit = 1e9 / 8  # one gigabit in bytes
MAX_BYTES = 1 << 48  # largest message fabricsim sizes: no GPU buffer comes near 256 TiB, and byte counts stay exact in float64

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(iB|B)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int) -> int:
    """Parse a byte count with nccl-tests' binary suffixes: '8', '64K', '1M', '8G' (K = 1024), at most MAX_BYTES.

    Digits are read exactly (no float rounding), so '1.5K' is 1536 and 400 digits are refused, not overflowed."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise FabricsimError(f"invalid size {text!r}: give a byte count such as 64K or 1G")
    shown = str(text) if len(str(text)) <= 40 else f"{str(text)[:37]}..."
    too_big = FabricsimError(f"size '{shown}' is more than fabricsim sizes a buffer ({MAX_BYTES} bytes, 256 TiB): "
                             "use a smaller size")
    if isinstance(text, int):
        value = Fraction(text)
    else:
        m = _SIZE_RE.match(text)
        if not m:
            raise FabricsimError(f"invalid size '{shown}': use a byte count with an optional K/M/G/T suffix, "
                                 "e.g. 64K or 1G")
        whole, _, frac = m.group(1).partition(".")
        whole, frac = whole.lstrip("0"), frac.rstrip("0")
        if len(whole) > 16:  # MAX_BYTES has 15 digits: longer numbers need no exact reading
            raise too_big
        if len(frac) > 40:  # a suffix multiplies by at most 2^40: more decimals never make whole bytes
            raise FabricsimError(f"invalid size '{shown}': it is not a whole number of bytes")
        value = Fraction(f"{whole or 0}.{frac or 0}") * _SIZE_MULT[m.group(2).upper()]
    if value.denominator != 1:
        raise FabricsimError(f"invalid size '{shown}': it is not a whole number of bytes")
    if value < 0:
        raise FabricsimError(f"invalid size '{shown}': sizes must be zero or positive")
    if value > MAX_BYTES:
        raise too_big
    return int(value)


def gbps_to_bytes(gbit_per_s: float) -> float:
    """Line rate in Gb/s (network convention) to bytes/s."""
    return gbit_per_s * Gbit


def format_bytes(n: float) -> str:
    """Human-readable binary size: 1.0 GiB, 512 KiB, 8 B."""
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.4g} {unit}"
    return f"{n:.0f} B"

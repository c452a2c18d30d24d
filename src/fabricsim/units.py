"""Unit parsing and formatting. Inside fabricsim everything is SI: bytes, seconds, bytes/s.

Conversions happen only at the edges (CLI, YAML, reports) through these helpers.
"""

from __future__ import annotations

import re

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
        value = int(text)
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
        scale = 10 ** len(frac)  # the number is digits / scale, times the suffix: integers all the way
        digits = int(whole or 0) * scale + int(frac or 0)
        bytes_, rest = divmod(digits * _SIZE_MULT[m.group(2).upper()], scale)
        if rest:
            raise FabricsimError(f"invalid size '{shown}': it is not a whole number of bytes")
        value = bytes_
    if value < 0:
        raise FabricsimError(f"invalid size '{shown}': sizes must be zero or positive")
    if value > MAX_BYTES:
        raise too_big
    return value


# An integer as C's strtoll(text, NULL, 0) reads it (NCCL's integer parameters, src/misc/param.cc; nccl-tests' options,
# strtol): optional spaces and sign, then 0x/0X hexadecimal, a leading-0 octal, or decimal
_C_INTEGER_RE = re.compile(r"^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*$")


def c_integer(text: str) -> int | None:
    """The integer C's strtoll with base 0 reads from the whole of `text` ('010' is 8, '0x10' 16), None where `text`
    is not one (Python's own spellings such as '1_000' or '0o10' included)."""
    m = _C_INTEGER_RE.match(text)
    if m is None:
        return None
    sign, body = m.groups()
    base = 16 if body[:2] in ("0x", "0X") else 8 if body.startswith("0") and len(body) > 1 else 10
    n = int(body[2:] if base == 16 else body, base)
    return -n if sign == "-" else n


_TIME_RE = re.compile(r"^\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*(s|ms|us|ns)?\s*$")
_TIME_PER_SECOND = {None: 1.0, "s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
MAX_SECONDS = 1e9  # about 30 years: no run fabricsim times comes near it


def parse_duration(text: str | int | float) -> float:
    """Seconds from a number (seconds) or text with a unit: '2.5', '5ms', '20us', '100ns', '1s'."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise FabricsimError(f"invalid duration {text!r}: give seconds, or a number with s, ms, us or ns, e.g. 5ms")
    if isinstance(text, str):
        m = _TIME_RE.match(text)
        if not m:
            raise FabricsimError(f"invalid duration '{text[:40]}': use a number with an optional unit s, ms, us or ns, "
                                 "e.g. 5ms or 0.002")
        value = float(m.group(1)) / _TIME_PER_SECOND[m.group(2)]
    else:
        value = float(text)
    if not 0 <= value <= MAX_SECONDS:  # also refuses NaN
        raise FabricsimError(f"duration {text!r} must be between 0 and {MAX_SECONDS:.0e} seconds")
    return value


def format_duration(seconds: float) -> str:
    """Readable time: 1.25 s, 3.4 ms, 12 us."""
    for unit, div in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= div:
            return f"{seconds / div:.4g} {unit}"
    return f"{seconds * 1e9:.4g} ns"


def gbps_to_bytes(gbit_per_s: float) -> float:
    """Line rate in Gb/s (network convention) to bytes/s."""
    return gbit_per_s * Gbit


def format_bytes(n: float) -> str:
    """Human-readable binary size: 1.0 GiB, 512 KiB, 8 B."""
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.4g} {unit}"
    return f"{n:.0f} B"


def format_ranks(ranks) -> str:
    """GPU ranks as ranges: [0, 1, 2, 3, 8, 9] -> '0-3,8-9'."""
    runs: list[list[int]] = []
    for r in (int(x) for x in ranks):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ",".join(f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in runs)

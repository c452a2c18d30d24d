"""Size checks and ranges: which sizes fall short, which are one-off dips, and how they group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fabricsim.diagnosis.shortfall import SizeCheck, is_above, is_dip, is_short, ranges


def check(size: int, ratio: float, in_place_ratio: float | None = None) -> SizeCheck:
    measured = 1e-3
    ip = None if in_place_ratio is None else ratio * measured / in_place_ratio
    return SizeCheck(size, measured, ratio * measured, 1e9, 1e9 / ratio, ip, "ring", "simple", 8)


def test_short_needs_both_placements_and_a_dip_is_one():
    assert is_short(check(8, 0.5), 0.25) and is_short(check(8, 0.5, 0.6), 0.25)
    assert not is_short(check(8, 0.5, 0.9), 0.25) and is_dip(check(8, 0.5, 0.9), 0.25)
    assert not is_short(check(8, 0.8), 0.25) and not is_dip(check(8, 0.8, 0.82), 0.25)
    assert is_above(check(8, 1.3), 0.25) and not is_above(check(8, 1.2), 0.25)


def test_consecutive_short_sizes_form_one_range():
    sizes = tuple(check(1 << k, r) for k, r in enumerate([0.5, 0.6, 0.9, 0.7, 0.4, 1.0]))
    got = ranges(sizes, lambda c: is_short(c, 0.25))
    assert [(r.lo, r.hi, len(r.sizes)) for r in got] == [(1, 2, 2), (8, 16, 2)]
    assert got[1].worst.size_bytes == 16 and abs(got[0].median_ratio - 0.55) < 1e-12


@given(st.lists(st.floats(0.05, 3.0), max_size=40))
def test_ranges_hold_every_short_size_once_in_order(ratios):
    sizes = tuple(check(8 << k, r) for k, r in enumerate(ratios))
    got = ranges(sizes, lambda c: is_short(c, 0.25))
    flat = [c.size_bytes for r in got for c in r.sizes]
    assert flat == [c.size_bytes for c in sizes if is_short(c, 0.25)]
    assert all(b.lo > a.hi * 2 for a, b in zip(got, got[1:]))  # a size that is not short lies between two ranges

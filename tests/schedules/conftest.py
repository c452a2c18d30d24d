"""Shared helpers: inputs that follow each collective's size convention (see layout)."""

import numpy as np

from fabricsim.schedules import ALGORITHMS, Structure, applicable

RANKS = (1, 2, 3, 4, 5, 7, 8, 16, 24, 72)


def structures(n: int) -> list[Structure]:
    """Flat, 4/8 per node, and one NVLink domain of n, all with NVSwitch and SHARP."""
    return [Structure(n, rpn, True, True) for rpn in sorted({1, 4, 8, 72, n}) if rpn <= n]


def cases() -> list[tuple[str, str, int, int]]:
    """Every (collective, algorithm, nranks, ranks_per_node) that applies."""
    out = []
    for n in RANKS:
        for s in structures(n):
            for coll in ALGORITHMS:
                for algo in applicable(coll, s):
                    out.append((coll, algo, n, s.ranks_per_node))
    return out


def make_inputs(collective: str, n: int, count: int, rng: np.random.Generator, dtype=np.int64) -> list[np.ndarray]:
    if collective == "all_gather":
        sizes = [len(b) for b in np.array_split(np.arange(count), n)]
    else:
        sizes = [count * n if collective == "alltoall" else count] * n
    if np.issubdtype(dtype, np.integer):
        return [rng.integers(-4, 5, size=k).astype(dtype) for k in sizes]
    return [rng.uniform(0.5, 1.5, size=k).astype(dtype) for k in sizes]


def assert_same(outputs, expected, exact: bool = True) -> None:
    """Each rank's output equals the reference (exact), or is within rtol 1e-4, atol 1e-6 of it. np.array_equal and
    np.allclose decide as np.testing's asserts do, at a tenth and a third of their cost (the suite makes about
    100,000 of these comparisons); np.testing's assert runs where they fail, for its message."""
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        if exact:
            if not np.array_equal(got, want):
                np.testing.assert_array_equal(got, want)
        elif not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

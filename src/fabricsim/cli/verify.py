"""`fabricsim verify`: run every applicable collective schedule on real numbers and compare
with the directly computed result."""

from __future__ import annotations

import click
import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.schedules import ALGORITHMS, REDUCTIONS, Structure, applicable, build_schedule, execute, reference
from fabricsim.schedules.layout import REDUCING


def parse_ranks(text: str) -> list[int]:
    """'1-72' or '2,3,8' (or a mix: '1-4,8') -> sorted rank counts."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            lo, _, hi = part.partition("-")
            lo_i, hi_i = int(lo), int(hi) if hi else int(lo)
        except ValueError:
            raise FabricsimError(f"invalid --ranks '{text}': use a range like 1-72 or a list like 2,3,8") from None
        if lo_i < 1 or hi_i < lo_i:
            raise FabricsimError(f"invalid --ranks '{part}': counts start at 1 and ranges run low-high, e.g. 1-72")
        if hi_i > MAX_VERIFY_RANKS:  # refused before the range is listed: '1-99999999999' must not fill memory
            raise FabricsimError(f"--ranks up to {hi_i}: verify executes schedules on real data for at most "
                                 f"{MAX_VERIFY_RANKS} ranks; time larger clusters with `fabricsim perf`")
        out.update(range(lo_i, hi_i + 1))
    return sorted(out)


def _names(text: str | None, known: tuple[str, ...], what: str) -> list[str]:
    if text is None:
        return list(known)
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in known]
    if unknown or not names:
        raise FabricsimError(f"unknown {what} {', '.join(unknown) or repr(text)}: use some of {', '.join(known)}")
    return names


MAX_VERIFY_RANKS = 1024
MAX_VERIFY_ELEMENTS = 1 << 24


def structure_for(n: int) -> Structure:
    """8 ranks per node when n divides by 8, else one node of n; NVSwitch and SHARP present."""
    return Structure(nranks=n, ranks_per_node=8 if n % 8 == 0 else n, has_nvswitch=True, has_sharp=True)


def _inputs(collective: str, n: int, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    if collective == "all_gather":
        return [rng.integers(-3, 4, size=len(b), dtype=np.int64) for b in np.array_split(np.arange(count), n)]
    per = count * n if collective == "alltoall" else count
    return [rng.integers(-3, 4, size=per, dtype=np.int64) for _ in range(n)]


def verify_one(collective: str, algorithm: str, n: int, count: int) -> tuple[int, bool]:
    """(steps, passed) for one schedule, over every reduction when the collective reduces."""
    sched = build_schedule(collective, algorithm, n, structure=structure_for(n), root=n - 1)
    rng = np.random.default_rng(n)
    xs = _inputs(collective, n, count, rng)
    ops = REDUCTIONS if collective in REDUCING else ("sum",)
    ok = all(
        all(np.array_equal(a, b) for a, b in zip(execute(sched, xs, op), reference(collective, xs, op, root=n - 1)))
        for op in ops
    )
    return sched.n_steps, ok


@click.command("verify")
@click.option("--ranks", default="1-16", show_default=True, help="rank counts: a range 1-72 or a list 2,3,8")
@click.option("--algo", default=None, help="algorithms, comma separated (default: every applicable one)")
@click.option("--collective", default=None, help="collectives, comma separated (default: all)")
@click.option("--count", default=13, show_default=True, type=int, help="elements per rank (alltoall: per peer)")
def verify(ranks: str, algo: str | None, collective: str | None, count: int) -> None:
    """Execute collective schedules on integer data and check them against the direct result."""
    if count < 0:
        raise FabricsimError(f"--count {count} is negative: use 0 or more elements")
    counts = parse_ranks(ranks)  # at most MAX_VERIFY_RANKS
    # verify executes every rank's data with numpy: bound ranks x elements so a run ends in seconds
    if counts[-1] * max(count, 1) > MAX_VERIFY_ELEMENTS:
        raise FabricsimError(f"--count {count} on {counts[-1]} ranks is more than {MAX_VERIFY_ELEMENTS:,} elements in all: "
                             "use a smaller --count")
    collectives = _names(collective, tuple(ALGORITHMS), "collective")
    all_algos = tuple(dict.fromkeys(a for c in collectives for a in ALGORITHMS[c]))
    algos = _names(algo, all_algos, "algorithm for the chosen collectives")
    click.echo("structure: 8 ranks per node when ranks divide by 8, else one NVLink domain; NVSwitch and SHARP present")
    click.echo(f"{'collective':<16}{'algorithm':<20}{'ranks':>6}{'steps':>8}  result")
    failures, used = 0, set()
    for n in counts:
        s = structure_for(n)
        for coll in collectives:
            for a in applicable(coll, s):
                if a not in algos:
                    continue
                used.add(a)
                steps, ok = verify_one(coll, a, n, count)
                failures += not ok
                click.echo(f"{coll:<16}{a:<20}{n:>6}{steps:>8}  {'pass' if ok else 'FAIL'}")
    unused = [a for a in algos if a not in used]
    if algo is not None and unused:
        raise FabricsimError(
            f"{', '.join(unused)} applies to none of the requested collectives at ranks {ranks} "
            "(structure as printed above): pick other ranks or collectives"
        )
    click.echo(f"{failures} failed" if failures else "all passed")
    if failures:
        raise click.exceptions.Exit(1)

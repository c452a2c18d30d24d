"""One log diagnosed: the prediction of its sizes, the ranges that fall short, and the causes ranked per range.

The prediction is validation.logs' (`make_case` + `score`: the log's ranks, NCCL version and the NCCL environment it
knows how to honour), so better predictions improve the doctor without changes here. Each rule's effect is computed
once over every size of the log (a re-prediction, or an estimate from a documented figure), then judged per range on
the sizes it reaches: a cause *explains* them when the measurement lies within the threshold of the prediction with
the cause applied (over the range, or over a run of at least 3 consecutive sizes and a quarter of it: a cause may act
on one size regime), explains *part* when it closes at least a quarter of the gap (log terms), *overshoots* when it
predicts slower than measured. A cause is named when the log shows it and it explains all or part of the sizes (or
overshoots), or when the log does not show it but it explains them, or half the gap, and the rest of the log does not
contradict it (a cause of the run would also slow sizes the prediction matched: two or more of them measured faster
than it allows rule it out); such a cause is named only for sizes no shown cause reaches. A shown cause whose effect
cannot be computed is named only where nothing else is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.diagnosis import infer, rules
from fabricsim.diagnosis.facts import Facts, log_collective, read_facts, with_implied_ranks
from fabricsim.diagnosis.rules import NOT_SHOWN, SHOWN, Context, Hypothesis
from fabricsim.diagnosis.shortfall import Range, SizeCheck, checks, is_above, is_dip, is_short, ranges
from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import Machine
from fabricsim.topology import build
from fabricsim.topology.spec import ClusterSpec
from fabricsim.reports.nccl_env import honoured
from fabricsim.validation.logs import LogCase, make_case, score

DEFAULT_THRESHOLD = 0.25  # a size falls short when measured busbw < (1 - 0.25) x predicted (issue 15)
_PART = 0.25  # a cause that closes at least a quarter of the gap (log terms) explains part of it
_NO_EFFECT = 0.02
_AGAINST = 2  # sizes elsewhere in the log measured faster than a cause allows that rule out a cause it does not show


@dataclass(frozen=True)
class Finding:
    """One cause judged on one range: evidence, effect and verdict."""

    rule: str
    title: str
    state: str  # rules.SHOWN | NOT_SHOWN | RULED_OUT | IN_PREDICTION
    evidence: tuple[str, ...]
    how: str  # how the effect was computed, or why it could not be
    ratio: float | None  # median measured / expected busbw with the cause applied (1: explains exactly)
    share: float | None  # median share of the gap the cause closes (log terms; 1: all of it)
    verdict: str  # 'explains' | 'explains part' | 'overshoots' | 'little effect' | 'no effect' | 'not computable'
    named: bool
    rank: int  # sort key: lower is more likely (diagnose._RANK)
    covered: tuple[int, ...] = ()  # the sizes (bytes) of the range its effect reaches
    against: tuple[int, ...] = ()  # sizes elsewhere the run measured faster than the cause allows


@dataclass(frozen=True)
class RangeDiagnosis:
    """A range of short sizes and every cause considered for it, most likely first."""

    range: Range
    findings: tuple[Finding, ...]

    @property
    def causes(self) -> tuple[Finding, ...]:
        """The named causes, most likely first (empty: no cause found)."""
        return tuple(f for f in self.findings if f.named)

    @property
    def unexplained(self) -> tuple[SizeCheck, ...]:
        """The range's sizes no named cause reaches."""
        reached = {s for f in self.causes for s in f.covered}
        return tuple(c for c in self.range.sizes if c.size_bytes not in reached)


@dataclass(frozen=True)
class Diagnosis:
    """A log against what its cluster should deliver."""

    facts: Facts
    target: infer.Target
    case: LogCase
    checks: tuple[SizeCheck, ...]
    short: tuple[RangeDiagnosis, ...]
    above: tuple[Range, ...]
    dips: tuple[SizeCheck, ...]
    env_not_honoured: tuple[tuple[str, str], ...]  # NCCL variables of the run validation.logs does not know
    threshold: float
    level: str

    @property
    def verdict(self) -> str:
        """'short' (some sizes fall short), 'above' (only faster than predicted), 'matches'."""
        return "short" if self.short else "above" if self.above else "matches"

    @property
    def causes(self) -> tuple[Finding, ...]:
        """Every cause named for some range (first naming per rule and title)."""
        seen: dict[tuple[str, str], Finding] = {}
        for r in self.short:
            for f in r.causes:
                seen.setdefault((f.rule, f.title), f)
        return tuple(seen.values())

    def text(self) -> str:
        """The report `fabricsim doctor` prints."""
        from fabricsim.diagnosis import report

        return report.text(self)

    def to_json(self) -> str:
        """The report as a JSON document (`fabricsim doctor --format json`)."""
        from fabricsim.diagnosis import report

        return report.json_doc(self)

    def to_records(self) -> list[dict]:
        """One dict per size of the log: measured and predicted figures, and the named causes of its short range."""
        from fabricsim.diagnosis import report

        named = {c.size_bytes: [f.title for f in r.causes] for r in self.short for c in r.range.sizes}
        return [{**report.size_record(c), "short": c.size_bytes in named, "causes": named.get(c.size_bytes, [])}
                for c in self.checks]

    def to_pandas(self) -> Any:
        """The records as a DataFrame (needs the `fabricsim[pandas]` extra)."""
        try:
            import pandas
        except ImportError:
            raise FabricsimError("to_pandas needs pandas: pip install 'fabricsim[pandas]' (or use to_records())") from None
        return pandas.DataFrame.from_records(self.to_records())

    def __repr__(self) -> str:
        n = sum(len(r.range.sizes) for r in self.short)
        what = (f"short at {n} of {len(self.checks)} sizes in {len(self.short)} range{'s' * (len(self.short) != 1)}"
                if self.short else self.verdict)
        causes = ", ".join(sorted({f.rule for f in self.causes})) or "none"
        return (f"Diagnosis({self.facts.source}: {self.case.collective} on {self.case.spec.name}, {len(self.case.ranks)} "
                f"ranks, {what}; causes: {causes})")




def _times(case: LogCase, level: str, variant=None) -> list[float]:
    topo = variant(build(case.spec)) if variant is not None else None
    return [r.predicted_time_s for r in score(case, level, topo).rows]


def _effects(hyps: list[Hypothesis], sizes: tuple[SizeCheck, ...], level: str) -> dict[int, list[float] | str]:
    """Per hypothesis with an effect, the time of every size of the log with the cause applied (or, for a variant
    the engine refuses, why); a re-prediction shared by several hypotheses runs once."""
    cache: dict[tuple, list[float] | str] = {}
    out: dict[int, list[float] | str] = {}
    for k, h in enumerate(hyps):
        eff = h.effect
        if eff is None:
            continue
        if eff.case is not None:
            key = (eff.case.spec, eff.case.algos, eff.case.protos, eff.case.env, eff.how if eff.topology else "")
            if key not in cache:
                try:
                    cache[key] = _times(eff.case, level, eff.topology)
                except FabricsimError as err:  # the variant does not run on this cluster: say why, go on
                    cache[key] = str(err)
            times = cache[key]
        else:
            times = [eff.per_size(c) for c in sizes]
        if isinstance(times, list) and eff.only is not None:
            times = [t if c.size_bytes in eff.only else c.predicted_time_s for t, c in zip(times, sizes)]
        out[k] = times
    return out


def _why_not(h: Hypothesis, expected: dict[int, list[float] | str], k: int) -> str:
    return f"{h.effect.how} does not run here: {expected[k]}" if h.effect else h.why


def _against(sizes: tuple[SizeCheck, ...], times: list[float], fitted: set[int], threshold: float) -> tuple[int, ...]:
    """Sizes (outside those the cause explains) the prediction matched but the cause would slow below what the run
    measured, by more than the threshold: a cause of the whole run would have slowed them too."""
    return tuple(c.size_bytes for i, (t, c) in enumerate(zip(times, sizes))
                 if i not in fitted and t / c.measured_time_s > 1.0 + threshold
                 and c.predicted_time_s / c.measured_time_s <= 1.0 + threshold)


def _runs(idx: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in idx:
        if out and i == out[-1][-1] + 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _judge(h: Hypothesis, sizes: tuple[SizeCheck, ...], inside: list[int], times: list[float] | None,
           threshold: float) -> Finding:
    """A cause on one range (`inside`: its indices into the log's sizes), judged on the sizes its effect reaches
    (changed by more than 2%). Where it does not explain the range as a whole but does explain a run of at least
    3 consecutive sizes (and a quarter of the range), it is judged on that run: a cause may act on one size regime."""
    ratio = share = None
    covered: list[int] = []
    against: tuple[int, ...] = ()
    verdict = "not computable"
    if times is not None:
        covered = [i for i in inside if abs(math.log(times[i] / sizes[i].predicted_time_s)) > _NO_EFFECT]
        verdict = "no effect"

    def stats(idx: list[int]) -> tuple[float, float]:
        q = [times[i] / sizes[i].measured_time_s for i in idx]
        part = [math.log(times[i] / sizes[i].predicted_time_s)
                / math.log(sizes[i].measured_time_s / sizes[i].predicted_time_s) for i in idx]
        return float(np.median(q)), float(np.median(part))

    def fits(i: int) -> bool:
        return 1.0 - threshold <= times[i] / sizes[i].measured_time_s <= 1.0 + threshold

    if covered:
        ratio, share = stats(covered)
        if 1.0 - threshold <= ratio <= 1.0 + threshold:
            verdict = "explains"
        else:
            run = max(_runs([i for i in covered if fits(i)]), key=len, default=[])
            if len(run) >= 3 and 4 * len(run) >= len(inside):
                covered, verdict = run, "explains"
                ratio, share = stats(run)
            elif ratio > 1.0 + threshold:
                verdict = "overshoots"
            else:
                verdict = "explains part" if share >= _PART else "little effect"
        against = _against(sizes, times, set(covered) if verdict == "explains" else set(inside), threshold)
        if h.state == NOT_SHOWN and verdict in ("explains", "explains part") and len(against) >= _AGAINST:
            verdict = "contradicted"  # nothing in the log says so, and sizes it would slow ran faster
    rank = _RANK.get((h.state, verdict), 9)
    if rank == 4 and (share or 0.0) < _POSSIBLE_PART:
        rank = 9
    how = h.effect.how if h.effect is not None else h.why
    return Finding(h.rule, h.title, h.state, h.evidence, how, ratio, share, verdict, rank < 5, rank,
                   tuple(sizes[i].size_bytes for i in covered), against)


# Most likely first: shown and explaining; shown but fabricsim expects more loss; not shown but explaining alone;
# shown and explaining part; not shown and explaining at least half the gap; shown with no computable effect.
_RANK = {(SHOWN, "explains"): 0, (SHOWN, "overshoots"): 1, (NOT_SHOWN, "explains"): 2, (SHOWN, "explains part"): 3,
         (NOT_SHOWN, "explains part"): 4, (SHOWN, "not computable"): 5}
_POSSIBLE_PART = 0.5  # a cause the log does not show, explaining part of a range, is named from half the gap


def _rank(found: list[Finding], sizes: Sequence[SizeCheck]) -> tuple[Finding, ...]:
    """Most likely first; a cause the log does not show is named only for sizes no shown cause reaches, and a shown
    cause whose effect is unknown only where nothing else is named."""
    shown = {s for f in found if f.named and f.state == SHOWN for s in f.covered}
    found = [replace(f, named=False) if f.named and f.state == NOT_SHOWN and set(f.covered) <= shown else f
             for f in found]
    if not any(f.named for f in found):
        found = [replace(f, named=True, covered=tuple(c.size_bytes for c in sizes)) if f.rank == 5 else f
                 for f in found]
    return tuple(sorted(found, key=lambda f: (not f.named, f.rank, abs(math.log(f.ratio)) if f.ratio else 0.0)))


def diagnose(text: str, source: str, *, cluster: str | Path | ClusterSpec | None = None,
             ranks: Sequence[int] | None = None, env: Mapping[str, str] | None = None, collective: str | None = None,
             nccl_version: str | None = None, machines: Sequence[Machine] = (), gpu: str | None = None,
             nranks: int | None = None, threshold: float = DEFAULT_THRESHOLD, level: str = "flow") -> Diagnosis:
    """Diagnose one nccl-tests log (its text; `source` names it in reports). `cluster` None infers the cluster from
    the log; `ranks` (with a cluster) are the GPU ranks the run used; `env` adds NCCL variables the log does not
    print; `machines` are accompanying dumps read by fabricsim.importers; `nranks` is the run's rank count where the
    log does not print it; `threshold` is the fraction below the prediction at which a size falls short."""
    if not 0.0 < threshold < 1.0:
        raise FabricsimError(f"threshold {threshold * 100:g}%: give a percentage between 0 and 100, e.g. 25")
    if ranks is not None and nranks is None:
        nranks = len(ranks)
    facts = read_facts(text, source, env=env, nccl_version=nccl_version, machines=machines, ranks=nranks)
    coll = log_collective(facts, collective)
    facts = with_implied_ranks(facts, coll)
    target = infer.inferred(facts, gpu) if cluster is None else infer.given(cluster, facts)
    if ranks is not None:
        target = replace(target, ranks=tuple(int(r) for r in ranks))
    known, unknown = honoured(facts.env)

    def recase(extra: dict[str, str]) -> LogCase:
        return make_case(Path(source).stem, facts.log, target.spec, target.ranks, coll, {**known, **extra},
                         facts.nccl_version, text=text, gaps=target.gaps)

    case = recase({})
    base = score(case, level)
    sizes = checks(base.rows, case.rows)
    short_idx = [i for i, c in enumerate(sizes) if is_short(c, threshold)]
    short = ranges(sizes, lambda c: is_short(c, threshold))
    found: list[RangeDiagnosis] = []
    if short:
        ctx = Context(facts, case, tuple(sizes[i] for i in short_idx), recase, sizes)
        hyps = [h for rule in rules.RULES for h in rule(ctx)]
        expected = _effects(hyps, sizes, level)
        hyps = [replace(h, effect=None, why=_why_not(h, expected, k)) if isinstance(expected.get(k), str) else h
                for k, h in enumerate(hyps)]
        index = {id(c): i for i, c in enumerate(sizes)}
        for r in short:
            inside = sorted(index[id(c)] for c in r.sizes)
            judged = [_judge(h, sizes, inside, t if isinstance(t := expected.get(k), list) else None, threshold)
                      for k, h in enumerate(hyps)]
            found.append(RangeDiagnosis(r, _rank(judged, r.sizes)))
    dips = tuple(c for c in sizes if is_dip(c, threshold))
    above = ranges(sizes, lambda c: is_above(c, threshold))
    return Diagnosis(facts, target, case, sizes, tuple(found), above, dips, unknown, threshold, level)

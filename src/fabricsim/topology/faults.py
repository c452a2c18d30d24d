"""What a list of faults says: the `faults:` section of a cluster file, `--fail` / `--degrade` on the command line,
and the grammar of one target, checked without a topology (`topology.faulted` resolves targets against one).

    faults:
      fail: [spine3, "node3.nic0 -> su0.leaf0", "random:2%:spine-links"]
      degrade: ["node5.gpu3:0.5", "su0.leaf2:3/4", "node2.nic*:0.5"]
      seed: 7

A target (SPEC) is one of:
- a device name as fabricsim prints it (`node3.nic0`, `su0.leaf2`, `spine3`, `domain3.nvswitch0`, `node5.gpu3`), or a
  shell glob over them (`node3.nic*`, `spine*`, `su?.leaf2`); `nodeN` alone stands for that node's GPUs;
- a link `A -> B` as fabricsim prints links (each side a device name or glob, `(tech)` optional): the cable(s)
  joining them, both directions;
- a count `random:N:CLASS` or `random:P%:CLASS` drawn with `seed` from a class of devices (spines, leaves, cores,
  nics, nvswitches, gpus) or of physical cables (nic-links, spine-links, core-links, links, nvlinks); the same seed
  and class give nested draws (the 3 drawn are among the 4 drawn), so a sweep over counts only adds failures.
A failed device loses every link; a failed cable carries nothing either way. FACTOR (a number or a fraction such as
17/18, greater than 0 and at most 1) scales a link's capacity, every link of a device, or a GPU's compute speed
(a straggler GPU: `train` charges it; a collective's time does not depend on compute in fabricsim's model).
"""

from __future__ import annotations

import math
import re
from typing import Annotated

import msgspec
from msgspec import Meta

from fabricsim.errors import FabricsimError, option

MAX_SEED = 2**63 - 1
_COUNT = re.compile(r"random:(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<pct>%?):(?P<cls>[a-z-]+)")
_SYNTAX = ("a device name or glob (node3.nic0, spine*), a link 'A -> B', or random:N:CLASS / random:P%:CLASS")


class Cut(FabricsimError):
    """Faults that leave a GPU unable to reach the others: nothing can run on that cluster (raised by
    `topology.faulted` and by routing, which finds the cut; it lives here so routing does not load the resolver)."""


def _classes() -> tuple[str, ...]:
    from fabricsim.topology.names import CLASSES

    return CLASSES


def check_target(target: str, where: str) -> str:
    """`target` stripped, when it is a well-formed SPEC (see the module docstring); a FabricsimError otherwise."""
    text = target.strip() if isinstance(target, str) else ""
    if not text:
        raise FabricsimError(f"{where}: empty target: give {_SYNTAX}")
    if text.startswith("random:"):
        m = _COUNT.fullmatch(text)
        if m is None:
            raise FabricsimError(f"{where} '{text}': a count reads random:N:CLASS or random:P%:CLASS, e.g. "
                                 "random:2:spines or random:2%:spine-links")
        if m.group("cls") not in _classes():
            raise FabricsimError(f"{where} '{text}': unknown class '{m.group('cls')}': use one of "
                                 f"{', '.join(_classes())}")
        n = float(m.group("n"))
        if m.group("pct") and n > 100:
            raise FabricsimError(f"{where} '{text}': a share is at most 100%")
        if not m.group("pct") and n != int(n):
            raise FabricsimError(f"{where} '{text}': a count is a whole number (or a share: random:2%:spines)")
    elif "->" in text:
        from fabricsim.topology.names import split_link

        try:
            split_link(text)
        except FabricsimError as err:
            raise FabricsimError(f"{where}: {err}") from None
    return text


def parse_factor(text: str, where: str) -> float:
    """'0.5', '3/4' -> a factor in (0, 1]."""
    raw = text.strip()
    try:
        if "/" in raw:
            num, _, den = raw.partition("/")
            value = float(num) / float(den)
        else:
            value = float(raw)
    except (ValueError, ZeroDivisionError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 1):
        raise FabricsimError(f"{where}: factor '{raw}' must be a number or fraction above 0 and at most 1 (0.5, "
                             "17/18): the share of capacity or compute speed left; a dead part is --fail")
    return value


def split_degrade(text: str, where: str = "--degrade") -> tuple[str, float]:
    """'SPEC:FACTOR' -> (SPEC, factor), split at the last colon."""
    target, sep, factor = str(text).rpartition(":")
    if not sep or not target.strip():
        raise FabricsimError(f"{where} '{text}' must read SPEC:FACTOR, e.g. node5.gpu3:0.5 or 'su0.leaf2:3/4'")
    return check_target(target, where), parse_factor(factor, f"{where} '{text}'")


class Faults(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Failed and degraded parts of a cluster, the `faults:` section of a cluster file: `fail` lists targets that are
    down, `degrade` TARGET:FACTOR entries, `seed` seeds the random:N:CLASS draws (fabricsim.topology.faults)."""

    fail: Annotated[tuple[str, ...], Meta(description="devices, links or counts that are down (SPEC)")] = ()
    degrade: Annotated[tuple[str, ...], Meta(description="SPEC:FACTOR, capacity or compute speed left")] = ()
    seed: Annotated[int, Meta(ge=0, le=MAX_SEED, description="seed of the random:... draws")] = 0

    def __post_init__(self) -> None:
        for text in self.fail:
            check_target(text, "faults.fail entry")
        for text in self.degrade:
            split_degrade(text, "faults.degrade entry")

    def __bool__(self) -> bool:
        return bool(self.fail or self.degrade)

    def targets(self) -> list[tuple[str, float]]:
        """(SPEC, factor) per entry, failures first (factor 0)."""
        return [(check_target(t, "fail"), 0.0) for t in self.fail] + [split_degrade(t) for t in self.degrade]

    def plus(self, other: Faults) -> Faults:
        """These faults and `other`'s (its seed where it gives one)."""
        return Faults(fail=self.fail + other.fail, degrade=self.degrade + other.degrade,
                      seed=other.seed if other.seed else self.seed)

    def text(self) -> str:
        """'fail spine3; degrade node5.gpu3:0.5 (seed 7)' for headers."""
        items = [f"fail {t}" for t in self.fail] + [f"degrade {t}" for t in self.degrade]
        draws = any("random:" in t for t in (*self.fail, *self.degrade))
        return "; ".join(items) + (f" (seed {self.seed})" if draws else "")


NO_FAULTS = Faults()


def faults_of(fail=(), degrade=(), seed: int | None = None) -> Faults:
    """A `Faults` from command-line style values (one string or a list each); every problem one FabricsimError."""
    def listed(value, name: str) -> tuple[str, ...]:
        if value is None or isinstance(value, (str, list, tuple)):
            items = [value] if isinstance(value, str) else list(value or ())
        else:
            items = [value]
        if not all(isinstance(v, str) for v in items):
            raise FabricsimError(f"{name} takes text targets (e.g. 'spine3', 'node5.gpu3:0.5'), got {items!r}")
        return tuple(items)

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise FabricsimError(f"seed {seed!r} must be a whole number from 0 to {MAX_SEED}")
    fails, degrades = listed(fail, "fail"), listed(degrade, "degrade")
    for text in fails:  # checked here so that an error names the option as the caller spelled it (--fail, fail=)
        check_target(text, option("fail"))
    for text in degrades:
        split_degrade(text, option("degrade"))
    return Faults(fail=fails, degrade=degrades, seed=seed or 0)

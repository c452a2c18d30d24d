"""A cluster with its faults: `Faults` resolved against a built topology into failed cables, degraded cables and
slow GPUs, and applied as a what-if variant (`variants.with_link_capacity`, then `variants.without_links`).

The variant's `features['faults']` is the `FaultReport`: what each target resolved to (names, for headers), the
cables and GPUs it touched, and the NVLink domains whose inner cables changed, so the layers above can print the
faults and time the groups they slow. Resolution is deterministic: names and patterns match in device order, and a count
draws its members by ranking the class with a PCG64 stream seeded by (seed, class), whose raw output numpy keeps
stable across releases (NEP 19: bit generators' streams are stable; only the Generator methods may change).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace

import numpy as np

from fabricsim.errors import FabricsimError, option
from fabricsim.topology import names as N
from fabricsim.topology.faults import Cut, Faults
from fabricsim.topology.model import DeviceKind, Topology
from fabricsim.topology.presets import PRESETS
from fabricsim.topology.variants import with_link_capacity, without_links

SHOWN = 4  # names listed per target in a report line before '+N more'


@dataclass(frozen=True)
class FaultReport:
    """What `Faults` did to a topology; cables by the even link index of the topology as built."""

    faults: Faults
    lines: tuple[str, ...]  # one per target: 'fail spine3: spine3 (32 cables)'
    failed: tuple[int, ...]  # cables removed
    degraded: tuple[tuple[int, float], ...]  # (cable, capacity factor) of cables left with less capacity
    gpu_speed: tuple[tuple[int, float], ...]  # (GPU rank, compute factor) of slow GPUs
    domains: tuple[int, ...]  # NVLink domains in which a cable joining two of their devices changed
    notes: tuple[str, ...] = ()  # what a user should know of how a target was modelled (an NVSwitch is all chips)

    def slow_gpus(self) -> dict[int, float]:
        return dict(self.gpu_speed)


@dataclass
class _Acc:
    failed: np.ndarray  # bool per cable
    factor: np.ndarray  # capacity factor per cable
    speed: np.ndarray  # compute factor per GPU rank
    lines: list[str]
    notes: list[str]


def report_of(topo: Topology) -> FaultReport | None:
    """The faults a topology was made with (None: none)."""
    return topo.features.get("faults")


def apply_faults(topo: Topology, faults: Faults) -> Topology:
    """`topo` with `faults` applied (the same topology when there are none). A target that matches nothing, a failed
    GPU, or faults that cut a GPU off are one FabricsimError naming the target and the fix."""
    if not faults:
        return topo
    acc = _Acc(np.zeros(topo.n_links // 2, dtype=bool), np.ones(topo.n_links // 2), np.ones(topo.n_gpus), [], [])
    for target, factor in faults.targets():
        _resolve(topo, target, factor, faults.seed, acc)
    cables = np.flatnonzero((acc.factor != 1.0) & ~acc.failed)
    variant = topo
    if cables.size:
        variant = with_link_capacity(variant, 2 * cables, acc.factor[cables])
    failed = np.flatnonzero(acc.failed)
    if failed.size:
        try:
            variant = without_links(variant, 2 * failed)
        except FabricsimError as err:
            raise Cut(f"the faults ({faults.text()}) cut the cluster: {err}") from None
    slow = np.flatnonzero(acc.speed != 1.0)
    built = (lambda c: int(2 * c)) if topo.link_origin is None else (lambda c: int(topo.link_origin[2 * c]))
    report = FaultReport(faults, tuple(acc.lines), tuple(built(c) for c in failed),
                         tuple((built(c), float(acc.factor[c])) for c in cables),
                         tuple((int(r), float(acc.speed[r])) for r in slow),
                         _domains(topo, np.concatenate([failed, cables])), tuple(acc.notes))
    previous = report_of(topo)
    if previous is not None:
        report = _merged(previous, report)
    spec = topo.spec if topo.spec is None else replace(topo.spec, faults=topo.spec.faults.plus(faults))
    return replace(variant, features={**variant.features, "faults": report}, spec=spec)


def _merged(first: FaultReport, then: FaultReport) -> FaultReport:
    """The report of faults applied one list after another (cables in the built numbering)."""
    factor: dict[int, float] = dict(first.degraded)
    for cable, f in then.degraded:
        factor[cable] = factor.get(cable, 1.0) * f
    speed: dict[int, float] = dict(first.gpu_speed)
    for rank, f in then.gpu_speed:
        speed[rank] = speed.get(rank, 1.0) * f
    failed = tuple(sorted({*first.failed, *then.failed}))
    return FaultReport(first.faults.plus(then.faults), first.lines + then.lines, failed,
                       tuple(sorted((c, f) for c, f in factor.items() if c not in failed)), tuple(sorted(speed.items())),
                       tuple(sorted({*first.domains, *then.domains})), first.notes + then.notes)


def _domains(topo: Topology, cables: np.ndarray) -> tuple[int, ...]:
    """NVLink domains in which a changed cable joins two of their devices (where traffic inside a domain changes)."""
    a, b = topo.dev_domain[topo.link_src[2 * cables]], topo.dev_domain[topo.link_dst[2 * cables]]
    return tuple(int(d) for d in np.unique(a[(a == b) & (a >= 0)]))


def _resolve(topo: Topology, target: str, factor: float, seed: int, acc: _Acc) -> None:
    """Mark what `target` names as failed (factor 0) or degraded."""
    verb = "fail" if factor == 0 else "degrade"
    shown = f"{verb} {target}" + ("" if factor == 0 else f" (x{factor:.4g})")
    if target.startswith("random:"):
        count, pct, cls = _count(target)
        if cls in N.LINK_CLASSES:
            _cables(topo, target, factor, acc, _draw_cables(topo, cls, count, pct, seed, target), shown)
        else:
            _devices(topo, target, factor, acc, _draw_devices(topo, cls, count, pct, seed, target), shown)
    elif N.split_link(target) is not None:
        cables = N.match_links(topo, target)
        if not cables.size:
            raise FabricsimError(f"{verb} '{target}' matches no link of {topo.name}: a link is 'A -> B' with device "
                                 f"names or globs on each side, e.g. {N.examples(topo)}")
        counts = topo.link_count[cables].astype(np.int64)
        _cables(topo, target, factor, acc, (cables // 2, counts), shown)
    else:
        devices = N.match_devices(topo, target)
        if not devices.size:
            _one_nvswitch(topo, target, verb)
            preset = topo.spec is not None and topo.name in PRESETS  # a file's cluster is named by its file
            nodes = f" --nodes {topo.spec.nodes}" if preset and topo.spec is not None and topo.spec.nodes > 1 else ""
            where = f"{topo.name}{nodes}" if preset else "<your cluster file>"
            raise FabricsimError(f"{verb} '{target}' matches no device of {topo.name} ({topo.n_gpus:,} GPUs): names look "
                                 f"like {N.examples(topo)} (`fabricsim whatif names {where}` lists them)")
        _devices(topo, target, factor, acc, devices, shown)


def _count(target: str) -> tuple[float, bool, str]:
    _, n, cls = target.split(":")
    return float(n.rstrip("%")), n.endswith("%"), cls


def _how_many(n: int, count: float, pct: bool, target: str, what: str, topo: Topology) -> int:
    k = int(np.floor(count * n / 100 + 0.5)) if pct else int(count)
    if k > n:
        raise FabricsimError(f"'{target}': {topo.name} has {n:,} {what}: draw at most that many")
    return k


def _order(n: int, seed: int, cls: str) -> np.ndarray:
    """A fixed ranking of a class's n members for (seed, class): the prefix of length k is the draw of k."""
    stream = np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(cls.encode())]))
    return np.argsort(stream.random_raw(n), kind="stable")


def _draw_devices(topo: Topology, cls: str, count: float, pct: bool, seed: int, target: str) -> np.ndarray:
    members = N.class_devices(topo, cls)
    k = _how_many(members.size, count, pct, target, cls, topo)
    return np.sort(members[_order(members.size, seed, cls)[:k]])


def _draw_cables(topo: Topology, cls: str, count: float, pct: bool, seed: int, target: str):
    """(cable, physical cables drawn in it) of k physical cables drawn from a link class."""
    cables = N.class_cables(topo, cls)
    physical = np.repeat(cables // 2, topo.link_count[cables].astype(np.int64))
    k = _how_many(physical.size, count, pct, target, f"{N.LINK_CLASSES[cls]} (physical)", topo)
    drawn, per = np.unique(physical[_order(physical.size, seed, cls)[:k]], return_counts=True)
    return drawn, per


def _cables(topo: Topology, target: str, factor: float, acc: _Acc, hit: tuple[np.ndarray, np.ndarray],
            shown: str) -> None:
    """`hit` = (cables, physical cables named in each): failing all of a bundle removes it, failing some leaves
    it (count - failed) / count of its capacity; degrading d of c cables leaves 1 - d (1 - factor) / c."""
    cable, named = hit
    count = topo.link_count[2 * cable].astype(np.float64)
    left = 1.0 - named * (1.0 - factor) / count
    gone = left <= 0
    acc.failed[cable[gone]] = True
    acc.factor[cable[~gone]] *= left[~gone]
    names = [_cable_name(topo, int(c)) for c in cable[:SHOWN]]
    more = f" +{cable.size - SHOWN} more" if cable.size > SHOWN else ""
    partial = int((~gone).sum()) if factor == 0 else 0
    note = f" ({partial} bundle{'s' * (partial != 1)} left with fewer cables)" if partial else ""
    acc.lines.append(f"{shown}: {int(named.sum()):,} physical cable{'s' * bool(named.sum() != 1)} "
                     f"({', '.join(names)}{more}){note}")


def _cable_name(topo: Topology, cable: int) -> str:
    names = N.device_names(topo)
    return f"{names[int(topo.link_src[2 * cable])]} -> {names[int(topo.link_dst[2 * cable])]}"


def _devices(topo: Topology, target: str, factor: float, acc: _Acc, devices: np.ndarray, shown: str) -> None:
    """A failed device loses every cable; a degraded GPU computes at `factor`, any other device's cables carry it."""
    gpus = devices[topo.dev_kind[devices] == DeviceKind.GPU]
    if factor == 0 and gpus.size:
        name = N.device_names(topo)[int(gpus[0])]
        raise FabricsimError(f"fail '{target}' names GPU {name}: a dead GPU leaves the job (NCCL aborts the "
                             f"communicator); run on fewer GPUs, or slow it with {option('degrade', 'SPEC:FACTOR')}")
    rank_of = np.full(topo.n_devices, -1, dtype=np.int64)
    rank_of[topo.gpu_device] = np.arange(topo.n_gpus)
    acc.speed[rank_of[gpus]] *= factor
    others = devices[topo.dev_kind[devices] != DeviceKind.GPU]
    touched = np.zeros(topo.n_devices, dtype=bool)
    touched[others] = True
    cables = np.flatnonzero(touched[topo.link_src[0::2]] | touched[topo.link_dst[0::2]])
    if factor == 0:
        acc.failed[cables] = True
    else:
        acc.factor[cables] *= factor
    names = N.device_names(topo)
    listed = ", ".join(names[int(d)] for d in devices[:SHOWN]) + (f" +{devices.size - SHOWN} more"
                                                                 if devices.size > SHOWN else "")
    switches = others[(topo.dev_kind[others] == DeviceKind.NVSWITCH) & (topo.dev_units[others] > 1)]
    what = []
    if switches.size:  # one device stands for the domain's chips (topology.builders)
        what.append(f"{'each' if switches.size > 1 else 'the'} domain's {int(topo.dev_units[switches[0]])} "
                    "NVSwitch chips")
    if gpus.size:
        what.append(f"{gpus.size:,} GPU{'s' * (gpus.size != 1)} computing at x{factor:.4g}")
    if others.size:
        what.append(f"{cables.size:,} cable{'s' * (cables.size != 1)} {'down' if factor == 0 else 'degraded'}")
    acc.lines.append(f"{shown}: {listed} ({'; '.join(what)})")
    if factor == 0 and switches.size:
        acc.notes.append(_all_chips(topo, target, names, switches))


def _all_chips(topo: Topology, target: str, names: list[str], switches: np.ndarray) -> str:
    """Why failing an NVSwitch device takes down every chip of its domain, and how to lose one chip instead: the
    builder models a domain's NVSwitch chips as one device of `dev_units` chips (topology.builders)."""
    first, chips = names[int(switches[0])], int(topo.dev_units[switches[0]])
    which = first if switches.size == 1 else f"{first} (and {switches.size - 1:,} more domains')"
    return (f"fail '{target}': fabricsim models the {chips} NVSwitch chips of an NVLink domain as one device, so "
            f"failing {which} takes all {chips} chips down and the domain's GPUs lose NVLink; to lose one of the "
            f"{chips} chips, degrade it instead: {option('degrade', f'{first}:{chips - 1}/{chips}')}")


def _one_nvswitch(topo: Topology, target: str, verb: str) -> None:
    """A target naming chip k > 0 of an NVLink domain (domain0.nvswitch1), which matches nothing because the domain's
    chips are one device (domainD.nvswitch0): one error saying so, with the fix."""
    m = re.fullmatch(r"domain(\d+)\.nvswitch(\d+)", target)
    if m is None:
        return
    mine = np.flatnonzero((topo.dev_kind == DeviceKind.NVSWITCH) & (topo.dev_domain == int(m.group(1))))
    chips = int(topo.dev_units[mine[0]]) if mine.size else 0
    if chips < 2:
        return
    one = f"domain{m.group(1)}.nvswitch0"
    raise FabricsimError(f"{verb} '{target}': fabricsim models the {chips} NVSwitch chips of an NVLink domain as one "
                         f"device, {one}: to lose one of the {chips} chips use "
                         f"{option('degrade', f'{one}:{chips - 1}/{chips}')}; {option('fail', one)} takes all {chips} "
                         "down")

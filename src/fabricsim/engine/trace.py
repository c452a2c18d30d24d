"""Export a Result's timeline as a Chrome / Perfetto trace (JSON `traceEvents`, open in ui.perfetto.dev).

Processes: 1 = the collective's steps; 2 = ranks (one thread per sending GPU rank, one slice per flow);
one process per link technology (one thread per link, one slice per flow crossing it). Times in us.
Large runs without a per-flow timeline get steps and their bottleneck links' busy periods only.
"""

from __future__ import annotations

import json
from pathlib import Path

from fabricsim.engine.result import Result
from fabricsim.errors import FabricsimError

_US = 1e6


def trace_events(result: Result) -> list[dict]:
    """The trace events of `result`, deterministic order."""
    tl, topo = result.timeline, result.topo
    ev: list[dict] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": f"{result.collective} {result.algorithm} {result.protocol} ({result.level})"}},
        {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "steps"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "ranks"}},
    ]
    for i, (s, e) in enumerate(zip(tl.step_start.tolist(), tl.step_end.tolist())):
        ev.append({"ph": "X", "pid": 1, "tid": 0, "name": f"step {i}", "ts": s * _US, "dur": (e - s) * _US,
                   "args": {"pattern": int(tl.step_pattern[i])}})
    tech_pid = {t: 10 + i for i, t in enumerate(topo.techs)}
    for t, pid in tech_pid.items():
        ev.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"links {t}"}})
    named: set[int] = set()

    def link_event(link: int, name: str, start: float, end: float) -> None:
        pid = tech_pid[topo.techs[int(topo.link_tech[link])]]
        if link not in named:
            named.add(link)
            ev.append({"ph": "M", "pid": pid, "tid": link, "name": "thread_name", "args": {"name": topo.link_name(link)}})
        ev.append({"ph": "X", "pid": pid, "tid": link, "name": name, "ts": start * _US, "dur": (end - start) * _US})

    if tl.flow_start is None:
        for b in result.bottlenecks:
            link_event(b.link, "busy (bottleneck)", 0.0, b.busy_time)
        return ev
    ranks: set[int] = set()
    for i in range(tl.flow_start.shape[0]):
        src, dst = int(tl.flow_src[i]), int(tl.flow_dst[i])
        name = f"{'switch' if src < 0 else f'r{src}'} -> {'switch' if dst < 0 else f'r{dst}'}"
        start, end = float(tl.flow_start[i]), float(tl.flow_end[i])
        tid = src if src >= 0 else dst
        if tid not in ranks:
            ranks.add(tid)
            ev.append({"ph": "M", "pid": 2, "tid": tid, "name": "thread_name", "args": {"name": f"rank {tid}"}})
        ev.append({"ph": "X", "pid": 2, "tid": tid, "name": name, "ts": start * _US, "dur": (end - start) * _US,
                   "args": {"step": int(tl.flow_step[i])}})
        for link in tl.flow_links[i].tolist():
            link_event(link, name, start, end)
    return ev


def to_perfetto(result: Result, path: str | Path) -> Path:
    """Write the trace JSON to `path` and return it."""
    return write_trace(trace_events(result), path)


def write_trace(events: list[dict], path: str | Path) -> Path:
    """Write trace events as Chrome / Perfetto trace JSON to `path` and return it."""
    path = Path(path)
    try:
        path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    except OSError as err:
        raise FabricsimError(f"cannot write trace to {path}: {err.strerror}; choose a writable path") from None
    return path

"""A replayed trace as a Chrome / Perfetto trace (JSON traceEvents, open in ui.perfetto.dev).

One process per rank, one thread per stream (compute, cpu, comm:<group>, p2p:<a>-<b>); times in us.
"""

from __future__ import annotations

import json
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.traces.replay import Replay

_US = 1e6


def trace_events(rep: Replay) -> list[dict]:
    """The events of `rep`, deterministic order."""
    tids: dict[tuple[int, str], int] = {}
    ev: list[dict] = []
    for r in rep.ranks:
        ev.append({"ph": "M", "pid": r.rank, "name": "process_name", "args": {"name": f"rank {r.rank}"}})
    for e in rep.events:
        key = (e.rank, e.stream)
        if key not in tids:
            tids[key] = len([k for k in tids if k[0] == e.rank])
            ev.append({"ph": "M", "pid": e.rank, "tid": tids[key], "name": "thread_name", "args": {"name": e.stream}})
        args = {"node": e.node, "kind": e.kind}
        if e.collective:
            args.update(collective=e.collective, bytes=e.nbytes, group=e.group, algo=e.algo, proto=e.proto,
                        channels=e.channels)
        ev.append({"ph": "X", "pid": e.rank, "tid": tids[key], "name": e.name or e.kind, "ts": e.start * _US,
                   "dur": (e.end - e.start) * _US, "args": args})
    return ev


def write(rep: Replay, path: str | Path) -> Path:
    """Write the trace JSON to `path`."""
    path = Path(path)
    try:
        path.write_text(json.dumps({"traceEvents": trace_events(rep), "displayTimeUnit": "ns"}))
    except OSError as err:
        raise FabricsimError(f"cannot write trace to {path}: {err.strerror}; choose a writable path") from None
    return path

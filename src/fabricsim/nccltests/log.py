"""A simulated run printed as nccl-tests prints it: stdout text and the `-J` JSON document.

Layout from nccl-tests' src/util.cu (writeDeviceReport, writeResultHeader, writeBenchmarkLine*,
writeResultFooter, writeErrors; JSON_FILE_VERSION 2) and src/common.cu; the table itself is
reports.nccltests_table's. Times and dates are fixed so output is deterministic: nothing ran.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fabricsim.reports.nccltests_table import PerfRow, format_table

NCCL_TESTS_VERSION = "2.19.6"  # the release whose layout (src/util.cu) the header above follows


@dataclass(frozen=True)
class Run:
    """What one emulated binary printed about itself and its ranks."""

    binary: str  # 'all_reduce_perf'
    argv: tuple[str, ...]
    nthreads: int
    ngpus: int
    minbytes: int
    maxbytes: int
    step: tuple[int, str]  # (value, 'factor' | 'bytes')
    warmup: int
    iters: int
    agg_iters: int
    check: int
    graph: int
    unalign: int
    ranks: int
    gpus_per_node: int
    gpu_name: str
    nccl_code: int  # NCCL_VERSION_CODE of the release modelled
    simulated: str  # the line saying what predicted this
    env: tuple[str, ...]
    cputime: bool
    reduced_to: int  # maxBytes after nccl-tests' GPU-memory cap (0: not reduced)


def _device_lines(run: Run) -> list[str]:
    out = []
    for rank in range(run.ranks):
        node, dev = divmod(rank, run.gpus_per_node)
        host = f"fabricsim-node{node}"
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s"
                   % (rank, 0, 0, host, dev, 0, 0, 0, run.gpu_name))
    return out


def _table(rows: list[PerfRow], collective: str, ranks: int) -> list[str]:
    """Result header and data lines from reports.nccltests_table (its lines 4..; no fabricsim columns)."""
    lines = format_table(rows, collective, ranks, extra_cols=False).split("\n")
    return lines[3:3 + 3 + len(rows)]


def avg_busbw(rows: list[PerfRow]) -> float:
    """nccl-tests' 'Avg bus bandwidth': the mean busbw (GB/s) over every row, out-of-place and in-place."""
    return sum(r.busbw + r.in_place[2] for r in rows) / (2 * len(rows)) / 1e9


def format_log(run: Run, collective: str, groups: list[list[PerfRow]], json_note: str | None) -> str:
    """The whole stdout of the binary; `groups` are the (type, op, root) sweeps in the order nccl-tests runs them."""
    step_value, step_kind = run.step
    head = []
    if json_note:
        head.append(json_note)
    head += [
        f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={run.nccl_code} nccl-library={run.nccl_code}",
        f"# Collective test starting: {run.binary}",
        f"# nThread {run.nthreads} nGpus {run.ngpus} minBytes {run.minbytes} maxBytes {run.maxbytes} step: "
        f"{step_value}({step_kind}) warmup iters: {run.warmup} iters: {run.iters} agg iters: {run.agg_iters} "
        f"validation: {run.check} graph: {run.graph} unalign: {run.unalign}",
        run.simulated,
        "#",
        "# Using devices",
        *_device_lines(run),
        *([f"#", f"# Reducing maxBytes to {run.reduced_to} due to memory limitation"] if run.reduced_to else []),
        "#",
    ]
    body: list[str] = []
    rows = [r for g in groups for r in g]
    for i, g in enumerate(groups):
        table = _table(g, collective, run.ranks)
        body += table if i == 0 else table[3:]
    if run.cputime:
        body[1] = body[1].replace("     time", "  cputime")
    foot = [
        "# %-20s : %d %s" % ("Out of bounds values", 0, "OK"),
        "# %-20s : %g " % ("Avg bus bandwidth", avg_busbw(rows)),
        "#",
        f"# Collective test concluded: {run.binary}",
        "",
        "#",
        "",
    ]
    return "\n".join(head + body + foot)


def _place(row: PerfRow, in_place: bool, cputime: bool) -> dict:
    t, alg, bus = row.in_place if in_place else (row.time_s, row.algbw, row.busbw)
    return {"cpu_time" if cputime else "time": t * 1e6, "alg_bw": alg / 1e9, "bus_bw": bus / 1e9, "nwrong": None}


def format_json(run: Run, groups: list[list[PerfRow]]) -> str:
    """nccl-tests' -J document (JSON_FILE_VERSION 2), with a 'simulated' key saying nothing ran."""
    rows = [r for g in groups for r in g]
    step_value, step_kind = run.step
    devices = [{"rank": r, "group": 0, "pid": 0, "hostname": f"fabricsim-node{r // run.gpus_per_node}",
                "device": r % run.gpus_per_node, "device_hex": "0000:00:00", "device_info": run.gpu_name}
               for r in range(run.ranks)]
    doc = {
        "version": 2,
        "simulated": run.simulated.lstrip("# "),
        "start_time": "1970-01-01 00:00:00",
        "args": list(run.argv),
        "env": list(run.env),
        "nccl_version": run.nccl_code,
        "config": {"nthreads": run.nthreads, "ngpus": run.ngpus, "minimum_bytes": run.minbytes,
                   "maximum_bytes": run.reduced_to or run.maxbytes, f"step_{step_kind}": step_value, "warmup_iters": run.warmup,
                   "iterations": run.iters, "aggregated_iterations": run.agg_iters, "validation": run.check,
                   "graph": run.graph, "blocking_collectives": "false", "per_iter_timing": "false",
                   "parallel_init": "false", "devices": devices},
        "results": [{"size": r.size_bytes, "count": r.count, "type": r.dtype, "redop": r.redop, "root": "%6i" % r.root,
                     "out_of_place": _place(r, False, run.cputime), "in_place": _place(r, True, run.cputime),
                     "actual_iterations": run.iters, "experiment_name": run.binary} for r in rows],
        "out_of_bounds": {"count": 0, "okay": "true"},
        "average_bus_bandwidth": {"bandwidth": avg_busbw(rows), "okay": "unchecked"},
        "errors": [],
        "end_time": "1970-01-01 00:00:00",
    }
    return json.dumps(doc, indent=1) + "\n"

"""`fabricsim perf`: what nccl-tests would print on a cluster, with the algorithm a tuner picks per size."""

from __future__ import annotations

import math

import click
import numpy as np

from fabricsim import hardware
from fabricsim.cli.options import engine_options, load_topology, routing_option, size_options, split_list
from fabricsim.engine import to_perfetto
from fabricsim.errors import FabricsimError
from fabricsim.hardware.memory import fit_note, nccltests_max_bytes
from fabricsim.reports.nccltests_table import (
    DTYPE_SIZES, ROOTED, PerfRow, count_for, format_csv, format_json, format_table,
)
from fabricsim.schedules import COLLECTIVES
from fabricsim.schedules.registry import MAX_ALLTOALL_RANKS
from fabricsim.tuner import nccl_model
from fabricsim.tuner.select import best
from fabricsim.units import MAX_BYTES, parse_size

PERF_COLLECTIVES = COLLECTIVES  # every collective fabricsim schedules
REDOPS = ("sum", "prod", "min", "max", "avg")
_SIZED_BY_TOTAL = {"all_gather", "reduce_scatter", "alltoall"}
_REDUCING = {"all_reduce", "reduce_scatter", "reduce"}  # nccl-tests prints the redop for these, 'none' otherwise


def sizes(minbytes: int, maxbytes: int, factor: float | None, step: int | None) -> list[int]:
    """nccl-tests' size sweep: multiply by -f, or add -i, from -b up to -e inclusive."""
    if maxbytes < minbytes:
        raise FabricsimError(f"-e {maxbytes} is smaller than -b {minbytes}: the sweep runs from -b up to -e")
    if maxbytes > MAX_BYTES:
        raise FabricsimError(f"-e {maxbytes} bytes is more than fabricsim sizes a buffer ({MAX_BYTES} bytes, 256 TiB): "
                             "use a smaller -e")
    if factor is not None and not math.isfinite(factor):
        raise FabricsimError(f"-f {factor}: the factor must be a finite number greater than 1")
    if factor is not None and step is not None:
        raise FabricsimError("give either -f FACTOR or -i STEP, not both")
    if step is not None and step <= 0:
        raise FabricsimError(f"-i {step}: the step must be a positive number of bytes")
    if factor is not None and factor <= 1 and maxbytes > minbytes:
        raise FabricsimError(f"-f {factor}: the factor must be greater than 1")
    out, size = [], minbytes
    while size <= maxbytes:
        out.append(size)
        if size == maxbytes:
            break
        nxt = size + step if step is not None else int(size * (factor or 2))
        size = nxt if nxt > size else size + 1
        if len(out) > 4096:
            raise FabricsimError("the sweep has more than 4096 sizes: use a larger -f or -i")
    return out


def rows_for(topo, collective: str, size_list: list[int], *, dtype: str, redop: str, root: int,
             algos, protos, level: str, library: str, model: str) -> list[tuple[PerfRow, object]]:
    """One nccl-tests row per size (size and count as nccl-tests rounds them) and the choice behind it."""
    elem = DTYPE_SIZES[dtype]
    n = topo.n_gpus
    ranks = np.arange(n, dtype=np.int32)
    system = nccl_model.system_from_topology(topo) if model == "nccl" else None
    out = []
    for size in size_list:
        count = count_for(collective, size, n, elem)
        nbytes = count * elem * (n if collective in _SIZED_BY_TOTAL else 1)
        r = root if collective in ROOTED else -1
        op = redop if collective in _REDUCING else "none"
        if nbytes == 0:  # fewer bytes than one element: NCCL returns at once for a count of 0, nothing moves
            out.append((PerfRow(0, 0, dtype, op, r, 0.0, 0.0, 0.0, "none", "none", 0, "none"), None))
            continue
        if model == "nccl":
            ch = nccl_model.nccl_predict(system, collective, nbytes, algo=algos, proto=protos, redop=redop, dtype=dtype)
            row = PerfRow(nbytes, count, dtype, op,
                          r, ch.time_s, ch.algbw, ch.busbw, ch.algo, ch.proto, ch.channels, "nccl-model")
            out.append((row, ch))
            continue
        choice = best(topo, collective, nbytes, ranks=ranks, elem_size=elem, algos=algos, protos=protos,
                      level=level, library=library, root=max(r, 0), redop=redop, dtype=dtype)
        res = choice.result
        row = PerfRow(nbytes, count, dtype, op,
                      r, res.time, res.algbw, res.busbw, choice.algorithm, choice.protocol, choice.channels, res.level)
        out.append((row, choice))
    return out


def explain_rows(topo, collective: str, rows: list[tuple[PerfRow, object]], protos, algos) -> str:
    """Per size: fabricsim's pick and NCCL's model's pick side by side, and why they differ."""
    system = nccl_model.system_from_topology(topo)
    lines = ["", "# explain: fabricsim (topology simulation) vs NCCL's own cost model (tuning.cc)",
             f"# {'size':>12}  {'fabricsim':<18} {'time us':>10} {'busbw':>8}   {'nccl model':<18} {'time us':>10} {'busbw':>8}  reason"]
    for row, choice in rows:
        if choice is None:
            continue
        try:
            ch = nccl_model.nccl_predict(system, collective, row.size_bytes, algo=algos, proto=protos,
                                         redop=row.redop if row.redop != "none" else "sum", dtype=row.dtype)
            nccl = (f"{ch.algo}/{ch.proto}", f"{ch.time_s * 1e6:.1f}", f"{ch.busbw / 1e9:.1f}")
            reason = None
        except FabricsimError as err:
            nccl, reason = ("n/a", "-", "-"), str(err)
        res = choice.result
        fab = (f"{choice.algorithm}/{choice.protocol}", res.time * 1e6, res.busbw / 1e9)
        if reason is None:
            reason = _reason(choice, ch, res)
        lines.append(f"# {row.size_bytes:>12}  {fab[0]:<18} {fab[1]:>10.1f} {fab[2]:>8.1f}   {nccl[0]:<18} {nccl[1]:>10} "
                     f"{nccl[2]:>8}  {reason}")
    return "\n".join(lines)


def _reason(choice, ch, res) -> str:
    same = choice.algorithm.replace("_", "") == ch.algo.lower() and choice.protocol == ch.proto.lower()
    bound = res.bound
    neck = res.bottlenecks[0] if res.bottlenecks else None
    where = f"bottleneck {neck.name} ({neck.tech}, {neck.effective_capacity / 1e9:.1f} GB/s effective, {neck.flows} flows)" if neck else "no shared link"
    if same:
        return f"same pick; fabricsim is {bound}: {where}"
    return f"different pick: fabricsim times every candidate on the topology ({bound}: {where}); NCCL ranks by its latency/bandwidth tables"


@click.command("perf")
@click.argument("collective", type=click.Choice(PERF_COLLECTIVES))
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@routing_option
@click.option("-b", "--minbytes", default="32M", show_default=True, help="Smallest size (K/M/G suffixes).")
@click.option("-e", "--maxbytes", default="32M", show_default=True, help="Largest size.")
@click.option("-f", "--stepfactor", type=float, default=None, help="Multiply the size by this factor each step.")
@click.option("-i", "--stepbytes", default=None, help="Add this many bytes each step.")
@click.option("-d", "--datatype", default="float", show_default=True, type=click.Choice(sorted(DTYPE_SIZES)))
@click.option("-o", "--op", "redop", default="sum", show_default=True, type=click.Choice(REDOPS))
@click.option("-r", "--root", default=0, show_default=True, type=int, help="Root rank of broadcast / reduce.")
@engine_options
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json", "csv"]))
@click.option("--library", default="nccl", show_default=True, type=click.Choice(["nccl", "all"]),
              help="Candidates: what NCCL runs, or every fabricsim schedule (Rabenseifner, Bruck, hierarchical, ...).")
@click.option("--explain", is_flag=True, help="Also print NCCL's model's pick per size and why fabricsim differs.")
@click.option("--trace", "trace_path", default=None,
              help="Write a Chrome/Perfetto trace (JSON, open in ui.perfetto.dev) of the largest size's simulation.")
def perf(collective, cluster, nodes, gpus, routing, minbytes, maxbytes, stepfactor, stepbytes, datatype, redop, root,
         algo, proto, fmt, model, level, library, explain, trace_path):
    """Predict nccl-tests output for COLLECTIVE on a cluster (time, algbw, busbw per size)."""
    topo = load_topology(cluster, nodes, gpus, routing)
    n = topo.n_gpus
    if collective in ROOTED and not 0 <= root < n:
        raise FabricsimError(f"root {root} is outside the {n} ranks: use -r 0..{n - 1}")
    if collective == "sendrecv" and n < 2:
        raise FabricsimError("sendrecv needs at least 2 GPUs: use a larger --nodes/--gpus")
    lo, hi, step = parse_size(minbytes), parse_size(maxbytes), parse_size(stepbytes) if stepbytes is not None else None
    size_list = sizes(lo, hi, stepfactor, step)
    gpu = hardware.get_gpu(topo.parts[int(topo.dev_part[topo.gpu_device[0]])])
    reduced = fit_note(gpu, hi)
    if reduced:  # as nccl-tests: the sweep stops at what the buffers fit in HBM
        click.echo(f"warning: {reduced}", err=True)
        hi = nccltests_max_bytes(gpu)
        size_list = sizes(min(lo, hi), hi, stepfactor, step)
    rows = rows_for(topo, collective, size_list, dtype=datatype, redop=redop, root=root, algos=split_list(algo),
                    protos=split_list(proto), level=level, library=library, model=model)
    perf_rows = [r for r, _ in rows]
    if explain and model != "fabricsim":
        raise FabricsimError("--explain compares fabricsim's simulation with NCCL's model: drop --model nccl")
    if trace_path:
        if model != "fabricsim":
            raise FabricsimError("--trace records fabricsim's simulation: drop --model nccl to write a trace")
        if rows[-1][1] is None:
            raise FabricsimError("the largest size moves no data (fewer bytes than one element): raise -e to trace it")
        to_perfetto(rows[-1][1].result, trace_path)
    if fmt == "json":
        click.echo(format_json(perf_rows))
    elif fmt == "csv":
        click.echo(format_csv(perf_rows), nl=False)
    else:
        click.echo(f"# fabricsim perf {collective} on {topo.name}: {n} GPUs, model {model}"
                   + (f", engine level {level}" if model == "fabricsim" else "")
                   + (f", {topo.features['routing']} routing" if topo.features.get("fabric") else ""))
        if reduced:
            click.echo(f"#\n# Reducing maxBytes to {hi} due to memory limitation")
        if collective == "alltoall" and n > MAX_ALLTOALL_RANKS and model == "fabricsim":
            click.echo(f"# all-to-all over more than {MAX_ALLTOALL_RANKS:,} ranks: some nodes' transfers are routed and the "
                       "rest follow by symmetry, each link carrying its class's share (hashed ECMP collisions not counted)")
        click.echo(format_table(perf_rows, collective, n))
        if explain:
            click.echo(explain_rows(topo, collective, rows, split_list(proto), split_list(algo)))

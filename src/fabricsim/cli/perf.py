"""`fabricsim perf`: what nccl-tests would print on a cluster, with the algorithm a tuner picks per size."""

from __future__ import annotations

import click

from fabricsim.cli.options import cost_model as pick_cost_model
from fabricsim.cli.options import (check_report, engine_options, fault_lines, fault_options, faults_given,
                                   nccl_version_option, notes, parse_env, report_option, routing_option,
                                   size_options)
from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_table import DTYPE_SIZES
from fabricsim.reports.sweep import REDOPS
from fabricsim.schedules import COLLECTIVES as PERF_COLLECTIVES  # every collective fabricsim schedules


@click.command("perf")
@click.argument("collective", metavar="COLLECTIVE", type=click.Choice(PERF_COLLECTIVES))
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@routing_option
@fault_options
@click.option("-b", "--minbytes", default="32M", show_default=True, help="Smallest size (K/M/G suffixes).")
@click.option("-e", "--maxbytes", default="32M", show_default=True, help="Largest size.")
@click.option("-f", "--stepfactor", type=float, default=None,
              help="Multiply the size by this factor each step (default 2 without -i; nccl-tests' own default is "
                   "-i 1M).")
@click.option("-i", "--stepbytes", default=None, help="Add this many bytes each step instead of -f.")
@click.option("-d", "--datatype", default="float", show_default=True, type=click.Choice(sorted(DTYPE_SIZES)))
@click.option("-o", "--op", "redop", default="sum", show_default=True, type=click.Choice(REDOPS))
@click.option("-r", "--root", default=0, show_default=True, type=int, help="Root rank of broadcast / reduce.")
@engine_options
@nccl_version_option
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json", "csv"]))
@click.option("--library", default="nccl", show_default=True, type=click.Choice(["nccl", "all"]),
              help="Candidates: what NCCL runs, or every fabricsim schedule (Rabenseifner, Bruck, hierarchical, ...).")
@click.option("--explain", is_flag=True,
              help="Also give NCCL's model's pick per size and why fabricsim differs (table: below it; JSON: an "
                   "'explain' list).")
@click.option("--trace", "trace_path", default=None,
              help="Write a Chrome/Perfetto trace (JSON, open in ui.perfetto.dev) of the largest size's simulation.")
@click.option("--env", "env_pairs", multiple=True,
              help="An NCCL variable the run sets, NCCL_NAME=VALUE (e.g. NCCL_BUFFSIZE=8388608); repeatable.")
@click.option("--ecmp-seeds", "ecmp_seeds", type=click.IntRange(1), default=1, show_default=True,
              help="Time the sweep under N ECMP hash seeds (from the cluster's ecmp_seed): each row is its size's "
                   "median seed, with the busbw spread below (collisions are the hash's luck).")
@report_option
def perf(collective, cluster, nodes, gpus, routing, fail, degrade, seed, minbytes, maxbytes, stepfactor, stepbytes,
         datatype, redop, root, algo, proto, nccl_version, fmt, level, cost_model, old_model, library, explain,
         trace_path, env_pairs, ecmp_seeds, report_path):
    """Predict nccl-tests output for COLLECTIVE on a cluster (time, algbw, busbw per size)."""
    from fabricsim import api
    from fabricsim.units import parse_size

    model = pick_cost_model(cost_model, old_model)
    if explain and model != "fabricsim":
        raise FabricsimError("--explain compares fabricsim's simulation with NCCL's model: drop --cost-model nccl")
    if explain and fmt == "csv":
        raise FabricsimError("--explain adds a second table that CSV cannot hold: use --format table or json")
    if trace_path and model != "fabricsim":
        raise FabricsimError("--trace records fabricsim's simulation: drop --cost-model nccl to write a trace")
    if routing and model != "fabricsim":
        raise FabricsimError("--routing changes fabricsim's simulated fabric; NCCL's cost model does not route: drop "
                             "--routing or --cost-model nccl")
    if ecmp_seeds > 1 and fmt == "csv":
        raise FabricsimError("--ecmp-seeds adds a spread table that CSV cannot hold: use --format table or json")
    check_report(report_path)
    size_list = api.sizes(minbytes, maxbytes, factor=stepfactor, step=stepbytes)
    c = api.cluster(cluster, nodes, gpus, routing=routing, faults=faults_given(fail, degrade, seed))
    reduced = _fit_hbm(c.topology, parse_size(maxbytes))
    if reduced:  # as nccl-tests: the sweep stops at what the buffers fit in HBM
        click.echo(f"warning: {reduced[0]}", err=True)
        size_list = api.sizes(min(size_list[0], reduced[1]), reduced[1], factor=stepfactor, step=stepbytes)
    with progress_bar(f"perf {collective}") as progress:
        result = api.perf(c, collective, size_list, algo=algo, proto=proto, dtype=datatype, op=redop, root=root,
                          level=level, cost_model=model, library=library, progress=progress, nccl_version=nccl_version,
                          ecmp_seeds=ecmp_seeds, env=parse_env(env_pairs))
    notes(result.notes)
    if trace_path:
        from fabricsim.engine import to_perfetto

        if result.picks[-1] is None:
            raise FabricsimError("the largest size moves no data (fewer bytes than one element): raise -e to trace it")
        to_perfetto(result.picks[-1].result, trace_path)
    if report_path:
        result.report(report_path)
    explained = result.explain() if explain else None
    if fmt == "json":
        from fabricsim.reports.nccltests_table import format_json
        from fabricsim.reports.sweep import explain_record

        extra = {"explain": [explain_record(e) for e in explained]} if explained is not None else {}
        if result.ecmp:
            extra["ecmp"] = [s.record() for s in result.ecmp]
        click.echo(format_json(list(result.rows), result.meta(), **extra), nl=False)
    elif fmt == "csv":
        from fabricsim.reports.nccltests_table import format_csv

        click.echo(format_csv(list(result.rows)), nl=False)
    else:
        click.echo(_table(result, reduced[1] if reduced else None))
        if result.ecmp:
            from fabricsim.reports.ecmp import format_spread

            click.echo(format_spread(list(result.ecmp)))
        if explained is not None:
            from fabricsim.reports.sweep import format_explain

            click.echo(format_explain(explained))


def _fit_hbm(topo, maxbytes: int) -> tuple[str, int] | None:
    """(warning, the largest size nccl-tests would run) where -e's buffers do not fit in HBM (nccl-tests then
    reduces maxBytes; it does not fail)."""
    from fabricsim import hardware
    from fabricsim.hardware.memory import fit_note, nccltests_max_bytes

    gpu = hardware.get_gpu(topo.gpu_part())
    note = fit_note(gpu, maxbytes)
    return (note, nccltests_max_bytes(gpu)) if note else None


def _table(result, reduced_to: int | None = None) -> str:
    """The header lines fabricsim adds (and nccl-tests' own 'Reducing maxBytes' line), then nccl-tests' table."""
    from fabricsim.reports.nccltests_table import format_table
    from fabricsim.schedules.registry import MAX_ALLTOALL_RANKS

    c, topo = result.cluster, result.cluster.topology
    gpus = (f"{c.n_gpus} of {c.total_gpus} GPUs (ranks {result.meta()['ranks']})" if c.partial else f"{c.n_gpus} GPUs")
    head = [f"# fabricsim perf {result.collective} on {topo.name}: {gpus}, cost model {result.cost_model}"
            + (f", engine level {result.level}" if result.level else "")
            + (f", {topo.features['routing']} routing" if topo.features.get("fabric") and result.level else "")
            + f", {result.nccl} rules"]
    head += fault_lines(c.faults)
    head += [f"# {e.var}={e.value}: {e.status} ({e.why})" for e in result.env]
    if reduced_to is not None:
        head.append(f"#\n# Reducing maxBytes to {reduced_to} due to memory limitation")
    if result.collective == "alltoall" and c.n_gpus > MAX_ALLTOALL_RANKS and result.level:
        head.append(f"# all-to-all over more than {MAX_ALLTOALL_RANKS:,} ranks: some nodes' transfers are routed and "
                    "the rest follow by symmetry, each link carrying its class's share (hashed ECMP collisions not "
                    "counted)")
    return "\n".join(head + [format_table(list(result.rows), result.collective, c.n_gpus)])

"""`fabricsim compare`: a real nccl-tests log against fabricsim's prediction of the same sizes on a cluster."""

from __future__ import annotations

from pathlib import Path

import click

from fabricsim.cli.options import engine_options, load_topology, routing_option, size_options, split_list
from fabricsim.cli.perf import PERF_COLLECTIVES, rows_for
from fabricsim.errors import FabricsimError
from fabricsim.reports import compare as report
from fabricsim.reports.nccltests_log import ParsedLog, ParsedRow, parse_nccl_tests
from fabricsim.reports.nccltests_table import DTYPE_SIZES
from fabricsim.topology import load_spec


def read_log(path: str) -> ParsedLog:
    """Read and parse an nccl-tests log file (text or -J JSON)."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read nccl-tests log {path}: {err.strerror}; give the path of a saved "
                             "nccl-tests stdout or -J JSON file") from None
    except UnicodeDecodeError as err:
        raise FabricsimError(f"nccl-tests log {path} is not UTF-8 text (byte {err.start}): give a saved nccl-tests "
                             "stdout or -J JSON file") from None
    return parse_nccl_tests(text)


def rank_mismatch(log_nranks: int, cluster: str, size: str, topo) -> str:
    """The log ran another rank count than the cluster has GPUs: say so, and which cluster size would match."""
    where = f"the log ran on {log_nranks} ranks but {cluster}{size} has {topo.n_gpus} GPUs"
    spec = topo.spec
    if Path(cluster).is_file():
        if log_nranks % spec.gpus_per_node == 0:
            return f"{where}: set nodes: {log_nranks // spec.gpus_per_node} in {cluster}"
        return f"{where}: set nodes and gpus_per_node in {cluster} so that they multiply to {log_nranks}"
    try:
        load_spec(cluster, gpus=log_nranks)
    except FabricsimError:
        unit = f"racks of {spec.domain_size}" if spec.scaleup == "nvl72" else f"nodes of {spec.gpus_per_node}"
        return (f"{where}; {cluster} comes in whole {unit} GPUs, so no --gpus runs {log_nranks} ranks: use a cluster "
                f"whose GPU count equals the log's ranks (a YAML cluster with {log_nranks} GPUs)")
    return f"{where}: use --gpus {log_nranks}"


def log_collective(log: ParsedLog, override: str | None) -> str:
    """The log's collective, or --collective where the log does not name one."""
    coll = log.collective
    if coll is None:
        if override is None:
            raise FabricsimError("the log does not say which collective it ran (no '<name>_perf' line): "
                                 "pass --collective, e.g. --collective all_gather")
        return override
    if override is not None and override != coll:
        raise FabricsimError(f"the log ran {coll} but --collective says {override}: drop --collective")
    if coll not in PERF_COLLECTIVES:
        raise FabricsimError(f"the log ran {coll}, which fabricsim does not predict: "
                             f"use a log of one of {', '.join(PERF_COLLECTIVES)}")
    return coll


def predict_like_log(topo, collective: str, log_rows: list[ParsedRow], **kw) -> list:
    """Predictions for every log row, in log order, with each row's own type / op / root."""
    groups: dict[tuple[str, str, int], list[int]] = {}
    for i, row in enumerate(log_rows):
        if row.dtype not in DTYPE_SIZES:
            raise FabricsimError(f"size {row.size_bytes}: the log's type '{row.dtype}' is not an nccl-tests type "
                                 f"fabricsim knows ({', '.join(sorted(DTYPE_SIZES))}); check the log's type column")
        root = row.root if row.root is not None and row.root >= 0 else 0
        groups.setdefault((row.dtype, row.redop or "sum", root), []).append(i)
    out: list = [None] * len(log_rows)
    for (dtype, redop, root), idx in groups.items():
        preds = rows_for(topo, collective, [log_rows[i].size_bytes for i in idx], dtype=dtype, redop=redop,
                         root=root, **kw)
        for i, (row, _choice) in zip(idx, preds):
            out[i] = row
    return out


@click.command("compare")
@click.argument("log_path", metavar="LOG")
@click.option("--cluster", "-c", required=True, help="Preset name (fabricsim topo list) or a cluster YAML file.")
@size_options
@routing_option
@click.option("--collective", default=None, type=click.Choice(PERF_COLLECTIVES),
              help="Only for logs that do not name their collective (e.g. nccl-tests v2.9 without the binary line).")
@engine_options
@click.option("--placement", default="out", show_default=True, type=click.Choice(["out", "in"]),
              help="Compare against the out-of-place or the in-place columns of the log.")
@click.option("--plot", "plot_path", default=None, help="Also save measured vs predicted busbw vs size as this PNG.")
@click.option("--format", "fmt", default="table", show_default=True, type=click.Choice(["table", "json"]))
def compare(log_path, cluster, nodes, gpus, routing, collective, algo, proto, placement, level, model, plot_path, fmt):
    """Compare a real nccl-tests LOG with fabricsim's prediction of the same sizes on a cluster."""
    log = read_log(log_path)
    coll = log_collective(log, collective)
    topo = load_topology(cluster, nodes, gpus, routing)
    n = topo.n_gpus
    if log.nranks is not None and log.nranks != n:
        size = f" --nodes {nodes}" if nodes is not None else f" --gpus {gpus}" if gpus is not None else ""
        raise FabricsimError(rank_mismatch(log.nranks, cluster, size, topo))
    kept, skipped = report.comparable(log.rows, placement)
    predicted = predict_like_log(topo, coll, kept, algos=split_list(algo), protos=split_list(proto), level=level,
                                 library="nccl", model=model)
    rows = report.compare_rows(kept, predicted, coll, n, placement)
    summary = report.summarize(rows)
    where = f"{topo.name} ({n} GPUs)"
    how = f"model {model}" + (f", engine level {level}" if model == "fabricsim" else "")
    if plot_path is not None:
        report.plot_busbw(rows, f"{coll} on {where}\nnccl-tests log vs prediction ({how})", plot_path)
    if fmt == "json":
        click.echo(report.format_json(rows, summary, {
            "log": str(log_path), "collective": coll, "log_nranks": log.nranks, "nccl_version": log.nccl_version,
            "cluster": topo.name, "gpus": n, "placement": placement, "model": model, "level": level}, skipped), nl=False)
        return
    ranks = f"{log.nranks} ranks" if log.nranks is not None else f"rank count not in the log, assumed {n}"
    nccl = f", NCCL {log.nccl_version}" if log.nccl_version else ""
    columns = "out-of-place" if placement == "out" else "in-place"
    title = f"fabricsim compare: {coll} log ({ranks}{nccl}, {columns} columns) vs {where}, {how}"
    click.echo(report.format_table(rows, summary, title, skipped), nl=False)

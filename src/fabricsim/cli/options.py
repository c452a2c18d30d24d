"""Options shared by several subcommands, and the few helpers that read them."""

from __future__ import annotations

import click

from fabricsim.errors import FabricsimError

COST_MODELS = ("fabricsim", "nccl")  # as fabricsim.reports.sweep.COST_MODELS, without importing the engine


def routing_option(f):
    """--routing: override the cluster's fat-tree routing (what-if: adaptive routing on a static fabric)."""
    return click.option("--routing", default=None, type=click.Choice(["ecmp", "adaptive"]),
                        help="Fat-tree routing: ecmp (one hashed path per flow) or adaptive (flows spread over all "
                             "paths); default: the cluster's.")(f)


def size_options(f):
    """--nodes / --gpus: how big to build a preset cluster, and which ranks a run uses."""
    f = click.option("--gpus", type=int, default=None,
                     help="GPUs the run uses: whole nodes / racks of a preset, or fewer than one node (the node is "
                          "built whole, the run uses its first GPUs); with --nodes, that many GPUs spread evenly "
                          "over the nodes.")(f)
    return click.option("--nodes", type=int, default=None, help="Nodes (servers or NVL72 trays); presets only.")(f)


def fault_options(f):
    """--fail / --degrade / --seed: parts of the cluster that are down or slow (fabricsim.topology.faults)."""
    f = click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=None,
                     help="Seed of the random:N:CLASS draws of --fail / --degrade (default 0).")(f)
    f = click.option("--degrade", multiple=True, metavar="SPEC:FACTOR",
                     help="Leave SPEC at FACTOR (0-1, or a fraction such as 17/18) of its link capacity, or of its "
                          "compute speed for a GPU (a straggler); repeatable.")(f)
    return click.option("--fail", multiple=True, metavar="SPEC",
                        help="Take SPEC down: a device name or glob (node3.nic0, 'spine*'), a link 'A -> B', or a "
                             "count (random:2:spines, random:2%:spine-links); repeatable.")(f)


def faults_given(fail, degrade, seed):
    """The --fail / --degrade / --seed values as a `Faults`, or None when none was given."""
    from fabricsim.topology.faults import faults_of

    if not fail and not degrade:
        if seed is not None:
            raise FabricsimError("--seed seeds the random:... draws of --fail / --degrade (and train's --jitter): give one of "
                                 "them, or drop --seed")
        return None
    return faults_of(fail=fail, degrade=degrade, seed=seed)


def fault_lines(report) -> list[str]:
    """'# faults: ...' header lines of a run on a cluster with faults (none for a healthy one)."""
    if report is None:
        return []
    return [f"# faults ({len(report.lines)}):", *(f"#   {line}" for line in report.lines)]


def engine_options(f):
    """--algo / --proto / --level / --cost-model (and the deprecated --model): how a prediction is made."""
    f = click.option("--model", "old_model", default=None, hidden=True, type=click.Choice(COST_MODELS),
                     help="Deprecated spelling of --cost-model.")(f)
    f = click.option("--cost-model", "cost_model", default=None, type=click.Choice(COST_MODELS),
                     help="fabricsim (default): the algorithm and protocol NCCL's own model picks, timed on the "
                          "topology by fabricsim's engine; nccl: NCCL's own cost model alone (tuning.cc).")(f)
    f = click.option("--level", default=None, type=click.Choice(["flow", "analytical"]),
                     help="fabricsim's engine fidelity: flow-level max-min sharing (default), or the fast per-step "
                          "bottleneck model.")(f)
    f = click.option("--proto", default=None, help="Force protocols, as NCCL_PROTO: ll, ll128, simple.")(f)
    return click.option("--algo", default=None, help="Force algorithms, as NCCL_ALGO: e.g. ring,tree,nvls.")(f)


def nccl_version_option(f):
    """--nccl-version: the NCCL release whose rules a prediction follows (fabricsim.tuner.nccl_versions)."""
    return click.option("--nccl-version", "nccl_version", default=None,
                        help="NCCL release whose algorithms, LL128 rule, channels and chunks apply, e.g. 2.18 or "
                             "2.26.5 (default: the newest modelled; compare: the one the log prints).")(f)


def parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    """--env NCCL_NAME=VALUE pairs (repeatable) -> {name: value}; one variable given two values is an error."""
    out = {}
    for pair in pairs:
        var, eq, value = pair.partition("=")
        if not eq or not var:
            raise FabricsimError(f"--env {pair!r}: give NCCL_NAME=VALUE, e.g. --env NCCL_P2P_DISABLE=1")
        var, value = var.strip(), value.strip()
        if var in out and out[var] != value:
            raise FabricsimError(f"--env {var} is given twice ({var}={out[var]} and {var}={value}): a run sets a "
                                 "variable once, keep one")
        out[var] = value
    return out


def cost_model(new: str | None, old: str | None) -> str:
    """--cost-model, or the deprecated --model with a note on stderr (train's --model names a training model)."""
    if old is not None:
        if new is not None and new != old:
            raise FabricsimError(f"--model {old} and --cost-model {new} disagree: give --cost-model only")
        click.echo(f"note: --model is deprecated here (train's --model names a model to train): use --cost-model "
                   f"{old}", err=True)
    return new or old or "fabricsim"


def notes(lines) -> None:
    """What a run wants the user to know, on stderr (stdout keeps the table or JSON clean)."""
    for line in lines:
        click.echo(f"note: {line}", err=True)


def report_option(f):
    """--report: also write the run's HTML report (the report extra)."""
    return click.option("--report", "report_path", default=None,
                        help="Also write this run's HTML report to this file (self-contained; the report extra).")(f)


def check_report(path) -> None:
    """Fail before the work when --report cannot be written (its libraries missing)."""
    if path is not None:
        from fabricsim.reports.html_report import check_available

        check_available()

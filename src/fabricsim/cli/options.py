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


def engine_options(f):
    """--algo / --proto / --level / --cost-model (and the deprecated --model): how a prediction is made."""
    f = click.option("--model", "old_model", default=None, hidden=True, type=click.Choice(COST_MODELS),
                     help="Deprecated spelling of --cost-model.")(f)
    f = click.option("--cost-model", "cost_model", default=None, type=click.Choice(COST_MODELS),
                     help="fabricsim (default): simulate every candidate on the topology; nccl: NCCL's own "
                          "cost model (tuning.cc).")(f)
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

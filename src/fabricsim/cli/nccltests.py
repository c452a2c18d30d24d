"""`fabricsim nccl-tests BINARY [nccl-tests flags]`: nccl-tests without GPUs (NVIDIA/k8s-test-infra#372).

Each of all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf and
sendrecv_perf takes nccl-tests' own flags, reads the cluster from FABRICSIM_CLUSTER (a preset or a cluster
file), the process count from the MPI / Slurm environment and the NCCL variables that change results, and
prints what nccl-tests would, with one line saying the figures are simulated.

The bare names are opt-in: `fabricsim nccl-tests install DIR` writes them into a directory you choose and put
on PATH yourself. They are not console scripts of the package, because a pip extra cannot add or withhold
console scripts (entry points belong to the distribution), and always-installed names in a virtualenv's bin
would shadow a real nccl-tests build further down PATH.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import replace
from pathlib import Path

import click

from fabricsim.errors import FabricsimError
from fabricsim.vocab import REDUCING, REDUCTION_OPS

BINARIES = {"all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather", "reduce_scatter_perf": "reduce_scatter",
            "broadcast_perf": "broadcast", "reduce_perf": "reduce", "alltoall_perf": "alltoall",
            "sendrecv_perf": "sendrecv"}
# nccl-tests' test_typenames / test_opnames order (src/common.cu), for -d all / -o all.
_ALL_TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16", "f8e4m3",
              "f8e5m2")
_ALL_OPS = REDUCTION_OPS
_ROOTED = ("broadcast", "reduce")
_SHIM_MARK = "# fabricsim nccl-tests shim"
# MPI / Slurm process counts and ranks, in the order they are trusted (Open MPI, PMI (MPICH, Intel MPI), Slurm).
_WORLD_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
_WORLD_RANK = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


def _env_int(environ, names, least: int) -> int | None:
    """The first of `names` set in the environment, as an integer >= least; None when none is set."""
    for name in names:
        if name in environ:
            text = environ[name].strip()
            if not text.isdigit() or int(text) < least:
                raise FabricsimError(f"{name}={environ[name]!r} is not a process {'count' if least else 'rank'}: "
                                     "check the launcher's environment")
            return int(text)
    return None


def sweep(topo, collective: str, size_list: list[int], first: int | None = None, **kw) -> list:
    """The perf sweep this emulator prints: one PerfRow per size (`fabricsim.reports.sweep.predict` on every
    GPU of the topology, or on its `first` GPUs when the run is part of one node)."""
    import numpy as np

    from fabricsim.reports.sweep import predict

    ranks = np.arange(first or topo.n_gpus, dtype=np.int32)
    return [p.row for p in predict(topo, ranks, collective, size_list, level="flow", library="nccl",
                                   cost_model="fabricsim", **kw)]


def _cluster(environ, ranks: int, notes: list[str]):
    """(spec, first): the cluster the run's ranks use, and how many of its GPUs when they are part of one node
    (nccl-tests' `-g 4` on an 8-GPU server runs on GPUs 0-3; the node stays whole), else None."""
    from fabricsim.topology import PRESETS, load_spec

    name = environ.get("FABRICSIM_CLUSTER", "").strip()
    if not name:
        raise FabricsimError("FABRICSIM_CLUSTER is not set: set it to a preset (fabricsim topo list, e.g. dgx-h100) "
                             "or a cluster YAML file")
    spec = load_spec(name)
    unit = max(spec.gpus_per_node, spec.domain_size)  # a preset resizes by whole nodes (NVL72: whole racks)
    what = "node" if unit == spec.gpus_per_node else "rack"
    if ranks < unit:
        whole = load_spec(name, gpus=unit) if name in PRESETS else replace(spec, nodes=unit // spec.gpus_per_node)
        notes.append(f"{ranks} ranks on part of {name}'s first {what}: GPUs 0-{ranks - 1} of {unit}")
        return whole, ranks
    if ranks % unit:  # in nccl-tests' terms: a preset's own message would name fabricsim's --nodes / --gpus
        lo = ranks // unit * unit
        raise FabricsimError(f"{name} has {what}s of {unit} GPUs: run whole {what}s (ranks = processes x -t x -g, a "
                             f"multiple of {unit}: {lo} or {lo + unit}), or fewer than {unit} ranks on part of one")
    if name in PRESETS:
        return load_spec(name, gpus=ranks), None
    have = spec.nodes * spec.gpus_per_node
    if ranks != have:
        spec = replace(spec, nodes=ranks // spec.gpus_per_node)
        notes.append(f"{name} has {have} GPUs; this run uses {ranks} ranks: {spec.nodes} node(s) of it")
    return spec, None


def _sizes(args) -> list[int]:
    from fabricsim.reports.sweep import sizes

    if args.stepfactor > 1:  # sizes refuses a factor sweep that repeats a size (-b 0)
        return sizes(args.minbytes, args.maxbytes, float(args.stepfactor), None)
    if args.stepbytes <= 0:
        raise FabricsimError("-i 0 without -f: the size never grows; give -i > 0 or -f > 1")
    return sizes(args.minbytes, args.maxbytes, None, args.stepbytes)


def _choices(args, collective: str, ranks: int, notes: list[str]):
    from fabricsim.reports.nccltests_table import DTYPE_SIZES

    types = list(_ALL_TYPES) if args.datatype == "all" else [args.datatype]
    for t in types:
        if t not in DTYPE_SIZES:
            raise FabricsimError(f"-d {t}: not an nccl-tests type; use one of {', '.join(_ALL_TYPES)} or all")
    if collective in REDUCING:
        ops = list(_ALL_OPS) if args.op == "all" else [args.op]
        if args.op == "all":
            notes.append("-o all: mulsum (ncclPreMulSum) is not modelled and is left out")
        for o in ops:
            if o not in _ALL_OPS:
                raise FabricsimError(f"-o {o}: use one of {', '.join(_ALL_OPS)} or all")
    else:
        ops = ["sum"]
    if collective in _ROOTED:
        if args.root == "all":
            roots = list(range(ranks))
        else:
            try:
                roots = [int(args.root, 0)]
            except ValueError:
                raise FabricsimError(f"-r {args.root}: give a rank number or all") from None
            if not 0 <= roots[0] < ranks:
                raise FabricsimError(f"-r {roots[0]}: the root must be one of the {ranks} ranks (0..{ranks - 1})")
    else:
        roots = [0]
    return [(t, o, r) for t in types for o in ops for r in roots]


def _ignored_flags(args, notes: list[str]) -> None:
    why = {"blocking": "a barrier per call adds host time the model does not include",
           "cudagraph": "launch overheads are NCCL's tuning-table latencies either way",
           "report_timestamps": "output stays deterministic", "local_register": "buffer registration (symmetric "
           "kernels) is not modelled", "unalign": "alignment effects are not modelled",
           "parallel_init": "init is not timed", "stream_null": "streams are not modelled"}
    for name, reason in why.items():
        if name in args.given and getattr(args, name):
            notes.append(f"--{name} {getattr(args, name)} ignored: {reason}")


def _json_path(path: str) -> Path:
    """nccl-tests opens -J files exclusively, trying FILE, FILE.0, FILE.1 ... (src/util.cu jsonOutputInit)."""
    base = Path(path)
    candidate, k = base, 0
    while candidate.exists():
        candidate, k = Path(f"{path}.{k}"), k + 1
    if not candidate.resolve().parent.is_dir():
        raise FabricsimError(f"-J {path}: its directory does not exist; create it or choose another path")
    return candidate


def run_binary(binary: str, argv: list[str], environ) -> tuple[str, list[str]]:
    """(stdout, stderr notes) of one emulated nccl-tests binary; '' on MPI ranks other than 0 (as nccl-tests)."""
    from fabricsim import __version__, hardware
    from fabricsim.nccltests.args import parse_args
    from fabricsim.nccltests.env import apply_env
    from fabricsim.nccltests.log import Run, format_json, format_log
    from fabricsim.topology import build, cluster_file
    from fabricsim.tuner.select import NCCL_VERSION

    args = parse_args(argv)
    if args.help:
        return (f"{binary} (simulated by fabricsim): nccl-tests flags -t -g -b -e -i -f -n -m -w -N -p -c -o -d -r -z "
                "-y -T -G -C -S -J -a -R -u; cluster from FABRICSIM_CLUSTER\n"), []
    if (_env_int(environ, _WORLD_RANK, 0) or 0) > 0:
        return "", []
    notes: list[str] = []
    procs = _env_int(environ, _WORLD_SIZE, 1) or 1
    ranks = procs * args.nthreads * args.ngpus
    collective = BINARIES[binary]
    if collective == "sendrecv" and ranks < 2:
        raise FabricsimError("sendrecv_perf needs at least 2 ranks: raise -g or run more processes")
    try:
        spec, first = _cluster(environ, ranks, notes)
    except FabricsimError as err:
        raise FabricsimError(f"{ranks} ranks ({procs} process{'es' * (procs != 1)} x -t {args.nthreads} x -g "
                             f"{args.ngpus}): {err}") from None
    env = apply_env(spec, collective, environ)
    notes += env.notes
    _ignored_flags(args, notes)
    topo = build(env.spec, cluster_file(environ.get("FABRICSIM_CLUSTER", "").strip()))
    gpu = hardware.get_gpu(env.spec.gpu)
    cap = int((gpu.hbm_bytes - (1 << 30)) / (3 if args.check else 2))  # src/common.cu: send + recv (+ expected) + 1 GiB
    maxbytes = min(args.maxbytes, cap)
    size_list = _sizes(replace(args, maxbytes=maxbytes))
    groups = [sweep(topo, collective, size_list, first, dtype=t, redop=o, root=r, algos=env.algos, protos=env.protos,
                    chunk_env=env.chunk_env)
              for t, o, r in _choices(args, collective, ranks, notes)]
    nodes = env.spec.nodes if first is None else -(-first // env.spec.gpus_per_node)  # the nodes the ranks are on
    simulated = (f"# SIMULATED by fabricsim {__version__}: no GPU ran; every figure is a prediction for "
                 f"{env.spec.name} ({ranks} x {gpu.name}, {nodes} node{'s' * (nodes != 1)}) "
                 f"with NCCL {NCCL_VERSION[0]}.{NCCL_VERSION[1]} tuning"
                 + (f"; {' '.join(env.applied)}" if env.applied else ""))
    step = (args.stepfactor, "factor") if args.stepfactor > 1 else (args.stepbytes, "bytes")
    run = Run(binary, (binary, *argv), args.nthreads, args.ngpus, args.minbytes, args.maxbytes, step, args.warmup_iters,
              args.iters, args.agg_iters, args.check, args.cudagraph, args.unalign, ranks, env.spec.gpus_per_node,
              f"{gpu.name} (fabricsim)", NCCL_VERSION[0] * 10000 + NCCL_VERSION[1] * 100, simulated, env.applied,
              bool(args.report_cputime), maxbytes if maxbytes < args.maxbytes else 0)
    json_note = None
    if args.output_file:
        path = _json_path(args.output_file)
        try:
            path.write_text(format_json(run, groups))
        except OSError as err:
            raise FabricsimError(f"cannot write -J {path}: {err.strerror}") from None
        json_note = f"# Writing JSON output to {path}"
    return format_log(run, collective, groups, json_note), notes


@click.group("nccl-tests")
def nccl_tests() -> None:
    """nccl-tests binaries without GPUs: `fabricsim nccl-tests all_reduce_perf -b 8 -e 8G -f 2 -g 8`."""


def _binary_command(binary: str) -> click.Command:
    @click.command(binary, context_settings={"ignore_unknown_options": True, "help_option_names": []},
                   add_help_option=False)
    @click.argument("argv", nargs=-1, type=click.UNPROCESSED)
    def command(argv):
        text, notes = run_binary(binary, list(argv), os.environ)
        for note in notes:
            click.echo(f"fabricsim {binary}: {note}", err=True)
        click.echo(text, nl=False)

    command.help = f"Simulated {binary}: nccl-tests flags, FABRICSIM_CLUSTER, NCCL_* environment."
    return command


for _name in BINARIES:
    nccl_tests.add_command(_binary_command(_name))


@nccl_tests.command("install")
@click.argument("directory", type=click.Path(file_okay=False))
def install(directory: str) -> None:
    """Write the bare nccl-tests names (all_reduce_perf, ...) into DIRECTORY, an opt-in you then put on PATH."""
    target = Path(directory)
    if not target.is_dir():
        raise FabricsimError(f"{directory} is not a directory: create it first (it should not hold a real "
                             "nccl-tests build)")
    for binary in BINARIES:
        path = target / binary
        if path.exists() and _SHIM_MARK not in path.read_text(errors="replace")[:400]:
            raise FabricsimError(f"{path} exists and is not a fabricsim shim (a real nccl-tests binary?): choose "
                                 "another directory")
        path.write_text(f"#!{sys.executable}\n{_SHIM_MARK}: SIMULATED {binary}, no GPU runs "
                        "(written by `fabricsim nccl-tests install`)\n"
                        f"import sys\nfrom fabricsim.cli.nccltests import shim_main\nsys.exit(shim_main({binary!r}))\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    click.echo(f"wrote {', '.join(BINARIES)} to {target}; they print simulated figures (put {target} on PATH "
               "to use them)")


def shim_main(binary: str) -> int:
    """Entry of an installed shim: the bare name behaves as `fabricsim nccl-tests NAME ...`."""
    from fabricsim.cli.main import main

    return main(["nccl-tests", binary, *sys.argv[1:]])

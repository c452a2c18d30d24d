"""The jobs file: several jobs on one cluster, each with its GPUs, its communication and its start time.

    cluster: superpod-h100        # a preset or a cluster YAML file (a path relative to this file)
    gpus: 1024                    # sizes a preset (or nodes: 128)
    placement: packed             # default policy: packed | scattered | random
    seed: 0                       # for random placement
    jobs:
      - name: pretrain
        gpus: 512                 # placed by the policy (or ranks: "0-511" / a list of GPU ranks)
        train: {model: llama3-8b, tp: 8}
        iterations: 2             # training steps
      - name: allreduce
        gpus: 256
        start: 5ms
        collective: all_reduce    # a collective loop: collective, size, iterations, compute gap between them
        size: 1G
        iterations: 20
        gap: 1ms

Read with `fabricsim.inputs` into frozen dataclasses whose annotations carry every range; `fabricsim schema jobs`
prints the JSON Schema. Sizes take K/M/G suffixes, times s/ms/us/ns (or a number of seconds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from msgspec import Meta, Struct

from fabricsim import inputs
from fabricsim.errors import FabricsimError
from fabricsim.units import parse_duration, parse_size
from fabricsim.vocab import COLLECTIVES

Policy = Literal["packed", "scattered", "random"]
POLICIES = get_args(Policy)
MAX_JOBS = 4096  # jobs in one file: far beyond any shared cluster's queue at once, and what keeps a run to seconds
MAX_ITERATIONS = 1_000_000  # per job; every iteration is an event of the simulation
Duration = Annotated[float | str, Meta(description="seconds, or a number with s, ms, us or ns: 5ms")]
Count = Annotated[int, Meta(ge=1, le=1 << 21)]


class TrainJob(Struct, forbid_unknown_fields=True, frozen=True):
    """A training job's step: the model and its layout, as `fabricsim train` takes them (unset: Megatron's default)."""

    model: Annotated[str, Meta(min_length=1, description="built-in model name or a model YAML file")]
    tp: Count | None = None
    pp: Count | None = None
    dp: Count | None = None
    ep: Count | None = None
    etp: Count | None = None
    cp: Count | None = None
    vp: Count | None = None
    zero: Annotated[int, Meta(ge=0, le=3)] | None = None
    sp: bool | None = None
    seq: Count | None = None
    global_batch: Count | None = None
    micro_batch: Count | None = None
    precision: str | None = None
    recompute: str | None = None
    efficiency: Annotated[float, Meta(ge=0.01, le=1.0)] | None = None


class JobSpec(Struct, forbid_unknown_fields=True, frozen=True):
    """One job: its GPUs (a count placed by a policy, or explicit ranks), what it communicates, when it starts."""

    name: Annotated[str, Meta(min_length=1, max_length=64, description="the job's name in reports")]
    gpus: Count | None = None
    ranks: Annotated[str | list[int], Meta(description="explicit GPU ranks: '0-255,512-767' or a list")] | None = None
    placement: Policy | None = None
    seed: Annotated[int, Meta(ge=0)] | None = None
    start: Duration = 0.0
    iterations: Annotated[int, Meta(ge=1, le=MAX_ITERATIONS, description="loop iterations, or training steps")] = 1
    collective: Annotated[str, Meta(description="a collective loop: " + ", ".join(COLLECTIVES))] | None = None
    size: Annotated[int | str, Meta(description="the collective's nccl-tests size: 1G, 64M")] | None = None
    gap: Duration = 0.0
    algo: str | None = None
    proto: str | None = None
    train: TrainJob | None = None

    def __post_init__(self) -> None:
        if (self.collective is None) == (self.train is None):
            raise FabricsimError(f"job '{self.name}': give either collective (with size) or train (with model)")
        if self.collective is not None:
            if self.collective not in COLLECTIVES:
                raise FabricsimError(f"job '{self.name}': unknown collective '{self.collective}': use one of "
                                     f"{', '.join(COLLECTIVES)}")
            if self.size is None:
                raise FabricsimError(f"job '{self.name}': a collective loop needs size (e.g. size: 1G)")
            try:
                nbytes = parse_size(self.size)
            except FabricsimError as err:
                raise FabricsimError(f"job '{self.name}': {err}") from None
            if nbytes == 0:  # NCCL returns at once for a count of 0: the loop would move nothing
                raise FabricsimError(f"job '{self.name}': size {self.size!r} moves nothing: give a message size, "
                                     "e.g. size: 1G")
        elif self.size is not None or self.algo is not None or self.proto is not None or self.gap not in (0, 0.0):
            raise FabricsimError(f"job '{self.name}': size, algo, proto and gap belong to a collective loop; a training "
                                 "job's communication comes from its model and layout")
        for field in ("start", "gap"):
            try:
                parse_duration(getattr(self, field))
            except FabricsimError as err:
                raise FabricsimError(f"job '{self.name}': {field}: {err}") from None
        if (self.gpus is None) == (self.ranks is None):
            raise FabricsimError(f"job '{self.name}': give gpus (a count to place) or ranks (explicit GPU ranks), "
                                 "one of them")
        if self.ranks is not None and self.placement is not None:
            raise FabricsimError(f"job '{self.name}': explicit ranks are placed as given: drop placement")


class JobsFile(Struct, forbid_unknown_fields=True, frozen=True):
    """Several jobs on one cluster."""

    cluster: Annotated[str, Meta(min_length=1, description="preset name or cluster YAML file")]
    jobs: list[JobSpec]
    nodes: Count | None = None
    gpus: Count | None = None
    routing: Literal["ecmp", "adaptive"] | None = None
    level: Literal["flow", "analytical"] = "flow"
    placement: Policy = "packed"
    seed: Annotated[int, Meta(ge=0)] = 0

    def __post_init__(self) -> None:
        if not 1 <= len(self.jobs) <= MAX_JOBS:
            raise FabricsimError(f"jobs lists {len(self.jobs)} jobs: give 1 to {MAX_JOBS:,}")
        names = [j.name for j in self.jobs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise FabricsimError(f"job name '{twice[0]}' is used twice: give every job its own name")


HINT = " (`fabricsim schema jobs` prints every field)"


def load_jobs(path: str | Path) -> JobsFile:
    """A jobs file; a cluster given as a relative path is found beside it. Every problem is one FabricsimError
    naming the file, the field and the fix."""
    path = Path(path)
    data = inputs.parse_yaml(inputs.read_text(path, "jobs file"), str(path))
    spec = inputs.convert(data, JobsFile, str(path), HINT)
    beside = path.parent / spec.cluster
    if spec.cluster.endswith((".yaml", ".yml")) and not Path(spec.cluster).is_absolute() and beside.is_file():
        import msgspec

        spec = msgspec.structs.replace(spec, cluster=str(beside))
    return spec


def jobs_from(data: dict, where: str = "jobs") -> JobsFile:
    """A jobs file from plain data (a mapping as YAML would give)."""
    return inputs.convert(data, JobsFile, where, HINT)

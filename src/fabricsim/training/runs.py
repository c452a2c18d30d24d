"""A training sweep as the CLI and the API ask for it: options (from the command line or a YAML run file) ->
baseline and interconnect variants over the GPU counts -> results, refusals, scaling walls, what gets exposed,
and warnings.

A run file is a YAML mapping of the `train` options by name (`tp: 8`, `tp_overlap: true`, `recompute:
"mla_up_proj,moe_act"`, `gpus: [8192, 16384]`, `compare: [sharp]`, ...); options given on the command line win.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fabricsim import inputs
from fabricsim.errors import FabricsimError, option
from fabricsim.training import parallel as P
from fabricsim.training.efficiency import family
from fabricsim.training.models import ModelSpec, load_model
from fabricsim.training.step import StepResult
from fabricsim.training.stragglers import WhatIf, adjuster
from fabricsim.training.sweep import Exposure, Refused, Wall, explain_wall, scaling_runs, scaling_wall
from fabricsim.training.variants import VARIANTS

WHATIF = "what-if"  # the label of the runs with faults or jitter
DEFAULT_STEPS = 200  # jittered steps drawn per GPU count

LAYOUT_SIZES = ("tp", "pp", "dp", "ep", "cp", "vp", "etp")
# run-file / option name -> Parallelism field (the ones whose names differ)
FIELD_OF = {"sp": "sequence_parallel"}
SETTINGS = tuple(f.name for f in fields(P.Parallelism) if f.name not in LAYOUT_SIZES and f.name != "allow_tp_spill")
OPTIONS = ("model", "cluster", "gpus", "seq", "efficiency", "search", "compare", *LAYOUT_SIZES, "sp",
           *(s for s in SETTINGS if s != "sequence_parallel"))
# What `train` runs unless told otherwise: Megatron-Core's recommended settings as Megatron-Bridge's recipes set them
# (distributed optimizer, sequence parallelism and TE userbuffers TP overlap with TP, overlapped DP collectives).
DEFAULTS: dict[str, Any] = {"micro_batch": 1, "global_batch": 0, "precision": "bf16", "recompute": "selective", "zero": 1,
                            "tp_overlap": True}


@dataclass
class Sweep:
    """The runs of one `train` invocation, per variant label ('baseline' first)."""

    model: str
    cluster: str
    runs: dict[str, list[StepResult | Refused]]
    walls: dict[str, Wall]
    exposures: dict[str, list[Exposure]]
    failed: dict[str, str] = field(default_factory=dict)  # variant -> why none of its counts could run
    warnings: list[str] = field(default_factory=list)
    whatif: WhatIf | None = None  # what the faults and jitter did (the WHATIF label's runs)

    def title(self, label: str = "baseline") -> str:
        return f"{self.model} on {self.cluster}" + ("" if label == "baseline" else f" with {variant_name(label, self.whatif)}")


def _guessed(names: list[str]) -> str:
    """Unknown option names, each with the option it is closest to ('tp_overlp (did you mean tp_overlap?)')."""
    out = []
    for name in names:
        close = inputs.closest(name, OPTIONS)
        out.append(f"{name} (did you mean {close}?)" if close else name)
    return ", ".join(out)


def variant_name(label: str, whatif: WhatIf | None) -> str:
    """What a label changes, in words: an interconnect variant, or the faults and jitter."""
    return whatif.text if label == WHATIF and whatif is not None else VARIANTS[label][0]


def load_run_file(path: str | Path) -> dict[str, Any]:
    """The options of a YAML run file (see the module docstring); an unknown name or a malformed file is one
    FabricsimError naming the file and the fix."""
    p = Path(path)
    data = inputs.parse_yaml(inputs.read_text(p, "run file"), str(p))
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise FabricsimError(f"{p}: a run file must be a mapping of option names to values, e.g. 'tp: 8'")
    options = {k.replace("-", "_"): v for k, v in data.items()}
    if len(options) < len(data):  # 'global-batch' and 'global_batch' name one option
        same = next([a, b] for a in data for b in data if a < b and a.replace("-", "_") == b.replace("-", "_"))
        raise FabricsimError(f"{p}: '{same[0]}' and '{same[1]}' name the same option: keep one")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise FabricsimError(f"{p}: unknown option(s) {_guessed(unknown)}: use some of {', '.join(OPTIONS)}")
    if isinstance(options.get("gpus"), str):
        options["gpus"] = [int(x) for x in options["gpus"].split(",") if x.strip().isdigit()] or options["gpus"]
    if isinstance(options.get("compare"), str):
        options["compare"] = [options["compare"]]
    return options


def _check_types(options: dict[str, Any]) -> None:
    """Each option is of its Parallelism field's type (bool, int, float or str)."""
    kinds = {f.name: f.type for f in fields(P.Parallelism)}
    for key, value in options.items():
        kind = str(kinds.get(FIELD_OF.get(key, key), ""))
        if value is None:
            continue
        if kind.startswith("bool") and not isinstance(value, bool):
            raise FabricsimError(f"option '{key}' must be true or false, got {value!r}")
        if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise FabricsimError(f"option '{key}' must be a whole number, got {value!r}")
        if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise FabricsimError(f"option '{key}' must be a number, got {value!r}")
        if kind == "str" and not isinstance(value, str):
            raise FabricsimError(f"option '{key}' must be text, got {value!r}")


def layout_request(options: dict[str, Any], search: bool = False) -> tuple[P.Parallelism | None, dict[str, Any]]:
    """(template, defaults) from `train` options by name (None: unset): layout sizes given fix a template layout
    (dp filled in per GPU count), else Megatron's default layout is chosen per count from `defaults`, the other
    settings over DEFAULTS; with `search` the sizes given only fix those sizes of the search."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise FabricsimError(f"unknown training option(s) {_guessed(unknown)}: use some of {', '.join(OPTIONS)}")
    _check_types(options)
    given = {k: v for k, v in options.items() if v is not None}
    sizes = {k: given.pop(k) for k in LAYOUT_SIZES if k in given}
    settings = dict(DEFAULTS)
    settings.update({FIELD_OF.get(k, k): v for k, v in given.items()})
    if "recompute" in settings:
        P.check_recompute(settings["recompute"])
    if search and "dp" in sizes:
        raise FabricsimError(f"{option('search')} chooses TP and PP and gives DP what is left: drop {option('dp')} "
                             f"(or drop {option('search')})")
    template = P.Parallelism(**sizes, **settings) if sizes and not search else None
    defaults = {k: v for k, v in settings.items() if not (k == "global_batch" and v == 0)}
    if search:
        defaults.update(sizes)
    return template, defaults


MOE_SETTINGS = ("dispatcher", "capacity_factor", "moe_imbalance", "ep_overlap")  # how tokens reach the experts


def _dense_ignores(model: ModelSpec, options: dict[str, Any]) -> None:
    """Refuse mixture-of-experts settings for a dense model, whose step they would not change (ep / etp are
    checked with the layout, parallel.validate)."""
    default = {f.name: f.default for f in fields(P.Parallelism)}
    given = [k for k in MOE_SETTINGS if options.get(k) is not None and options[k] != default[k]]
    if given and not model.is_moe:
        said = " ".join(option(k) if isinstance(options[k], bool) else option(k, options[k]) for k in given)
        one = len(given) == 1
        raise FabricsimError(f"{said}: {'it sets' if one else 'they set'} how tokens reach a mixture-of-experts "
                             f"model's experts, and {model.name} is dense: drop {'it' if one else 'them'}")


def train_sweep(model: str | Path | ModelSpec, cluster, counts: Sequence[int], *, search: bool = False,
                compare: Iterable[str] = (), efficiency: float | None = None, seq: int | None = None,
                comm_factory: Callable | None = None, progress: Callable[[int, int], None] | None = None,
                faults=None, jitter: float | None = None, steps: int | None = None, seed: int | None = None,
                **options: Any) -> Sweep:
    """Run `model` on `cluster` at each GPU count, and on each `compare` variant; `options` are layout sizes (tp, pp,
    dp, ep, cp, vp, etp: given ones fix that size, the rest are chosen per count) and `Parallelism` settings (sp,
    zero, micro_batch, global_batch, precision, recompute, tp_overlap, dp_overlap, ...), None meaning the default.
    A layout given explicitly is timed even when its memory estimate exceeds HBM, with a warning. `faults` (a
    `topology.Faults`: slow GPUs, slow or failed links) and `jitter` (lognormal sigma of per-GPU, per-step compute,
    over `steps` steps drawn with `seed`) add the WHATIF runs: each count with them (`training.stragglers`)."""
    spec_model = model if isinstance(model, ModelSpec) else load_model(str(model))
    if seq is not None:
        if seq < 1:
            raise FabricsimError(f"{option('seq', seq)}: the sequence length must be at least 1")
        spec_model = replace(spec_model, seq=seq)
    if efficiency is not None and not 0.01 <= efficiency <= 1:
        raise FabricsimError(f"{option('efficiency', efficiency)} must be between 0.01 and 1, a fraction of peak "
                             "compute")
    variants = list(dict.fromkeys(compare))
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise FabricsimError(f"unknown {option('compare')} variant {', '.join(bad)}: use some of {', '.join(VARIANTS)}")
    template, defaults = layout_request(options, search)
    _dense_ignores(spec_model, options)
    if options.get("fp8_param_gather") and options.get("precision") in (None, "bf16"):  # step.py gathers BF16 then
        raise FabricsimError(f"{option('fp8_param_gather')} gathers the weights in FP8, and a BF16 run has no FP8 "
                             f"weights: give {option('precision', 'fp8')} (or another FP8 / FP4 precision), or drop "
                             f"{option('fp8_param_gather')}")
    explicit = template is not None
    name = cluster if isinstance(cluster, str) else getattr(cluster, "name", "cluster")
    if steps is not None and not jitter:
        raise FabricsimError(f"{option('steps')} counts the jittered steps drawn: give {option('jitter')} too, or drop "
                             f"{option('steps')}")
    if jitter is not None and not (math.isfinite(jitter) and jitter > 0):
        raise FabricsimError(f"{option('jitter', jitter)}: the lognormal sigma must be a positive number (e.g. 0.05); "
                             f"leave {option('jitter')} out for no jitter")
    cluster, faults = _healthy(cluster, faults)
    whatif = None
    if faults or jitter:
        what = [faults.text()] if faults else []
        what += [f"compute jitter sigma {jitter:g}"] if jitter else []
        whatif = WhatIf("; ".join(what), {}, {})
    labels = ["baseline", *variants, *([WHATIF] if whatif is not None else [])]
    total, done = len(set(counts)) * len(labels), [0]

    def comm(topo):
        from fabricsim.training.comm import engine_comm_model

        if progress is not None:
            progress(done[0], total)
        done[0] += 1
        return (comm_factory or engine_comm_model)(topo)

    sweep = Sweep(spec_model.name, name, {}, {}, {}, whatif=whatif)
    for label in labels:
        extra: dict[str, Any] = {}
        if label == WHATIF:
            extra = {"faults": faults, "adjust": adjuster(spec_model, efficiency, whatif, jitter,
                                                          DEFAULT_STEPS if steps is None else steps, seed or 0)}
        runs = scaling_runs(spec_model, cluster, counts, template, efficiency=efficiency, comm_factory=comm,
                            search=search, variant=None if label in ("baseline", WHATIF) else label,
                            allow_over_hbm=explicit, **extra, **defaults)
        if all(isinstance(r, Refused) for r in runs):
            reasons = list(dict.fromkeys(r.reason for r in runs))
            why = reasons[0] if len(reasons) == 1 else "; ".join(f"{r.n_gpus} GPUs: {r.reason}" for r in runs)
            if label in ("baseline", WHATIF):  # nothing ran, or the faults / jitter asked for ran nowhere: one error
                raise FabricsimError(why)
            sweep.failed[label] = why
        sweep.runs[label] = runs
        sweep.walls[label] = scaling_wall(runs)
        sweep.exposures[label] = explain_wall(runs)
    if progress is not None:
        progress(total, total)
    ran = {r.n_gpus for res in sweep.runs.values() for r in res if isinstance(r, StepResult)}
    sweep.warnings = (_warnings(sweep, efficiency) + _resized(cluster, [n for n in counts if n in ran])
                      + (whatif.notes if whatif is not None else []))
    return sweep


def _resized(cluster, counts: Sequence[int]) -> list[str]:
    """Where the sweep sized a cluster file (or spec) to GPU counts other than its own (`counts`: those that ran): a
    preset is sized by design, a file says its node count, so running other counts on a resized copy is said."""
    from fabricsim import topology

    if isinstance(cluster, str) and cluster in topology.PRESETS:
        return []
    spec = topology.load_spec(cluster) if isinstance(cluster, (str, Path)) else cluster
    own = int(spec.nodes) * int(spec.gpus_per_node)
    other = [n for n in counts if n != own]
    if not other:
        return []
    return [f"{spec.name} has {own} GPUs ({spec.nodes} node{'s' * (spec.nodes != 1)} of {spec.gpus_per_node}); train "
            f"sets its node count to fit each GPU count, so {', '.join(map(str, other))} GPUs ran on a resized copy"]


def _healthy(cluster, faults):
    """(the cluster without its own faults, every fault to run as the what-if): a cluster file's or spec's faults
    section joins the given faults, so the baseline is the healthy cluster."""
    from fabricsim import topology
    from fabricsim.topology.faults import NO_FAULTS

    if isinstance(cluster, str) and cluster in topology.PRESETS:
        return cluster, faults
    spec = topology.load_spec(cluster) if isinstance(cluster, (str, Path)) else cluster
    own = getattr(spec, "faults", None)
    if not own:
        return cluster, faults
    return replace(spec, faults=NO_FAULTS), own.plus(faults) if faults else own


def _warnings(sweep: Sweep, efficiency: float | None) -> list[str]:
    from fabricsim.hardware import get_gpu

    out, seen = [], set()
    for label, runs in sweep.runs.items():
        for r in runs:
            if not isinstance(r, StepResult):
                continue
            gpu = get_gpu(r.gpu) if r.gpu else None
            if efficiency is None and gpu is not None and family(gpu) == "other" and gpu.name not in seen:
                seen.add(gpu.name)
                out.append(f"no published training efficiency for {gpu.arch} GPUs ({gpu.name}): using Hopper's kernel "
                           "figures and framework factor, the documented default of training.efficiency; pass "
                           "--efficiency to set the fraction of peak")
            if r.over_hbm:
                where = "" if label == "baseline" else f" ({label})"
                out.append(f"{r.n_gpus} GPUs{where}: {r.layout} needs about {r.memory.total / 1e9:.1f} GB per GPU, over the "
                           f"{r.hbm_bytes / 1e9:.0f} GB of HBM ({r.memory.text()}); timed because the layout was given, "
                           "but it would not fit: raise pp/tp, use --zero 2 or 3, more --recompute, or a smaller --micro-batch")
    return out

"""nccl-tests' command line, as its binaries take it (getopt_long in src/common.cu, nccl-tests 2.17):
short options with the value attached or separate (`-b8`, `-b 8`), long ones with `=` or separate.

Options and defaults (the binaries' usage text): -t nthreads 1, -g ngpus 1, -b minbytes 32M, -e maxbytes 32M,
-i stepbytes 1M, -f stepfactor 1 (off), -n iters 20, -m agg_iters 1, -w warmup_iters 1, -N run_cycles 1,
-p parallel_init 0, -c check 1, -o op sum, -d datatype float, -r root 0, -z blocking 0, -y stream_null 0,
-T timeout, -G cudagraph 0, -C report_cputime 0, -S report_timestamps 0, -J output_file, -a average 1,
-R local_register 0, -u unalign 0, -x cta_policy, -M memory_report 0, -h help.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricsim.errors import FabricsimError
from fabricsim.units import c_integer, parse_size

# (short, long): every option takes a value
_OPTIONS = [
    ("t", "nthreads"), ("g", "ngpus"), ("b", "minbytes"), ("e", "maxbytes"), ("i", "stepbytes"), ("f", "stepfactor"),
    ("n", "iters"), ("m", "agg_iters"), ("w", "warmup_iters"), ("N", "run_cycles"), ("p", "parallel_init"),
    ("c", "check"), ("o", "op"), ("d", "datatype"), ("r", "root"), ("z", "blocking"), ("y", "stream_null"),
    ("T", "timeout"), ("G", "cudagraph"), ("C", "report_cputime"), ("S", "report_timestamps"), ("J", "output_file"),
    ("a", "average"), ("R", "local_register"), ("u", "unalign"), ("x", "cta_policy"), ("M", "memory_report"),
]
_LONG = {long: short for short, long in _OPTIONS}
_SHORT = {short for short, _ in _OPTIONS}


@dataclass(frozen=True)
class Args:
    """The parsed command line; values as nccl-tests holds them (sizes in bytes)."""

    nthreads: int = 1
    ngpus: int = 1
    minbytes: int = 32 << 20
    maxbytes: int = 32 << 20
    stepbytes: int = 1 << 20
    stepfactor: int = 1
    iters: int = 20
    agg_iters: int = 1
    warmup_iters: int = 1
    run_cycles: int = 1
    parallel_init: int = 0
    check: int = 1
    op: str = "sum"
    datatype: str = "float"
    root: str = "0"
    blocking: int = 0
    stream_null: int = 0
    cudagraph: int = 0
    report_cputime: int = 0
    report_timestamps: int = 0
    output_file: str = ""
    average: int = 1
    local_register: int = 0
    unalign: int = 0
    help: bool = False
    given: tuple[str, ...] = field(default_factory=tuple)  # long names of the options given


def _int(name: str, text: str) -> int:
    """An integer option as nccl-tests reads it (strtol, base 0: '010' is 8)."""
    n = c_integer(text)
    if n is None:
        raise FabricsimError(f"option --{name} '{text}' is not an integer: give a number, e.g. --{name} 1")
    return n


def _size(name: str, text: str) -> int:
    try:
        return parse_size(text)
    except FabricsimError:
        raise FabricsimError(f"option --{name} '{text}' is not a size: give bytes with an optional K/M/G suffix, "
                             "e.g. 8, 64K, 8G") from None


def parse_args(argv: list[str]) -> Args:
    """nccl-tests flags -> Args; an unknown option or a missing value is one FabricsimError."""
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok in ("-h", "--help"):
            values["help"] = "1"
            continue
        if tok.startswith("--"):
            name, eq, val = tok[2:].partition("=")
            if name not in _LONG:
                raise FabricsimError(f"unknown option '{tok}': nccl-tests takes "
                                     f"{', '.join('--' + n for n in _LONG)}")
        elif tok.startswith("-") and len(tok) >= 2 and tok[1] in _SHORT:
            name, val, eq = {s: n for s, n in _OPTIONS}[tok[1]], tok[2:], "=" if len(tok) > 2 else ""
        else:
            raise FabricsimError(f"unknown option or argument '{tok}': nccl-tests takes options only, e.g. "
                                 "-b 8 -e 8G -f 2 -g 8")
        if not eq:
            if i >= len(argv):
                raise FabricsimError(f"option '{tok}' needs a value, e.g. {tok} 1")
            val = argv[i]
            i += 1
        values[name] = val
    return _build(values)


def _build(v: dict[str, str]) -> Args:
    sizes = {k: _size(k, v[k]) for k in ("minbytes", "maxbytes", "stepbytes") if k in v}
    ints = {k: _int(k, v[k]) for k in ("nthreads", "ngpus", "stepfactor", "iters", "agg_iters", "warmup_iters",
                                         "run_cycles", "parallel_init", "check", "blocking", "stream_null",
                                         "cudagraph", "report_cputime", "report_timestamps", "average",
                                         "local_register", "unalign") if k in v}
    texts = {k: v[k] for k in ("op", "datatype", "root", "output_file") if k in v}
    args = Args(**sizes, **ints, **texts, help="help" in v,
                given=tuple(k for k in v if k not in ("help", "timeout", "cta_policy", "memory_report")))
    for name in ("nthreads", "ngpus"):
        if getattr(args, name) < 1:
            raise FabricsimError(f"--{name} {getattr(args, name)}: give at least 1")
    if args.minbytes > args.maxbytes:
        # nccl-tests' own message (src/common.cu): invalid sizes for 'minbytes' and 'maxbytes'
        raise FabricsimError(f"invalid sizes for 'minbytes' and 'maxbytes': {args.minbytes} > {args.maxbytes}")
    return args

"""Code a user would write against the public API; `mypy` (pyproject's [tool.mypy]) type-checks it with the
package. Not a test module: nothing here runs under pytest."""

from __future__ import annotations

import fabricsim as fs


def busbw_by_size(name: str, gpus: int) -> dict[int, float]:
    c: fs.Cluster = fs.cluster(name, gpus=gpus)
    result: fs.PerfResult = fs.perf(c, "all_reduce", fs.sizes("1M", "1G", factor=32), algo="ring,tree")
    return {row.size_bytes: row.busbw for row in result.rows}


def explained(result: fs.PerfResult) -> list[str]:
    return [f"{e.size_bytes}: {e.fabricsim_pick} vs {e.nccl_pick}" for e in result.explain()]


def log_error(log: str, cluster: fs.Cluster) -> float:
    scored: fs.CompareResult = fs.compare(log, cluster, placement="in", cost_model="nccl")
    return scored.summary.median_abs_pct


def tokens(model: str) -> list[float]:
    trained: fs.TrainResult = fs.train(model, "dgx-h100", [8, 16], tp=8)
    return [r.tokens_per_s for r in trained.ran("baseline")]


def records(result: fs.PerfResult) -> int:
    return len(result.to_records()) + len(result.to_pandas().index)


def progress(done: int, total: int) -> None:
    print(f"{done}/{total}")


def with_progress() -> fs.PerfResult:
    try:
        return fs.perf("dgx-h100", "all_gather", ["8M", 1 << 30], progress=progress)
    except fs.FabricsimError as err:
        raise SystemExit(str(err)) from None


def named_causes(log: str) -> list[str]:
    d = fs.doctor(log, fs.cluster("dgx-h100", gpus=4), env={"NCCL_P2P_DISABLE": "1"}, threshold=25.0)
    return [f"{r.range.lo}-{r.range.hi}: {c.title}" for r in d.short for c in r.causes] + [d.text()]

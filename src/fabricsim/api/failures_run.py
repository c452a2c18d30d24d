"""`fs.failures`: a collective timed with more and more of a cluster's parts failed (`FailuresResult`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim.api.clusters import Cluster, as_cluster
from fabricsim.api.common import Progress, dataframe, names

if TYPE_CHECKING:
    import pandas

    from fabricsim.reports.failures import Row as FailuresRow
    from fabricsim.topology import ClusterSpec, Topology


@dataclass(frozen=True, eq=False)
class FailuresResult:
    """A failures sweep (`failures`): per count of failed elements, every seed's draw (`rows`: median and worst busbw,
    the worst draw's bottleneck and what it failed)."""

    cluster: Cluster
    collective: str
    nbytes: int
    what: str
    seeds: int
    size: int  # elements of `what` the cluster has (physical cables for a link class)
    rows: tuple[FailuresRow, ...]

    def title(self) -> str:
        from fabricsim.reports.failures import title

        topo = self.cluster.topology
        return title(self.cluster.name, self.cluster.n_gpus, self.collective, self.nbytes, self.what, self.seeds,
                     topo.features.get("routing") if topo.features.get("fabric") else None)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per count (SI units), with every draw."""
        from fabricsim.reports.failures import records

        return records(self.rows, self.rows[0].median if self.rows[0].failed == 0 else 0.0)

    def to_pandas(self) -> pandas.DataFrame:
        """The records as a DataFrame, without the per-draw lists (needs the `fabricsim[pandas]` extra)."""
        return dataframe([{k: v for k, v in r.items() if k != "draws"} for r in self.to_records()])

    def table(self) -> str:
        """The sweep as `fabricsim whatif failures` prints it."""
        from fabricsim.reports.failures import format_table

        return format_table(self.rows, self.title(), self.what)

    def figure(self) -> Any:
        """busbw against the number failed: a matplotlib Figure (needs `fabricsim[plot]`)."""
        from fabricsim.reports.failures import figure

        return figure(self.rows, self.title(), self.what, self.size)

    def __repr__(self) -> str:
        counts = [r.failed for r in self.rows]
        return (f"FailuresResult({self.collective} on {self.cluster.name}, {self.what} failed {counts[0]}..{counts[-1]}, "
                f"median busbw {self.rows[0].median / 1e9:.1f} -> {self.rows[-1].median / 1e9:.1f} GB/s)")


def failures(cluster: Cluster | str | Path | ClusterSpec, collective: str, size: int | str, *,
             fail_counts: str | Iterable[int] = "0..4", what: str = "spines", seeds: int = 5,
             algo: str | Sequence[str] | None = None, proto: str | Sequence[str] | None = None, level: str | None = None,
             progress: Progress | None = None) -> FailuresResult:
    """`collective` at `size` on `cluster` with each count of `fail_counts` ('0..8', or a list) of `what` (spines,
    leaves, cores, nics, nvswitches, or cables: nic-links, spine-links, core-links, links, nvlinks) failed, each count
    drawn with `seeds` seeds (`random:K:what`), timed as `perf` times it."""
    import numpy as np

    from fabricsim.errors import FabricsimError, option
    from fabricsim.reports import failures as F
    from fabricsim.reports.sweep import check_options, least_bytes, predict
    from fabricsim.units import parse_size

    c = as_cluster(cluster)
    level_run = check_options(collective, c.n_gpus, dtype="float", redop="sum", root=0, level=level,
                              cost_model="fabricsim", library="nccl")
    nbytes = parse_size(size)
    smallest, one = least_bytes(collective, "float", c.n_gpus)
    if nbytes < smallest:  # a count of 0: nothing moves, so no failure can change it
        raise FabricsimError(f"{option('size', size)}: {collective} on {c.n_gpus} GPUs moves nothing below "
                             f"{smallest:,} bytes ({one}): give a larger size, e.g. {option('size', '1G')}")
    counts = F.parse_counts(fail_counts if isinstance(fail_counts, str) else ",".join(str(k) for k in fail_counts))
    algos, protos = names(algo, "algo", collective), names(proto, "proto", collective)

    def timer(topo: Topology) -> tuple[float, str, Any]:
        point = predict(topo, c.ranks, collective, [nbytes], algos=algos, protos=protos, level=level_run or "flow")[0]
        return point.row.busbw, f"{point.row.algo}/{point.row.proto}", point.pick.result

    rows = F.sweep(c.topology, np.asarray(c.ranks), collective, nbytes, counts, what, seeds, timer, progress)
    return FailuresResult(c, collective, nbytes, what, seeds, F.class_size(c.topology, what), tuple(rows))

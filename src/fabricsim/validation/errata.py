"""Calibration figures recorded wrongly, corrected from the raw output of the row's own source.

A row's figure is corrected only where the source it cites prints the right figure beside the wrong one (a
summary table that labels algbw as busbw above the raw nccl-tests tables it summarises), never to move a row
towards a prediction. Each entry is keyed by row id, with the corrected busbw and where the source prints it; the
accuracy table marks the row `corrected` and prints the reason, and the calibration file stays as shipped.
"""

from __future__ import annotations

_AUTODL = "github:Anthony-Hoo/Anthony-Hoo.github.io en/posts/AutoDL_Multi-GPU_Interconnection_Test.md"

# row id -> (busbw in GB/s as the source's raw table prints it, why the row's own figure is not busbw)
CORRECTED_BUSBW: dict[str, tuple[float, str]] = {
    "coll-autodl-2080ti-all_gather-peak": (3.84, (
        f"{_AUTODL}: the summary table's 'busbw' 7.69 is the 1 GiB in-place algbw of the post's raw all_gather_perf "
        "table, whose busbw column peaks at 3.84 (algbw x (n-1)/n on 2 GPUs)")),
    "coll-autodl-2080ti-alltoall-peak": (4.73, (
        f"{_AUTODL}: the summary table's 'busbw' 9.45 is the 1 GiB in-place algbw of the post's raw alltoall_perf "
        "table, whose busbw column peaks at 4.73 (algbw x (n-1)/n on 2 GPUs)")),
}


def corrected_busbw(row_id: str) -> tuple[float, str] | None:
    """(busbw the row's source really prints, why), or None for a row whose figure stands."""
    return CORRECTED_BUSBW.get(row_id)

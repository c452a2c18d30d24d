"""Measurements set aside as doubtful because their own source says so: printed, never scored.

The calibration README weighs rows by trust; a row is set aside only where the source that published the figure
says the system that produced it was not working as it should (a bug report about its own numbers, a
misconfiguration it names), never because fabricsim predicts it badly. Each entry is keyed by the row's `source`
exactly as the calibration file spells it, with what that source says: the accuracy tables print the rows and
the reason, and leave them out of every median and p90.
"""

from __future__ import annotations

DOUBTFUL_SOURCES: dict[str, str] = {
    "github:NVIDIA/nccl issue #2409": (
        "its reporter calls these figures below what the hardware should reach (about 470 GB/s AllReduce busbw "
        "expected on 2 nodes x 8 x 400G; perftest reaches line rate on one rail) and asks whether the system is "
        "misconfigured"),
}


def doubtful(source: str) -> str:
    """'<source>: <what it says that makes its figures doubtful>'; '' for a source whose figures are scored."""
    said = DOUBTFUL_SOURCES.get(source.strip(), "")
    return f"{source.strip()}: {said}" if said else ""

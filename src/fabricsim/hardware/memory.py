"""What a collective's buffers need of a GPU's memory, as nccl-tests allocates them.

nccl-tests 2.19.6 (github:NVIDIA/nccl-tests, commit a0b82b2) allocates, on every GPU, a send and a receive
buffer of maxBytes (-e) each and, with the data check on (-c 1, its default), an expected-result buffer
(src/common.cu AllocateBuffs, lines 1104-1116). Before that it keeps back 1 GiB per 16 GiB of GPU memory (at
most 4 GiB) and 1 GiB more, and reduces maxBytes to what is left divided among those buffers, printing
"Reducing maxBytes to N due to memory limitation" (src/common.cu lines 1536-1546, maxMem = the device's memory).
"""

from __future__ import annotations

from fabricsim.hardware.gpus import GPU

GiB = 1 << 30
RESERVE_PER_16GIB = GiB  # nccl-tests keeps back 1 GiB per 16 GiB installed ...
RESERVE_MAX = 4 * GiB  # ... at most 4 GiB
RESERVE_OTHER = GiB  # and 1 GiB "for the rest"


def nccltests_max_bytes(gpu: GPU, datacheck: bool = True) -> int:
    """The largest message (nccl-tests' -e) whose buffers fit in `gpu`'s HBM, after nccl-tests' reserve.

    The catalog's HBM is the datasheet figure; CUDA reports a little less or more (an 80 GB H100 shows 81,559 MiB),
    so the limit is nccl-tests' to within a few percent."""
    memory = int(gpu.hbm_bytes)
    reserve = min(-(-memory // (16 * GiB)) * RESERVE_PER_16GIB, RESERVE_MAX)
    return max((memory - reserve - RESERVE_OTHER) // (3 if datacheck else 2), 0)


def fit_note(gpu: GPU, maxbytes: int, datacheck: bool = True) -> str | None:
    """None when `maxbytes` fits in `gpu`'s memory as nccl-tests allocates it; else what does not fit and the
    size nccl-tests runs instead (it reduces maxBytes, it does not fail)."""
    limit = nccltests_max_bytes(gpu, datacheck)
    if maxbytes <= limit:
        return None
    buffers = "a send, a receive and a check buffer" if datacheck else "a send and a receive buffer"
    return (f"-e {maxbytes:,} bytes needs {buffers} of that size on every GPU, more than the "
            f"{gpu.hbm_bytes / 1e9:,.0f} GB of HBM on each {gpu.name} holds: as nccl-tests does, fabricsim reduces "
            f"maxBytes to {limit:,} bytes (HBM less nccl-tests' reserve, divided among the buffers; "
            "nccl-tests src/common.cu)")


def over_hbm_note(gpu: GPU, sizes: list[int], datacheck: bool = True) -> str | None:
    """None when every size's buffers fit in `gpu`'s memory as nccl-tests allocates them; else a note saying which
    sizes do not (a prediction for them is of a run nccl-tests would not make: it reduces maxBytes instead)."""
    limit = nccltests_max_bytes(gpu, datacheck)
    over = [s for s in sizes if s > limit]
    if not over:
        return None
    buffers = "a send, a receive and a check buffer" if datacheck else "a send and a receive buffer"
    return (f"{len(over)} size{'s' * (len(over) != 1)} from {over[0]:,} bytes up need {buffers} of that size on every "
            f"GPU, more than the {gpu.hbm_bytes / 1e9:,.0f} GB of HBM on each {gpu.name} holds: nccl-tests would not run "
            f"them (it reduces maxBytes to {limit:,} bytes; nccl-tests src/common.cu)")

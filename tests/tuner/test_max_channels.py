"""NCCL never runs more than MAXCHANNELS (64) channels, even where a node has more NIC rails (an NVL72 domain: 72)."""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim as fs
from fabricsim import schedules
from fabricsim.engine import nccl_constants as K
from fabricsim.tuner.select import best, channel_plan


@pytest.fixture(scope="module")
def nvl72x2():
    return fs.cluster("gb200-nvl72", gpus=144).topology


@pytest.mark.parametrize("algo", ["ring", "tree"])
def test_channels_per_rail_stop_at_maxchannels(nvl72x2, algo):
    ranks = np.arange(144, dtype=np.int32)
    sched, channels = channel_plan(nvl72x2, "all_reduce", algo, ranks, schedules.structure_from_topology(nvl72x2, ranks))
    assert sched <= K.MAXCHANNELS and channels <= K.MAXCHANNELS and channels % sched == 0
    choice = best(nvl72x2, "all_reduce", 64 << 20, ranks=ranks, algos=algo)
    assert choice.channels == K.MAXCHANNELS

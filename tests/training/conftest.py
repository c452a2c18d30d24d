"""Shared fixtures: an analytic alpha-beta CommModel (tests only; product code times comm with the engine)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.engine.result import BUSBW_FACTOR as BUS_FACTOR
from fabricsim.hardware import get_gpu


class AlphaBeta:
    """Ring-style time: latency per rank + bus bytes / bandwidth; groups leaving their domain use the scale-out bandwidth."""

    def __init__(self, domain=8, intra=360e9, inter=40e9, latency=10e-6):
        self.domain, self.intra, self.inter, self.latency = domain, intra, inter, latency
        self.calls = []

    def time(self, collective, groups, nbytes):
        groups = np.asarray(groups)
        self.calls.append((collective, groups.copy(), nbytes))
        n = groups.shape[1]
        cross = bool(np.any(groups // self.domain != groups[:, :1] // self.domain))
        bw = self.inter if cross else self.intra
        return self.latency * n + nbytes * BUS_FACTOR[collective](n) / bw


@pytest.fixture
def comm():
    return AlphaBeta()


@pytest.fixture
def h100():
    return get_gpu("H100")

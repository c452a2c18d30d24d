"""A one-rank communicator is NCCL's local copy: no algorithm, no channel, HBM read and write, nccl-tests' busbw 0."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.hardware import get_gpu
from fabricsim.topology import load_cluster
from fabricsim.tuner import one_rank
from fabricsim.tuner.select import best

GIB = 1 << 30


@pytest.fixture(scope="module")
def h100():
    return load_cluster("dgx-h100")


@pytest.mark.parametrize("collective,factor", [("all_reduce", 0.0), ("all_gather", 0.0), ("reduce_scatter", 0.0),
                                               ("alltoall", 0.0), ("broadcast", 1.0), ("reduce", 1.0)])
def test_one_rank_is_a_copy_through_hbm(h100, collective, factor):
    choice = best(h100, collective, GIB, ranks=np.array([3]))
    hbm = get_gpu("H100-SXM").hbm_bw
    want = one_rank.MEMCPY_LAUNCH_LATENCY + 2 * GIB / hbm
    assert (choice.algorithm, choice.protocol, choice.channels) == ("copy", "none", 0)
    assert choice.result.time == pytest.approx(want)
    assert choice.result.busbw == pytest.approx(factor * GIB / want)
    assert not choice.result.link_bytes.any()


def test_forced_algorithm_does_not_apply_to_one_rank(h100):
    # NCCL copies before it chooses an algorithm (enqueue.cc taskAppend), so NCCL_ALGO changes nothing.
    forced = best(h100, "all_reduce", GIB, ranks=np.array([0]), algos="tree", protos="ll128")
    assert (forced.algorithm, forced.channels) == ("copy", 0)
    assert forced.result.time == best(h100, "all_reduce", GIB, ranks=np.array([0])).result.time


def test_api_and_cli_agree_on_one_rank(capsys):
    res = fs.perf(fs.cluster("dgx-h100", gpus=1), "all_reduce", fs.sizes("1G", "1G"))
    row = res.rows[0]
    assert (row.algo, row.proto, row.channels, row.busbw) == ("copy", "none", 0, 0.0)
    assert row.time_s < 1e-3  # 2 GiB through 3.35 TB/s of HBM: ~0.65 ms, not a ring's 8 us
    assert main(["perf", "all_reduce", "--cluster", "dgx-h100", "--gpus", "1", "-b", "1G", "-e", "1G",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["rows"][0]
    assert (out["algo"], out["proto"], out["channels"]) == ("copy", "none", 0)
    assert out["time_us"] == pytest.approx(row.time_s * 1e6)

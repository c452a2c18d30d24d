"""The emulator's rank count that is neither whole nodes (racks) nor part of one: one error in nccl-tests' terms
(processes x -t x -g), never fabricsim's --nodes / --gpus, which nccl-tests does not take."""

from __future__ import annotations

import pytest

from fabricsim.cli.main import main


@pytest.mark.parametrize("cluster, argv, message", [
    ("dgx-h100", ["-g", "12"], "error: 12 ranks (1 process x -t 1 x -g 12): dgx-h100 has nodes of 8 GPUs: run whole "
     "nodes (ranks = processes x -t x -g, a multiple of 8: 8 or 16), or fewer than 8 ranks on part of one\n"),
    ("gb200-nvl72", ["-g", "100"], "error: 100 ranks (1 process x -t 1 x -g 100): gb200-nvl72 has racks of 72 GPUs: "
     "run whole racks (ranks = processes x -t x -g, a multiple of 72: 72 or 144), or fewer than 72 ranks on part of "
     "one\n"),
])
def test_a_rank_count_of_no_whole_node_is_said_in_nccl_tests_terms(capsys, monkeypatch, cluster, argv, message):
    monkeypatch.setenv("FABRICSIM_CLUSTER", cluster)
    assert main(["nccl-tests", "all_reduce_perf", *argv]) == 2
    err = capsys.readouterr().err
    assert err == message and "--nodes" not in err

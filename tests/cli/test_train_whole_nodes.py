"""`train` refuses a GPU count that is neither whole nodes nor part of one node (12 on 8-GPU nodes would have run
as 8 + 4 without a word), naming the counts that are valid."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_twelve_gpus_on_eight_gpu_nodes_is_one_clear_error(capsys):
    assert main(["train", "--model", "gpt3-5b", "--cluster", "dgx-h100", "--gpus", "12"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: --gpus 12: dgx-h100 has nodes of 8 GPUs and a training job takes whole nodes: use a "
                   "multiple of 8 (8 or 16), or fewer than 8 GPUs for part of one node\n")


def test_among_valid_counts_the_odd_one_is_refused_and_the_rest_run(capsys):
    assert main(["train", "--model", "gpt3-5b", "--cluster", "gb200-nvl72", "--gpus", "8,70,64"]) == 0
    out = capsys.readouterr().out
    assert "70 GPUs cannot run: --gpus 70: gb200-nvl72 has nodes of 4 GPUs" in out and "(68 or 72)" in out
    rows = {line.split()[0]: line for line in out.splitlines()[2:5]}
    assert "cannot run" not in rows["8"] and "cannot run" not in rows["64"]


def test_part_of_one_node_still_runs(capsys):
    assert main(["train", "--model", "gpt3-5b", "--cluster", "dgx-h100", "--gpus", "2,4,8"]) == 0
    assert "cannot run" not in capsys.readouterr().out

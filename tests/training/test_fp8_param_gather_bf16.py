"""--fp8-param-gather on a BF16 run (which has no FP8 weights, so the step gathers BF16 anyway) is one error."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main

TRAIN = ["train", "--model", "gpt3-5b", "-c", "dgx-h100", "--gpus", "8"]


def test_bf16_refuses_it(capsys):
    assert main([*TRAIN, "--fp8-param-gather"]) == 2
    assert capsys.readouterr().err == ("error: --fp8-param-gather gathers the weights in FP8, and a BF16 run has no "
                                       "FP8 weights: give --precision fp8 (or another FP8 / FP4 precision), or drop "
                                       "--fp8-param-gather\n")
    with pytest.raises(fs.FabricsimError, match="^fp8_param_gather gathers the weights in FP8"):
        fs.train("gpt3-5b", "dgx-h100", [8], fp8_param_gather=True)


def test_fp8_and_the_negative_flag_still_run(capsys):
    assert main([*TRAIN, "--fp8-param-gather", "--precision", "fp8"]) == 0
    assert main([*TRAIN, "--no-fp8-param-gather"]) == 0

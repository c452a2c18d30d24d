"""MoE settings (dispatcher, capacity factor, imbalance, EP overlap) on a dense model are one error, not ignored."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main


def test_the_command_refuses_them(capsys):
    assert main(["train", "--model", "gpt3-5b", "-c", "dgx-h100", "--gpus", "8", "--dispatcher", "deepep",
                 "--ep-overlap"]) == 2
    assert capsys.readouterr().err == ("error: --dispatcher deepep --ep-overlap: they set how tokens reach a "
                                       "mixture-of-experts model's experts, and gpt3-5b is dense: drop them\n")


def test_defaults_given_explicitly_are_fine(capsys):
    assert main(["train", "--model", "gpt3-5b", "-c", "dgx-h100", "--gpus", "8", "--dispatcher", "alltoall",
                 "--no-ep-overlap"]) == 0


def test_python_names_the_keyword():
    with pytest.raises(fs.FabricsimError, match=r"^capacity_factor=1.5: it sets how tokens reach"):
        fs.train("gpt3-5b", "dgx-h100", [8], capacity_factor=1.5)

"""A message names an option as its caller wrote it: the command's flag inside `fabricsim`, the keyword from Python."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import option


def test_python_callers_read_keywords(capsys):
    assert option("gpus", 8) == "gpus=8" and option("fail_counts") == "fail_counts"
    assert option("gpus", [8, 64]) == "gpus=[8, 64]" and option("maxbytes", 8, flag="-e") == "maxbytes=8"
    with pytest.raises(fs.FabricsimError, match=r"^maxbytes=8 is smaller than minbytes=64: the sweep runs from "
                                                r"minbytes up to maxbytes$"):
        fs.sizes(64, 8)
    with pytest.raises(fs.FabricsimError, match="nodes=2 gpus=9: .* so gpus must be a positive multiple of 2"):
        fs.cluster("dgx-h100", nodes=2, gpus=9)


def test_the_command_line_reads_flags(capsys):
    assert main(["perf", "all_reduce", "--cluster", "dgx-h100", "-b", "64", "-e", "8"]) == 2
    assert capsys.readouterr().err == "error: -e 8 is smaller than -b 64: the sweep runs from -b up to -e\n"
    assert main(["perf", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--gpus", "9"]) == 2
    assert "--nodes 2 --gpus 9: " in capsys.readouterr().err
    assert option("gpus", 8) == "gpus=8"  # a command that ran leaves Python callers' spelling as it was

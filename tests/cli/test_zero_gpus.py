"""--gpus 0 / --nodes 0 (or below): one error saying a run needs at least one, not 'a positive multiple of 8' (a
preset runs on part of a node too)."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError


@pytest.mark.parametrize("argv, message", [
    (["perf", "all_reduce", "-c", "dgx-h100", "--gpus", "0"], "error: --gpus 0: a run needs at least one GPU: give "
     "--gpus 1 or more (fewer than a node's GPUs run on part of one node)\n"),
    (["topo", "show", "dgx-h100", "--gpus", "-3"], "error: --gpus -3: a run needs at least one GPU: give --gpus 1 or "
     "more (fewer than a node's GPUs run on part of one node)\n"),
    (["perf", "all_reduce", "-c", "dgx-h100", "--nodes", "0"], "error: --nodes 0: a cluster has at least one node: "
     "give --nodes 1 or more\n"),
])
def test_zero_is_one_clear_error(capsys, argv, message):
    assert main(argv) == 2
    assert capsys.readouterr().err == message


def test_python_names_the_keyword():
    with pytest.raises(FabricsimError, match=r"^gpus=0: a run needs at least one GPU: give gpus=1 or more"):
        fs.cluster("dgx-h100", gpus=0)

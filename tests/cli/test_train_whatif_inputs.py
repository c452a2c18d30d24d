"""`train`'s what-if options (--jitter, --fail, --degrade) given a value that cannot run are one error and exit 2, as
on `perf`: never the healthy table with a note in place of the what-if the user asked for."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main

TRAIN = ["train", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8"]


@pytest.mark.parametrize("args,match", [
    (["--jitter", "-0.1"], "--jitter -0.1: the lognormal sigma must be a positive number"),
    (["--jitter", "0"], "--jitter 0.0: the lognormal sigma must be a positive number"),
    (["--jitter", "nan"], "--jitter nan: the lognormal sigma must be a positive number"),
    (["--fail", "node0.gpu3"], "a dead GPU leaves the job"),
])
def test_a_what_if_that_cannot_run_is_one_error(capsys, args, match):
    assert main([*TRAIN, *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and match in err


def test_python_callers_get_the_same_error():
    with pytest.raises(fs.FabricsimError, match=r"^jitter=-0.1: the lognormal sigma must be a positive number"):
        fs.train("llama3-8b", "dgx-h100", [8], jitter=-0.1)

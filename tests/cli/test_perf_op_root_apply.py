"""perf's -o on a collective that does not reduce and -r on one without a root are errors, not ignored; the
nccl-tests emulator still ignores them, as nccl-tests does."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main


@pytest.mark.parametrize("argv, message", [
    (["alltoall", "-o", "max"], "error: -o max: alltoall does not reduce, so no reduction op applies: drop -o (it "
                                "applies to all_reduce, reduce_scatter, reduce)\n"),
    (["all_gather", "-r", "2"], "error: -r 2: all_gather has no root: drop -r (it applies to broadcast, reduce)\n"),
])
def test_an_option_that_does_not_apply_is_an_error(capsys, argv, message):
    assert main(["perf", argv[0], "-c", "dgx-h100", *argv[1:]]) == 2
    assert capsys.readouterr().err == message


def test_where_they_apply_they_run(capsys):
    assert main(["perf", "reduce", "-c", "dgx-h100", "-o", "max", "-r", "3", "-b", "1M", "-e", "1M"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("1048576")][0]
    assert row.split()[3:5] == ["max", "3"]
    with pytest.raises(fs.FabricsimError, match="^op='max': alltoall does not reduce"):
        fs.perf("dgx-h100", "alltoall", "1M", op="max")


def test_the_emulator_ignores_them_as_nccl_tests_does(capsys, monkeypatch):
    monkeypatch.setenv("FABRICSIM_CLUSTER", "dgx-h100")
    assert main(["nccl-tests", "alltoall_perf", "-o", "max", "-b", "1M", "-e", "1M", "-g", "8"]) == 0

"""Options that contradict each other are one error (exit 2) naming both, never a silent pick of one."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_an_nccl_variable_given_two_values_is_refused(capsys):
    code = main(["perf", "all_reduce", "--cluster", "dgx-h100", "--env", "NCCL_BUFFSIZE=4194304",
                 "--env", "NCCL_BUFFSIZE=1048576"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "NCCL_BUFFSIZE=4194304 and NCCL_BUFFSIZE=1048576" in err and "keep one" in err


def test_the_same_value_twice_is_one_setting(capsys):
    code = main(["perf", "all_reduce", "--cluster", "dgx-h100", "-b", "1M", "-e", "1M", "--env", "NCCL_BUFFSIZE=4194304",
                 "--env", "NCCL_BUFFSIZE=4194304"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("# NCCL_BUFFSIZE=4194304: applied") == 1

"""Options that contradict each other are one error (exit 2) naming both, never a silent pick of one."""

from __future__ import annotations

from pathlib import Path

from fabricsim.cli.main import main

DGX_H100_LOG = Path(__file__).resolve().parents[1] / "doctor" / "fixtures" / "dgxh100-4gpu-ar.log"  # 4 ranks


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


def test_doctor_refuses_a_gpu_for_inference_beside_a_given_cluster(capsys):
    assert main(["doctor", str(DGX_H100_LOG), "--cluster", "dgx-h100", "--gpus", "4", "--gpu", "B300"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--gpu B300 names the GPU for inferring the cluster" in err and "drop --gpu" in err

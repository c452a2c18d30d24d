"""A log run on other hardware than the cluster given: `calibrate` refuses it (it would write parameters measured
on other GPUs, or on fewer ranks than the cluster has, as `compare` refuses), `compare` and `doctor` say so on
stderr and go on. Through the console script's entry function."""

import pytest

from tests.cli.test_bad_inputs import fabricsim, one_error, write

SIZES = [(1 << 20) * 4 ** k for k in range(5)]
ROWS = "\n".join(f"  {s:>10} {s // 4:>10}     float     sum      -1   {s / 3.5e3:9.1f}   3.50   3.50      0"
                 f"   {s / 3.5e3:9.1f}   3.50   3.50      0" for s in SIZES)
LOG = f"""# nThread 1 nGpus 2 minBytes 1048576 maxBytes 268435456 step: 4(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid      1 on box device  0 [0x1a] NVIDIA GeForce RTX 4090
#  Rank  1 Group  0 Pid      1 on box device  1 [0xb2] NVIDIA GeForce RTX 4090
#
#                                                     out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
{ROWS}
# Avg bus bandwidth    : 3.5
"""
NOTE = "the log's devices are 'NVIDIA GeForce RTX 4090' (RTX4090) but dgx-h100 has H100 GPUs"


@pytest.fixture
def log(tmp_path):
    return write(tmp_path, "rtx.log", LOG)


def test_calibrate_refuses_fewer_ranks_than_the_cluster_as_compare_does(log, tmp_path):
    args = ("--cluster", "dgx-h100", "--collective", "all_reduce")
    expect = "the log ran on 2 ranks but dgx-h100 has 8 GPUs: use --gpus 2"
    assert one_error(fabricsim("compare", log, *args)) == expect
    assert one_error(fabricsim("calibrate", log, *args, "-o", str(tmp_path / "x.yaml"))) == f"rtx.log: {expect}"


def test_calibrate_refuses_a_log_of_other_gpus(log, tmp_path):
    out = tmp_path / "x.yaml"
    msg = one_error(fabricsim("calibrate", log, "--cluster", "dgx-h100", "--gpus", "2", "--collective", "all_reduce",
                              "-o", str(out)))
    assert msg.startswith(f"rtx.log: {NOTE}: a fit would write H100 parameters") and "give the cluster" in msg
    assert not out.exists()


def test_calibrate_on_the_gpus_the_log_ran(log, tmp_path):
    out = tmp_path / "x.yaml"
    run = fabricsim("calibrate", log, "--cluster", "pcie-rtx4090-8", "--gpus", "2", "--collective", "all_reduce",
                    "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.is_file()


@pytest.mark.parametrize("command", ["compare", "doctor"])
def test_compare_and_doctor_note_other_gpus_and_go_on(log, command):
    run = fabricsim(command, log, "--cluster", "dgx-h100", "--gpus", "2", "--collective", "all_reduce")
    assert run.returncode == 0, run.stderr
    assert f"note: {NOTE}: the prediction is for dgx-h100's GPUs; give the cluster the log ran on\n" in run.stderr
    same = fabricsim(command, log, "--cluster", "pcie-rtx4090-8", "--gpus", "2", "--collective", "all_reduce")
    assert same.returncode == 0, same.stderr
    assert "devices are" not in same.stderr


def test_calibrate_takes_a_gpu_that_differs_only_in_memory(tmp_path):
    """An A100 40 GB log on an A100 80 GB cluster: the same links, so the link efficiencies and latencies calibrate
    fits are the same parts'; compare still notes the other GPU model."""
    a100 = LOG.replace("NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-40GB")
    log = write(tmp_path, "a100.log", a100)
    out = tmp_path / "x.yaml"
    args = ("--cluster", "dgx-a100", "--gpus", "2", "--collective", "all_reduce")
    run = fabricsim("calibrate", log, *args, "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.is_file()
    note = fabricsim("compare", log, *args)
    assert note.returncode == 0 and "the log's devices are 'NVIDIA A100-SXM4-40GB' (A100-40GB)" in note.stderr

"""`compare` says where the log's own #wrong column counts wrong results: the times there are of a run that did not
compute correctly, which a user must know before trusting the comparison."""

from __future__ import annotations

from pathlib import Path

from fabricsim.cli.main import main

LOG = Path(__file__).resolve().parents[1] / "doctor" / "fixtures" / "dgxh100-4gpu-ar.log"  # 4 ranks, #wrong 0
ARGS = ["--cluster", "dgx-h100", "--gpus", "4", "--collective", "all_reduce", "--level", "analytical"]


def test_wrong_results_in_the_log_are_said(tmp_path, capsys):
    bad = tmp_path / "wrong.log"
    bad.write_text(LOG.read_text().replace("368.74      0   4366.8", "368.74     12   4366.8"))
    assert main(["compare", str(bad), *ARGS]) == 0
    err = capsys.readouterr().err
    assert ("note: the log's out-of-place #wrong column is not 0 at 1 size (1 GiB): nccl-tests found wrong results "
            "there") in err
    assert main(["compare", str(bad), *ARGS, "--placement", "in"]) == 0  # the in-place columns were right
    assert "#wrong" not in capsys.readouterr().err
    assert main(["compare", str(LOG), *ARGS]) == 0
    assert "#wrong" not in capsys.readouterr().err

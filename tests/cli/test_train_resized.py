"""`train` on a cluster file at other GPU counts says which counts ran on a resized copy, and names no count that
could not run."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_a_count_that_cannot_run_is_not_said_to_have_run(tmp_path, capsys):
    path = tmp_path / "eight.yaml"
    assert main(["topo", "save", "dgx-h100", "--nodes", "8", "-o", str(path)]) == 0
    capsys.readouterr()
    # Mixtral 8x7B fits no layout of 16 80-GB GPUs; it runs on 64, the file's own count
    assert main(["train", "--model", "mixtral-8x7b", "--cluster", str(path), "--gpus", "16,64"]) == 0
    out, err = capsys.readouterr()
    assert "16 GPUs cannot run" in out and "resized" not in err
    assert main(["train", "--model", "llama3-8b", "--cluster", str(path), "--gpus", "16,64", "--tp", "8"]) == 0
    assert "so 16 GPUs ran on a resized copy" in capsys.readouterr().err

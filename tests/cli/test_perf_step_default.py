"""perf's help and README say the sweep's default step (-f 2), which differs from nccl-tests' own (-i 1M)."""

from __future__ import annotations

from pathlib import Path

from fabricsim.cli.main import main
from fabricsim.reports.nccltests_log import parse_nccl_tests


def test_the_default_step_is_said_and_is_what_runs(capsys):
    assert main(["perf", "--help"]) == 0
    assert "(default 2 without -i; nccl-tests' own default is -i 1M)" in " ".join(capsys.readouterr().out.split())
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "-b", "1M", "-e", "4M"]) == 0
    assert [r.size_bytes for r in parse_nccl_tests(capsys.readouterr().out).rows] == [1 << 20, 2 << 20, 4 << 20]
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    assert "Without `-f` or `-i`, `perf` doubles the size each step (`-f 2`" in readme

"""A size whose nccl-tests buffers exceed the GPUs' HBM: `fabricsim perf` warns and stops there as nccl-tests does;
`fs.perf` times the size it was given and says, in `notes`, that nccl-tests would not run it."""

from __future__ import annotations

import fabricsim as fs
from fabricsim.cli.main import main


def test_python_callers_are_told_which_sizes_do_not_fit():
    r = fs.perf("dgx-h100", "all_reduce", fs.sizes("16G", "64G", factor=2))
    assert [row.size_bytes for row in r.rows] == [16 << 30, 32 << 30, 64 << 30]
    (note,) = r.notes
    assert note.startswith("2 sizes from 34,359,738,368 bytes up need a send, a receive and a check buffer")
    assert "80 GB of HBM on each H100" in note and "nccl-tests would not run them" in note
    assert fs.perf("dgx-h100", "all_reduce", "16G").notes == ()


def test_the_command_line_warns_once_and_stops_the_sweep(capsys):
    assert main(["perf", "all_reduce", "--cluster", "dgx-h100", "-b", "16G", "-e", "64G", "-f", "2"]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("warning: -e 68,719,476,736 bytes needs")
    assert "# Reducing maxBytes to 24877096960 due to memory limitation" in out

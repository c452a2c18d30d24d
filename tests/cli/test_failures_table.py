"""`whatif failures` as a user reads it: no trailing blanks in the table (the README shows it trimmed), and counts
in the singular where there is one."""

from __future__ import annotations

from fabricsim.cli.main import main

SMALL = ["whatif", "failures", "--cluster", "dgx-h100", "--nodes", "2", "--collective", "all_reduce", "--size", "64M",
         "--level", "analytical"]


def test_no_line_of_the_table_ends_in_blanks(capsys):
    assert main([*SMALL, "--what", "nics", "--fail-count", "0..1", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "failed  draws  busbw median" in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_a_single_part_is_named_in_the_singular(capsys):
    assert main([*SMALL, "--what", "leaves", "--fail-count", "0..9"]) == 2
    err = capsys.readouterr().err
    assert "but dgx-h100 has 1 leaf: sweep at most 1" in err  # 16 NICs on one leaf

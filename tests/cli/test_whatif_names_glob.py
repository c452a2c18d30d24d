"""`whatif names CLUSTER PATTERN`: a bare word that matches no whole name says PATTERN is a glob, with the one
that finds it."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_a_bare_word_suggests_the_glob(capsys):
    for extra in ([], ["--links"]):
        assert main(["whatif", "names", "dgx-h100", "nvswitch", *extra]) == 2
        err = capsys.readouterr().err
        assert "(PATTERN is a shell glob over whole names: '*nvswitch*')" in err and len(err.splitlines()) == 1
    assert main(["whatif", "names", "dgx-h100", "*nvswitch*"]) == 0
    assert capsys.readouterr().out == "domain0.nvswitch0\n"


def test_a_glob_that_matches_nothing_suggests_none(capsys):
    assert main(["whatif", "names", "dgx-h100", "spine*"]) == 2
    assert "PATTERN is a shell glob" not in capsys.readouterr().err

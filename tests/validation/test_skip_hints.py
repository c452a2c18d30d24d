"""`fabricsim validate` names, for each row kind it skips, a command that exists and scores that kind."""

from __future__ import annotations

import json
import re

import click

from fabricsim.cli.main import cli, main


def test_skipped_rows_point_at_real_validate_options(tmp_path, capsys):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"row-{kind}", "kind": kind}) + "\n" for kind in ("training", "p2p")))
    assert main(["validate", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    hints = re.findall(r"`fabricsim validate (--[a-z0-9-]+)` scores those", out)
    assert sorted(hints) == ["--p2p", "--training"], out
    validate = cli.get_command(click.Context(cli), "validate")
    real = {opt for p in validate.params for opt in getattr(p, "opts", ())}
    assert set(hints) <= real

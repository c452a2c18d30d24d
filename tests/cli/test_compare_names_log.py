"""A log `compare` cannot parse is one error naming the file, as `doctor` and `calibrate` name it."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError


def test_an_unparsable_log_is_named(tmp_path, capsys):
    log = tmp_path / "run7.log"
    log.write_text("hello\n")
    for command in ("compare", "doctor"):
        assert main([command, str(log), "-c", "dgx-h100"]) == 2
        assert capsys.readouterr().err.startswith("error: run7.log: no nccl-tests data rows found")
    with pytest.raises(FabricsimError, match=r"^run7.log: no nccl-tests data rows"):
        fs.compare(log, "dgx-h100")

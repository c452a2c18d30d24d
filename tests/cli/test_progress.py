"""The progress bar: drawn on stderr only when it is a terminal; nothing imported or printed otherwise."""

from __future__ import annotations

import io
import subprocess
import sys

from fabricsim.cli import progress as P


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(P, "SHOW_AFTER_S", 0.0)
    with P.progress_bar("perf all_reduce") as progress:
        assert progress is not None
        for i in range(1, 4):
            progress(i, 3)
    drawn = term.getvalue()
    assert drawn.startswith("\rperf all_reduce:") and "/3 [" in drawn and drawn.endswith("\r")  # cleared at the end


def test_no_terminal_no_bar(monkeypatch):
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with P.progress_bar("perf") as progress:
        assert progress is None
    assert pipe.getvalue() == ""


def test_a_piped_run_never_imports_tqdm():
    code = ("import sys; from fabricsim.cli.main import main; "
            "main(['perf', 'all_reduce', '-c', 'dgx-h100', '-b', '1K', '-e', '1M', '-f', '4']); "
            "assert 'tqdm' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""

"""The README's Python API example, run exactly as written (from the repository root, as a reader would)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Python API section has one python block"
    return blocks[0]


def test_the_readme_example_runs_and_gives_a_dataframe(monkeypatch, capsys):
    pandas = pytest.importorskip("pandas")
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(readme_example(), "README.md (Python API)", "exec"), namespace)
    assert isinstance(namespace["df"], pandas.DataFrame) and len(namespace["df"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("PerfResult(all_reduce on dgx-h100, 4 GPUs, 3 sizes 1 MiB..1 GiB")

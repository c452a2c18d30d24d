"""Plots are written in the format their file name asks for, byte-identical on every run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fabricsim.cli.main import main
from fabricsim.reports import compare as report
from fabricsim.reports.plotting import plain_number, plot_format, save_figure

# looked for, not imported, when the file is collected: every xdist worker collects every file, one runs it
pytestmark = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed")

LOG = str(Path(__file__).parent / "fixtures" / "v2_17_all_reduce_10n_mpi.log")
MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-", ".svg": b"<?xml"}


def rows():
    return [report.CompareRow(s, s / 300e9, 290e9, s / 310e9, 300e9, 3.3, "ring", "simple", 16)
            for s in (1 << 20, 1 << 24, 1 << 30)]


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_the_suffix_picks_the_format_and_output_is_deterministic(tmp_path, suffix):
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    save_figure(report.figure(rows(), "title"), first)
    save_figure(report.figure(rows(), "title"), second)
    assert first.read_bytes().startswith(MAGIC[suffix.lower()])
    assert first.read_bytes() == second.read_bytes()


def test_compare_plot_pdf_writes_a_pdf(tmp_path, capsys):
    path = tmp_path / "x.pdf"
    assert main(["compare", LOG, "-c", "dgx-h100", "--nodes", "10", "--level", "analytical", "--plot", str(path)]) == 0
    assert path.read_bytes().startswith(b"%PDF-")


@pytest.mark.parametrize("name", ["x.jpeg", "x", "x.png.bak"])
def test_an_unknown_suffix_is_refused_before_any_work(tmp_path, capsys, name):
    assert main(["compare", LOG, "-c", "dgx-h100", "--nodes", "10", "--plot", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert "fabricsim writes .png, .pdf, .svg files" in err and not (tmp_path / name).exists()
    assert main(["train", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--plot",
                 str(tmp_path / name)]) == 2


def test_the_suffix_is_read_in_any_case(tmp_path):
    assert [plot_format(tmp_path / n) for n in ("a.PDF", "b.Svg", "c.png")] == ["pdf", "svg", "png"]


def test_plain_numbers_on_log_axes():
    assert [plain_number(y) for y in (0.05, 200, 1500, 2e6, 3e9)] == ["0.05", "200", "1.5k", "2M", "3G"]


def test_without_matplotlib_the_extra_is_named_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # as where matplotlib is not installed
    assert main(["compare", LOG, "-c", "dgx-h100", "--nodes", "10", "--plot", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr() == ("", "error: plots need matplotlib: pip install 'fabricsim[plot]'\n")

"""A factor sweep that would repeat a size (-b 0, or a factor too small for -b) is one clear error, the same
from every command that sweeps sizes (reports.sweep.sizes holds the rule)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.reports.sweep import sizes
from fabricsim.validation.calibration import sweep_sizes


@pytest.mark.parametrize("lo, hi, factor, needle", [
    (0, 8, None, "every size would be 0 bytes"),
    (0, 8, 2.0, "start at minbytes=1 or more"),
    (1, 4, 1.1, "start at minbytes=10 or more"),
    (1, 8, 1.5, "1 x 1.5 rounds down to 1"),
])
def test_stalled_factor_sweep_is_refused(lo, hi, factor, needle):
    with pytest.raises(FabricsimError, match=needle):
        sizes(lo, hi, factor)


def test_growing_sweeps_still_run():
    assert sizes(0, 0) == [0] and sizes(0, 8, None, 4) == [0, 4, 8]
    assert sizes(2, 9, 1.5) == [2, 3, 4, 6, 9] and sizes(10, 12, 1.1) == [10, 11]
    assert list(sweep_sizes(1 << 20, 8 << 30)) == sizes(1 << 20, 8 << 30, 2.0)
    assert sweep_sizes(8, 64).dtype == np.int64


@pytest.mark.parametrize("argv", [
    ["perf", "all_reduce", "-c", "dgx-h100", "-b", "0", "-e", "8", "-f", "2"],
    ["perf", "all_reduce", "-c", "dgx-h100", "-b", "0"],
    ["nccl-tests", "all_reduce_perf", "-b", "0", "-e", "8", "-f", "2", "-g", "8"],
])
def test_cli_gives_one_line_exit_2(capsys, monkeypatch, argv):
    monkeypatch.setenv("FABRICSIM_CLUSTER", "dgx-h100")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "-b 0 with a factor sweep (-f 2)" in err and "start at -b 1 or more" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1

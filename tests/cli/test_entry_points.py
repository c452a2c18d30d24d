"""The real entry points, `fabricsim` (the console script) and `python -m fabricsim`, in a subprocess: exit status
(0 ok, 1 a failed check, 2 bad input), one-line errors on stderr, notes on stderr, and a lean start-up. Each
behaviour runs at least once through a real entry point; its other cases call the console script's `main()` in
this process (`run` with entry "main": the same status, stdout and stderr, without a second of start-up each)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fabricsim import __version__
from fabricsim.cli.main import main

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)


def console_script() -> str:
    """The installed `fabricsim` script beside this interpreter (a venv's bin, or the scripts directory)."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "fabricsim").exists():
            return str(folder / "fabricsim")
    found = shutil.which("fabricsim")
    assert found, "the fabricsim console script is not installed: pip install -e ."
    return found


ENTRY_POINTS = {"script": [console_script()], "module": [sys.executable, "-m", "fabricsim"]}


def run(entry: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`fabricsim args` through an entry point: "script" or "module" in a subprocess, "main" in this process."""
    if entry == "main":
        return in_process(list(args), env or {})
    return subprocess.run([*ENTRY_POINTS[entry], *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def in_process(args: list[str], env: dict) -> subprocess.CompletedProcess:
    """`main(args)` with `env` set and stdout / stderr captured, as a finished process."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name, value in env.items():
            mp.setenv(name, value)
        status = main(args)
    return subprocess.CompletedProcess(["fabricsim", *args], status, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("entry, flag", [("script", "--version"), ("module", "--version"), ("main", "-V")])
def test_version(entry, flag):
    done = run(entry, flag)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"fabricsim, version {__version__}\n", "")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_broken_schedule_fails_verify_with_exit_1(entry, tmp_path):
    """verify executes every schedule on real data: one that drops its last step gives a wrong result."""
    (tmp_path / "sitecustomize.py").write_text(
        "from dataclasses import replace\n"
        "import fabricsim.schedules as S\n"
        "_build = S.build_schedule\n"
        "S.build_schedule = lambda *a, **k: (lambda s: replace(s, steps=s.steps[:-1]))(_build(*a, **k))\n")
    args = ("verify", "--ranks", "4", "--collective", "all_reduce", "--algo", "ring")
    broken = run(entry, *args, env={"PYTHONPATH": str(tmp_path)})
    assert broken.returncode == 1 and "FAIL" in broken.stdout and broken.stdout.endswith("1 failed\n")
    healthy = run("main", *args)
    assert healthy.returncode == 0 and healthy.stdout.endswith("all passed\n")


@pytest.mark.parametrize("entry, args, needle", [
    ("script", ("perf", "all_reduce", "-c", "no-such-cluster"), "error: unknown cluster 'no-such-cluster'"),
    ("main", ("perf", "all_reduce", "-c", "dgx-h100", "--cost-model", "nccl", "--level", "analytical"),
     "drop --level"),
    ("main", ("validate", "--training", "--p2p"), "give one of them"),
    ("main", ("perf",), "error: Missing argument 'COLLECTIVE'. Choose from: all_reduce,"),
    ("main", ("perf", "all_reduce", "-c", "dgx-h100", "--bogus"), "error: No such option '--bogus'"),
    ("module", ("no-such-command",), "error: No such command 'no-such-command'."),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(entry, args, needle):
    done = run(entry, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and needle in done.stderr and "Traceback" not in done.stderr


def test_usage_error_points_at_the_help():
    done = run("main", "perf", "all_reduce", "-c", "dgx-h100", "-f", "x")
    assert done.stderr == ("error: Invalid value for '-f' / '--stepfactor': 'x' is not a valid float. "
                           "(see 'fabricsim perf --help')\n")


def test_deprecated_model_option_still_works_with_a_note_on_stderr():
    done = run("main", "perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "1G", "--model", "nccl",
               "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["cost_model"] == "nccl"
    assert done.stderr == ("note: --model is deprecated here (train's --model names a model to train): use "
                           "--cost-model nccl\n")


def test_notes_go_to_stderr_and_stdout_stays_machine_readable():
    done = run("script", "perf", "all_gather", "-c", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G", "--algo", "pat",
               "--format", "csv")
    assert done.returncode == 0 and done.stdout.startswith("size_bytes,count,type")
    assert done.stderr.startswith("note: NCCL runs PAT only with one GPU per node")


def test_perf_loads_only_what_it_needs():
    """Every module a perf run on a preset loads (sys.modules at its end: `python -X importtime` misses modules
    loaded by importlib.import_module, as lazy commands and API names are): neither training, validation, plotting,
    YAML nor the progress bar (stderr is not a terminal here); nor another command's API module, the fault resolver
    and the variants (a healthy cluster), the schedule executor, the trace writer, the NCCL environment reader (no
    --env), nor json, hashlib or fractions (the table, an exact key, integer size parsing)."""
    code = ("import contextlib, io, sys\n"
            "from fabricsim.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = main(['perf', 'all_reduce', '-c', 'dgx-h100', '-b', '1M', '-e', '1M'])\n"
            "loaded = sorted(sys.modules)\n"
            "import json\n"
            "print(json.dumps([status, loaded]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    status, modules = json.loads(done.stdout)
    assert status == 0
    imported = set(modules)
    assert {"fabricsim.tuner.select", "fabricsim.cli.perf", "fabricsim.api.perf_run"} <= imported
    unwanted = {m for m in imported if m.split(".")[0] in ("matplotlib", "yaml", "tqdm", "pandas")
                or m.startswith(("fabricsim.training", "fabricsim.validation", "fabricsim.cli.train",
                                 "fabricsim.cli.validate", "fabricsim.cli.compare"))
                or m in ("fabricsim.api.compare_run", "fabricsim.api.train_run", "fabricsim.api.sweep_run",
                         "fabricsim.api.jobs_run", "fabricsim.api.failures_run", "fabricsim.api.calibrate_run",
                         "fabricsim.topology.faulted", "fabricsim.topology.variants", "fabricsim.schedules.execute",
                         "fabricsim.engine.trace", "fabricsim.reports.nccl_env", "json", "hashlib", "fractions")}
    assert not unwanted


def test_the_console_script_collects_once_its_command_is_loaded():
    """`run` (the console script) holds the cyclic collector back while the command's modules load, then freezes what
    they left and turns it on: the command itself runs collected; `main` called from Python leaves the collector
    alone."""
    code = ("import contextlib, gc, io, json, sys\n"
            "import fabricsim.cli.perf as perf\n"
            "seen = []\n"
            "table = perf._table\n"
            "perf._table = lambda *a, **k: seen.append([gc.isenabled(), gc.get_freeze_count()]) or table(*a, **k)\n"
            "from fabricsim.cli.main import main, run\n"
            "args = ['perf', 'all_reduce', '-c', 'dgx-h100', '-b', '1M', '-e', '1M']\n"
            "sys.argv = ['fabricsim', *args]\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(args)\n"
            "    try:\n"
            "        run()\n"
            "    except SystemExit as done:\n"
            "        status = done.code\n"
            "print(json.dumps([status, seen, gc.isenabled()]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    status, ((on_main, frozen_main), (on_run, frozen_run)), enabled = json.loads(done.stdout)
    assert status == 0 and enabled
    assert on_main and frozen_main == 0  # main: the caller's collector as it was
    assert on_run and frozen_run > 10_000  # run: collecting, start-up's objects frozen


def test_the_cli_asks_openblas_for_one_thread_unless_the_user_chose(monkeypatch):
    """Before numpy loads, `main` sets OPENBLAS_NUM_THREADS=1 where it is unset; a user's value stands, and once
    numpy is loaded nothing is set (it would come too late)."""
    from fabricsim.cli.main import one_blas_thread

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    one_blas_thread()  # numpy is loaded in the test process
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_help_lists_every_command():
    done = run("main", "--help")
    assert done.returncode == 0
    for name in ("compare", "perf", "topo", "train", "validate", "verify"):
        assert f"  {name} " in done.stdout


def test_validate_without_calibration_data_names_the_variable(tmp_path):
    done = run("main", "validate", env={"FABRICSIM_CALIBRATION": str(tmp_path / "none.jsonl")})
    assert done.returncode == 2
    assert done.stderr == (f"error: FABRICSIM_CALIBRATION is {tmp_path / 'none.jsonl'}, which does not exist: point it "
                           "at a measurements.jsonl file, or pass --data PATH\n")


def test_require_names_the_fix_when_nothing_is_found(monkeypatch, tmp_path):
    from fabricsim import calibration_data
    from fabricsim.errors import FabricsimError

    monkeypatch.delenv("FABRICSIM_CALIBRATION", raising=False)
    monkeypatch.setattr(calibration_data, "default_path", lambda: tmp_path / "missing.jsonl")
    with pytest.raises(FabricsimError, match=r"set FABRICSIM_CALIBRATION=/path/to/measurements.jsonl or pass --data"):
        calibration_data.require()


def test_a_closed_pipe_ends_quietly():
    script = f"'{console_script()}' perf all_reduce -c dgx-h100 -b 8 -e 8G -f 2 | true; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout == "1\n" and done.stderr == ""  # click's status for a broken pipe, and no traceback


def test_skipped_accuracy_tests_say_why_without_asking(tmp_path):
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(root / "tests" / "validation" / "test_collective_accuracy.py")], cwd=root,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "FABRICSIM_CALIBRATION": str(tmp_path / "none.jsonl")})
    assert done.returncode == 0
    assert "SKIPPED [" in done.stdout and f"calibration data not found at {tmp_path / 'none.jsonl'}" in done.stdout

"""`fabricsim calibrate` / `fs.calibrate`: a known calibration is recovered from a log the model printed with it,
the cluster file written round-trips and predicts with the fitted values, and bad input is one error, exit 2."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import shutil

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_table import format_table
from fabricsim.topology import load_spec, preset_spec, save_cluster
from fabricsim.topology.calibrated import Calibrated, Fitted, LogUsed
from fabricsim.validation.logs import cluster_file
from tests.validation.log_index import FIX

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

TRUTH = {"nvlink_efficiency": 0.62, "launch_latency": 6e-6}
SIZES = fs.sizes("8", "1G", factor=8)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """An 8-GPU H100 node whose NVLink delivers 62% of line rate and whose calls cost 6 us more than NCCL's table:
    its nccl-tests log as fabricsim prints it, and the plain node's cluster file."""
    d = tmp_path_factory.mktemp("synthetic")
    plain = preset_spec("dgx-h100")
    used = LogUsed("truth", "0" * 64, "all_reduce", 8, "made up")
    truth = dataclasses.replace(plain, calibrated=Calibrated(
        **{k: Fitted(v, 0.0, ("truth",), 1) for k, v in TRUTH.items()}, logs=(used,)))
    rows = fs.perf(truth, "all_reduce", SIZES).rows
    (d / "h100.log").write_text(format_table(list(rows), "all_reduce", 8, extra_cols=False))
    save_cluster(plain, d / "h100.yaml")
    return d


@pytest.fixture(scope="module")
def fitted(synthetic):
    return fs.calibrate([synthetic / "h100.log"], synthetic / "h100.yaml")


def test_a_known_calibration_is_recovered_from_its_log(fitted):
    got = fitted.parameters
    assert got["nvlink_efficiency"] == pytest.approx(TRUTH["nvlink_efficiency"], abs=0.01)
    assert got["launch_latency"] == pytest.approx(TRUTH["launch_latency"], abs=0.5e-6)
    assert "net_efficiency" not in got and "net_efficiency" in fitted.fit.not_fitted  # one node: no network
    assert max(abs(r.error_pct("after")) for r in fitted.fit.rows) < 2.0
    assert max(abs(r.error_pct("before")) for r in fitted.fit.rows) > 20.0


def test_the_fit_records_its_provenance_and_prints_its_residuals(fitted, synthetic):
    cal = fitted.spec.calibrated
    (log,) = cal.logs
    import hashlib

    assert log.file == "h100.log" and log.sha256 == hashlib.sha256((synthetic / "h100.log").read_bytes()).hexdigest()
    assert log.gpus == 8 and log.sizes.startswith(f"{len(SIZES)} rows, 8 B .. 1 GiB")
    assert cal.nvlink_efficiency.logs == ("h100.log",) and cal.nvlink_efficiency.rows == len(SIZES)
    text = fitted.text()
    assert "nvlink_efficiency" in text and "not fitted: net_efficiency" in text
    assert text.count("\nh100 ") == len(SIZES)  # one residual line per row
    print("\n" + text)


@pytest.fixture(scope="module")
def cli_written(synthetic, tmp_path_factory):
    """`fabricsim calibrate` run once on the synthetic log: the file it wrote and what it printed (a fit costs ~2 s;
    two tests read this run)."""
    out = tmp_path_factory.mktemp("cli") / "mycluster.yaml"
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        rc = main(["calibrate", str(synthetic / "h100.log"), "--cluster", str(synthetic / "h100.yaml"), "-o", str(out)])
    return rc, out, printed.getvalue()


def test_the_cli_writes_a_cluster_file_perf_then_uses(cli_written, synthetic, capsys):
    rc, out, printed = cli_written
    assert rc == 0
    assert f"wrote {out}" in printed and "launch_latency" in printed
    spec = load_spec(out)
    assert spec.calibrated is not None and spec.to_yaml() == out.read_text()
    assert main(["perf", "--cluster", str(out), "all_reduce", "-b", "1G", "-e", "1G"]) == 0
    calibrated_bw = float(capsys.readouterr().out.split("1073741824")[1].split()[5])
    assert main(["perf", "--cluster", str(synthetic / "h100.yaml"), "all_reduce", "-b", "1G", "-e", "1G"]) == 0
    plain_bw = float(capsys.readouterr().out.split("1073741824")[1].split()[5])
    # bandwidth-bound: algbw scales with the fitted NVLink efficiency over the catalog's (0.62 / 0.824)
    assert calibrated_bw / plain_bw == pytest.approx(spec.calibrated.nvlink_efficiency.value /
                                                     spec.calibrated.nvlink_efficiency.catalog, rel=0.03)


def test_the_same_logs_give_the_same_file_byte_for_byte(cli_written, synthetic, tmp_path):
    """A second run of the same command (the first is cli_written's) writes the same bytes."""
    rc, a, _ = cli_written
    b = tmp_path / "b.yaml"
    assert rc == 0
    assert main(["calibrate", str(synthetic / "h100.log"), "-c", str(synthetic / "h100.yaml"), "-o", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()


def test_a_real_log_excerpt_calibrates_on_its_cluster_file(tmp_path, capsys):
    """The OCI GB200 excerpt (tests/reports/fixtures) on its package cluster file: headerless, so the collective and
    the rank count are given."""
    log = tmp_path / "gb200.log"
    shutil.copy(FIX / "oke_gb200_headerless.log", log)
    out = tmp_path / "gb200.yaml"
    rc = main(["calibrate", str(log), "-c", str(cluster_file("oke-gb200-8gpu-ar")), "--collective", "all_reduce",
               "--gpus", "8", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    spec = load_spec(out)
    assert spec.calibrated.logs[0].file == "gb200.log" and spec.calibrated.nvlink_efficiency is not None
    print("\n" + text)


@pytest.mark.parametrize("args, message", [
    (["calibrate", "{d}/missing.log", "-c", "{d}/h100.yaml", "-o", "{t}/o.yaml"], "cannot read nccl-tests log"),
    (["calibrate", "{d}/h100.log", "-c", "no-such-cluster", "-o", "{t}/o.yaml"], "unknown cluster 'no-such-cluster'"),
    (["calibrate", "{d}/h100.log", "-c", "{d}/h100.yaml", "-o", "{t}/o.txt"], "write the calibrated cluster as a .yaml"),
    (["calibrate", "{t}/garbage.log", "-c", "{d}/h100.yaml", "-o", "{t}/o.yaml"], "garbage.log"),
    (["calibrate", "{t}/rowless.log", "-c", "{d}/h100.yaml", "-o", "{t}/o.yaml"], "rowless.log"),
])
def test_bad_input_is_one_line_and_exit_2(synthetic, tmp_path, capsys, args, message):
    (tmp_path / "garbage.log").write_bytes(b"\xff\xfe not a log")
    shutil.copy(FIX / "malformed_no_rows.log", tmp_path / "rowless.log")
    argv = [a.format(d=synthetic, t=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o.yaml").exists()


def test_nothing_to_fit_is_an_error_naming_the_fix(synthetic):
    """A case with no comparable row (every row skipped) leaves nothing to fit."""
    from fabricsim.fitting.fit import fit
    from fabricsim.fitting.user_logs import read_case

    case, _sha, spec = read_case(synthetic / "h100.log", synthetic / "h100.yaml")
    with pytest.raises(FabricsimError, match="nothing to fit: the logs have no out-of-place rows"):
        fit([dataclasses.replace(case, rows=())], [], spec)


def test_a_log_that_prints_its_nccl_version_is_read_with_it(synthetic, tmp_path):
    """nccl-tests' header line names the NCCL library (nccl-library=22005): the case runs that release's model."""
    from fabricsim.fitting.user_logs import read_case

    log = tmp_path / "versioned.log"
    log.write_text("# nccl-tests version 2.13.9 nccl-headers=22005 nccl-library=22005\n"
                   + (synthetic / "h100.log").read_text())
    case, _sha, _spec = read_case(log, synthetic / "h100.yaml")
    assert case.nccl_version == (2, 20, 5)


def test_missing_scipy_names_the_extra(synthetic, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_scipy(name, *a, **kw):
        if name.startswith("scipy"):
            raise ImportError(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    with pytest.raises(FabricsimError, match=r"pip install 'fabricsim\[calibrate\]'"):
        fs.calibrate([synthetic / "h100.log"], synthetic / "h100.yaml")


def test_nodes_says_how_a_log_without_hosts_ran(tmp_path):
    """A log that prints no hosts, 8 ranks as 4 on each of 2 nodes: `nodes` sizes the preset and picks the ranks;
    a count that does not divide the ranks, or that contradicts the log, is one error naming the fix."""
    from fabricsim.fitting.user_logs import read_case

    rows = fs.perf(fs.cluster("dgx-h100", nodes=2, gpus=8), "all_reduce", ["1M"]).rows
    log = tmp_path / "two.log"
    log.write_text(format_table(list(rows), "all_reduce", 8, extra_cols=False))
    case, _sha, spec = read_case(log, "dgx-h100", gpus=8, nodes=2)
    assert spec.nodes == 2 and case.ranks == (0, 1, 2, 3, 8, 9, 10, 11)
    assert read_case(log, "dgx-h100", gpus=8)[2].nodes == 1  # the log alone: one node's 8 GPUs
    with pytest.raises(FabricsimError, match=r"nodes=3: the run's 8 ranks do not split evenly over 3 nodes"):
        read_case(log, "dgx-h100", gpus=8, nodes=3)
    assert main(["calibrate", str(log), "-c", "dgx-h100", "--gpus", "8", "--nodes", "0", "-o",
                 str(tmp_path / "o.yaml")]) == 2


def test_the_residual_table_prints_whole_log_names(fitted):
    """Two logs whose names share their first 24 characters stay apart in the rows `fabricsim calibrate` prints."""
    from fabricsim.fitting.report import text

    long = [dataclasses.replace(row, log=f"dstack-nebius-h100-16gpu-a{'rg'[i % 2]}") for i, row in enumerate(fitted.fit.rows)]
    printed = text(dataclasses.replace(fitted.fit, rows=tuple(long)))
    assert printed.count("\ndstack-nebius-h100-16gpu-ar ") + printed.count("\ndstack-nebius-h100-16gpu-ag ") == len(long)


def test_a_fit_that_raises_the_median_busbw_error_says_so(fitted):
    """The fit minimises a loss on log(time); where its median busbw error ends higher than the catalog's, the printed
    fit says so (the cluster file is still written: the rows decide)."""
    from fabricsim.fitting.report import text

    assert "worse on this measure" not in text(fitted.fit)  # the synthetic fit recovers its truth
    swapped = [dataclasses.replace(r, before_time_s=r.after_time_s, after_time_s=r.before_time_s) for r in fitted.fit.rows]
    assert "worse on this measure" in text(dataclasses.replace(fitted.fit, rows=tuple(swapped)))

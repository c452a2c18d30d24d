"""Faults through the public API and the CLI: `cluster(faults=...)`, `fail` / `degrade` give new clusters, `perf`
says what its cluster lacks, and `--fail` / `--degrade` / `--seed` on perf and compare."""

from __future__ import annotations

import json

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.topology import Faults


@pytest.fixture(scope="module")
def two():
    return fs.cluster("dgx-h100", nodes=2)


def test_fail_and_degrade_give_new_clusters_and_leave_the_given_one_alone(two):
    down = fs.fail(two, "node1.nic0")
    slow = fs.degrade(down, "node0.gpu3:0.5")
    assert two.faults is None and "faults" not in repr(two)
    assert down.faults.lines == ("fail node1.nic0: node1.nic0 (2 cables down)",)
    assert slow.faults.faults == Faults(fail=("node1.nic0",), degrade=("node0.gpu3:0.5",))
    assert repr(slow).endswith("faults: fail node1.nic0; degrade node0.gpu3:0.5)")
    assert slow.spec.faults == slow.faults.faults and list(slow.ranks) == list(two.ranks)
    same = fs.cluster("dgx-h100", nodes=2, faults={"fail": ["node1.nic0"], "degrade": ["node0.gpu3:0.5"]})
    assert same.faults == slow.faults


def test_perf_on_a_faulted_cluster_says_what_it_lacks(two):
    healthy = fs.perf(two, "all_reduce", "1G", algo="ring")
    slow_nic = fs.perf(fs.degrade(two, "node0.nic0:0.25"), "all_reduce", "1G", algo="ring")
    assert slow_nic.rows[0].busbw < healthy.rows[0].busbw
    assert slow_nic.meta()["faults"] == ["degrade node0.nic0 (x0.25): node0.nic0 (2 cables degraded)"]
    assert healthy.meta()["faults"] is None
    slow_gpu = fs.perf(fs.degrade(two, "node0.gpu3:0.5"), "all_reduce", "1G", algo="ring")
    assert slow_gpu.rows[0].busbw == healthy.rows[0].busbw
    assert any("slow GPU's compute" in n and "`train` charges" in n for n in slow_gpu.notes)


@pytest.mark.parametrize("faults,match", [
    ({"fial": ["spine3"]}, "faults: unknown key 'fial'"),
    ({"degrade": ["spine3"]}, "must read SPEC:FACTOR"),
    ({"fail": ["node9.nic0"]}, "matches no device"),
])
def test_bad_faults_are_one_error(faults, match):
    with pytest.raises(fs.FabricsimError, match=match):
        fs.cluster("dgx-h100", nodes=2, faults=faults)


def test_perf_cli_prints_the_faults_and_their_figure(capsys):
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G", "--algo", "ring",
                 "--fail", "node1.nic0", "--degrade", "node0.nic1:1/2"]) == 0
    out = capsys.readouterr().out
    assert "# faults (2):\n#   fail node1.nic0: node1.nic0 (2 cables down)\n" in out
    assert "#   degrade node0.nic1 (x0.5): node0.nic1 (2 cables degraded)" in out
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G", "--format", "json",
                 "--fail", "random:1:nics", "--seed", "3"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["faults"] == [fs.fail(fs.cluster("dgx-h100", nodes=2), "random:1:nics", seed=3).faults.lines[0]]


@pytest.mark.parametrize("args,match", [
    (["--degrade", "node0.nic1"], "must read SPEC:FACTOR"),
    (["--degrade", "node0.nic1:2"], "at most 1"),
    (["--seed", "3"], "--seed seeds the random"),
    (["--fail", "node0.gpu0"], "a dead GPU leaves the job"),
])
def test_bad_fault_options_are_one_line_and_exit_2(capsys, args, match):
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err

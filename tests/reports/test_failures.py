"""The failures sweep: each count drawn with nested seeds, the busbw of a binding spine layer falling by the share
failed, cut draws reported as such, and `fabricsim whatif failures` / `whatif names` end to end."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.reports.failures import parse_counts
from fabricsim.topology import load_spec

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)


@pytest.fixture(scope="module")
def oversubscribed():
    spec = replace(load_spec("superpod-h100", gpus=512), oversubscription=2.0, routing="adaptive")  # 4 spines bind
    return fs.cluster(spec)


def test_a_binding_spine_layer_loses_the_share_that_failed(oversubscribed):
    result = fs.failures(oversubscribed, "alltoall", "256M", fail_counts="0..2", what="spines", seeds=2)
    healthy = result.rows[0].median
    assert [r.failed for r in result.rows] == [0, 1, 2] and [len(r.draws) for r in result.rows] == [1, 2, 2]
    for r in result.rows[1:]:
        assert r.median / healthy == pytest.approx((4 - r.failed) / 4, rel=0.01)
        assert r.worst.layer_max == pytest.approx(1.0, rel=0.02)  # the spines left run full
        assert "-> spine" in r.worst.bottleneck or "spine" in r.worst.bottleneck.split(" -> ")[0]
    records = result.to_records()
    assert records[1]["change_median_pct"] == pytest.approx(-25, abs=1) and len(records[1]["draws"]) == 2
    assert result.size == 4 and "spines failed, 2 seeds per count" in result.title()


def test_draws_nest_and_cuts_count_as_nothing_moved():
    two = fs.cluster("dgx-h100", nodes=2)
    result = fs.failures(two, "all_reduce", "64M", fail_counts=[0, 1, 2, 16], what="nics", seeds=2)
    one, two_failed, every = result.rows[1], result.rows[2], result.rows[3]
    for seed in range(2):  # the NIC seed s fails first is among the two it fails next
        assert one.draws[seed].failed.split(": ")[1].split(" (")[0] in two_failed.draws[seed].failed
    assert every.cuts == 2 and every.median == 0.0 and "cut the cluster" in every.draws[0].cut
    assert "(2 cut)" in result.table()


@pytest.mark.parametrize("text,counts", [("0..3", [0, 1, 2, 3]), ("4,0,2,2", [0, 2, 4]), ("5", [5])])
def test_fail_counts_read_as_a_range_or_a_list(text, counts):
    assert parse_counts(text) == counts


def test_the_whatif_command_prints_the_sweep_and_plots_it(tmp_path, capsys):
    plot = tmp_path / "failures.png"
    assert main(["whatif", "failures", "-c", "dgx-h100", "--nodes", "4", "--size", "64M", "--what", "nics",
                 "--fail-count", "0..1", "--seeds", "2", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("all_reduce 64 MiB on dgx-h100 (32 GPUs, ecmp routing): nics failed, 2 seeds per count")
    assert "worst draw of each count:\n  1: seed" in out and plot.stat().st_size > 10_000
    assert main(["whatif", "failures", "-c", "dgx-h100", "--nodes", "2", "--size", "64M", "--what", "nics",
                 "--fail-count", "1", "--seeds", "1", "--format", "json", "--degrade", "node0.nic1:0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["of"] == 16 and doc["faults"][0].startswith("degrade node0.nic1") and doc["rows"][0]["failed"] == 1


def test_whatif_names_lists_devices_and_links(capsys):
    assert main(["whatif", "names", "dgx-h100", "--nodes", "2", "node1.nic*"]) == 0
    assert capsys.readouterr().out.split() == [f"node1.nic{i}" for i in range(8)]
    assert main(["whatif", "names", "superpod-h100", "--gpus", "256", "su0.leaf0", "--links"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "su0.leaf0 -> node0.nic0 (ib-ndr)" and out[-1].startswith("su0.leaf0 -> spine3 (ib-ndr) x")


@pytest.mark.parametrize("args,match", [
    (["--fail-count", "a..b"], "must be a range such as 0..8"),
    (["--fail-count", "0..17", "--what", "nics"], "has 16 nics: sweep at most 16"),
    (["--what", "spines"], "has no spines to fail: choose --what among the classes it has (leaves, nics, nvswitches,"),
])
def test_bad_sweeps_are_one_line(capsys, args, match):
    assert main(["whatif", "failures", "-c", "dgx-h100", "--nodes", "2", "--size", "1M", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err


def test_one_spine_down_on_a_1024_gpu_superpod(capsys):
    """The issue's case. superpod-h100 at 1,024 GPUs is non-blocking: all_reduce loads its 16 spines lightly, so one
    spine down changes nothing while the same bytes spread over the 15 left (mean load x 16/15); with the leaves
    2:1 oversubscribed (8 spines) alltoall binds at the spines, and one down costs the lost uplink share, 1/8,
    where adaptive routing spreads over the spines left, the bottleneck a surviving leaf -> spine link."""
    assert main(["whatif", "failures", "-c", "superpod-h100", "--gpus", "1024", "--size", "1G", "--fail-count", "0..1",
                 "--seeds", "1", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[1]["change_median_pct"] == 0.0 and rows[1]["draws"][0]["layer_load_max"] < 1
    healthy_mean, down_mean = (r["draws"][0]["layer_load_mean"] for r in rows)
    assert down_mean == pytest.approx(healthy_mean * 16 / 15, rel=1e-9)  # the same bytes on 15 of the 16 spines

    spec = replace(load_spec("superpod-h100", gpus=1024), oversubscription=2.0, routing="adaptive")
    result = fs.failures(fs.cluster(spec), "alltoall", "64M", fail_counts="0..1", what="spines", seeds=1)
    healthy, down = result.rows
    assert result.size == 8 and healthy.worst.layer_mean == pytest.approx(1.0, abs=0.03)  # the spines bind
    assert down.median / healthy.median == pytest.approx(7 / 8, abs=0.005)
    assert f"{(down.median / healthy.median - 1) * 100:+.1f}%" in result.table()
    failed = down.worst.failed.split(": ")[1].split(" (")[0]  # 'spine5'
    src, _, dst = down.worst.bottleneck.partition(" -> ")
    assert "spine" in src + dst and failed not in (src, dst.split(" (")[0])

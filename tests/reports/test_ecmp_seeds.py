"""ECMP hash seeds: a topology variant per seed, its own routes, and perf's spread over seeds (issue 13 item 4)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.routing import route_pairs
from fabricsim.topology import ClusterSpec, build, load_spec, with_ecmp_seed

# 32 DGX H100 in 4 scalable units of 8 behind 2:1 leaves: an all-to-all's flows share few spine uplinks
SPEC = replace(load_spec("superpod-h100", gpus=512), nodes=32, su_nodes=8, oversubscription=2.0,
               name="superpod-h100-256-2to1")


def test_a_seed_is_a_variant_with_its_own_routes_and_seed_0_is_the_built_one():
    topo = build(SPEC)
    assert topo.features["ecmp_seed"] == 0 and topo.spec.ecmp_seed == 0
    other = with_ecmp_seed(topo, 7)
    assert other.features["ecmp_seed"] == 7 and other.spec.ecmp_seed == 7 and topo.features["ecmp_seed"] == 0
    src = np.arange(0, 256, 8)
    dst = (src + 128) % 256  # node to node across scalable units: through the spines
    a, b, again = route_pairs(topo, src, dst), route_pairs(other, src, dst), route_pairs(build(SPEC), src, dst)
    assert not np.array_equal(a.links, b.links)  # another seed hashes some flows onto other uplinks
    assert np.array_equal(a.links, again.links)  # a seed is deterministic
    assert np.array_equal(with_ecmp_seed(topo, 0).link_capacity, topo.link_capacity)
    for bad in (-1, 2**32, 1.5, "3"):
        with pytest.raises(FabricsimError, match="ECMP seed"):
            with_ecmp_seed(topo, bad)


def test_the_seed_is_a_cluster_field_written_only_when_set():
    assert "ecmp_seed" not in SPEC.fields()
    seeded = replace(SPEC, ecmp_seed=3)
    assert seeded.fields()["ecmp_seed"] == 3
    assert ClusterSpec.from_yaml(seeded.to_yaml()) == seeded
    assert build(seeded).features["ecmp_seed"] == 3


def test_perf_over_seeds_shows_the_spread_and_a_real_row():
    one = fs.perf(SPEC, "alltoall", [64 << 20])
    spread = fs.perf(SPEC, "alltoall", [64 << 20], ecmp_seeds=2)
    s = spread.ecmp[0]
    assert s.seeds == (0, 1) and one.ecmp == ()
    assert s.busbw[0] == pytest.approx(one.rows[0].busbw, rel=1e-12)  # seed 0 is the plain run
    assert s.low < s.high  # collisions differ between seeds here
    assert s.low <= s.mean <= s.high
    row = spread.rows[0]
    assert row.busbw == s.busbw[s.seeds.index(s.row_seed)] == min(s.busbw)  # the (lower) median seed's own row
    assert spread.meta()["ecmp_seeds"] == [0, 1]


def test_seeds_need_a_hashed_fabric_and_fabricsims_simulation():
    adaptive = fs.perf(fs.cluster(SPEC, routing="adaptive"), "all_reduce", [1 << 20], ecmp_seeds=4)
    assert adaptive.ecmp == () and any("no effect (adaptive routing" in n for n in adaptive.notes)
    node = fs.perf("dgx-h100", "all_reduce", [1 << 20], ecmp_seeds=2)
    assert node.ecmp == () and any("no equal-cost paths" in n for n in node.notes)
    pcie = fs.perf(replace(load_spec("dgx-h100"), fabric="none", nics_per_node=0, nic="", nic_gbps=0.0),
                   "all_reduce", [1 << 20], ecmp_seeds=2)
    assert pcie.ecmp == () and any("no scale-out fabric" in n for n in pcie.notes)
    with pytest.raises(FabricsimError, match="NCCL's cost model does not route"):
        fs.perf(SPEC, "all_reduce", [1 << 20], ecmp_seeds=2, cost_model="nccl")
    for bad in (0, 65, 2.0, True):
        with pytest.raises(FabricsimError, match="ecmp_seeds"):
            fs.perf(SPEC, "all_reduce", [1 << 20], ecmp_seeds=bad)


def test_cli_prints_the_spread_table_and_json(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(SPEC.to_yaml())
    args = ["perf", "all_reduce", "--cluster", str(path), "-b", "1M", "-e", "1M", "--ecmp-seeds", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "# busbw (GB/s) over 2 ECMP hash seeds (0-1); the table above shows each size at its median seed" in out
    assert main(args + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ecmp_seeds"] == [0, 1] and doc["ecmp"][0]["size_bytes"] == 1 << 20
    assert len(doc["ecmp"][0]["busbw_GBps"]) == 2
    assert main(args + ["--format", "csv"]) == 2
    assert "CSV cannot hold" in capsys.readouterr().err

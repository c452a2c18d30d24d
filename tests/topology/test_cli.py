"""`fabricsim topo` list / show / save."""

import json

import pytest
from click.testing import CliRunner

from fabricsim.cli.main import main
from fabricsim.cli.topo import topo
from fabricsim.errors import FabricsimError


def test_list():
    out = CliRunner().invoke(topo, ["list"]).output
    assert "gb200-nvl72" in out and "superpod-h100" in out


def test_show_text_is_deterministic():
    a = CliRunner().invoke(topo, ["show", "gb200-nvl72"])
    b = CliRunner().invoke(topo, ["show", "gb200-nvl72"])
    assert a.exit_code == 0 and a.output == b.output
    assert "129.60 TB/s both" in a.output and "32.40 TB/s/dir" in a.output


def test_show_json_and_sizes():
    res = CliRunner().invoke(topo, ["show", "superpod-h100", "--gpus", "512", "--json"])
    data = json.loads(res.output)
    assert data["gpus"] == 512 and data["switches"]["leaf"] == 16


def test_save_then_show(tmp_path):
    path = tmp_path / "c.yaml"
    res = CliRunner().invoke(topo, ["save", "dgx-b200", "-o", str(path), "--nodes", "4"])
    assert res.exit_code == 0 and path.exists()
    shown = json.loads(CliRunner().invoke(topo, ["show", str(path), "--json"]).output)
    assert shown["gpus"] == 32


def test_bad_cluster_raises_fabricsim_error():
    res = CliRunner().invoke(topo, ["show", "nope"])
    assert isinstance(res.exception, FabricsimError) and "unknown cluster 'nope'" in str(res.exception)


def _show(*args) -> dict:
    res = CliRunner().invoke(topo, ["show", *args, "--json"])
    assert res.exit_code == 0
    return json.loads(res.output)


def _alltoall_aggregate(capsys, *args) -> float:
    """What `perf alltoall` moves per direction, summed over GPUs: n x busbw (busbw = per-rank send rate), bytes/s."""
    assert main(["perf", "alltoall", *args, "-b", "1G", "-e", "1G", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"][0]["busbw_GBps"] * 1e9


@pytest.mark.parametrize("args", [("superpod-h100", "--gpus", "256"), ("dgx-h100", "--nodes", "2"), ("pcie-l40s-8",),
                                  ("dgx1-v100",), ("gb200-nvl72",)])
def test_alltoall_aggregate_is_bounded_by_the_fabric(capsys, args):
    """Issue 12 item 5: the all-to-all aggregate was GPUs x scale-up bandwidth (460.8 TB/s/dir on 1,024 H100 next to
    a 25.6 TB/s bisection; 252 GB/s on pcie-l40s-8 next to 22). Now it is an upper bound the fabric allows, no more
    than the bisection does (4 x bisection for an even split) and no less than what `perf alltoall` reaches."""
    s = _show(*args)
    n = s["gpus"]
    assert s["alltoall_bw"] <= 4 * s["bisection_bw"] * (n - 1) / n * (1 + 1e-9)
    assert s["alltoall_bw"] <= n * s["scaleup_bw_per_gpu"] * (1 + 1e-9)
    assert s["alltoall_bound"]
    cluster = ["--cluster", args[0], *args[1:]]
    reached = n * _alltoall_aggregate(capsys, *cluster)
    assert reached <= s["alltoall_bw"] * (1 + 1e-6)
    if s["alltoall_bound"].startswith(("scale-out", "bisection: CPU")):  # NIC- or socket-bound: the bound is reached
        assert reached >= 0.9 * s["alltoall_bw"]
    assert s["domain_bw"] == min(s["gpus_per_domain"], n) * s["scaleup_bw_per_gpu"]  # one domain, labelled as such


def test_alltoall_bounds_name_what_limits_them():
    assert _show("superpod-h100", "--gpus", "1024")["alltoall_bound"] == "scale-out NICs per GPU"
    assert _show("pcie-l40s-8")["alltoall_bound"] == "bisection: CPU socket link"
    s = _show("gb200-nvl72")
    assert s["alltoall_bound"] == "scale-up links per GPU" and s["domain_bw_bidir"] == pytest.approx(129.6e12)
    out = CliRunner().invoke(topo, ["show", "superpod-h100", "--gpus", "1024"]).output
    assert "all-to-all aggregate  51.55 TB/s/dir" in out and "scale-up domain       3.60 TB/s/dir" in out

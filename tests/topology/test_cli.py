"""`fabricsim topo` list / show / save."""

import json

from click.testing import CliRunner

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

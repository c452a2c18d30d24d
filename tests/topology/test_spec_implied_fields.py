"""Cluster-file fields that follow from others: domain_size may be left out wherever the NVLink domain is one node
(it must then equal gpus_per_node), while NVL72-style racks, whose domain spans trays, still say it; NVSwitch chips
without an NVSwitch scale-up are refused, not ignored."""

from __future__ import annotations

import json

from fabricsim.cli.main import main

NODE = """name: my-h100
gpu: H100
nodes: 2
gpus_per_node: 8
scaleup: nvswitch
nvswitch_chips: 4
nics_per_node: 8
nic: cx7
nic_gbps: 400
fabric: infiniband
leaf_switch: qm9700
spine_switch: qm9700
"""


def test_a_server_cluster_needs_no_domain_size(tmp_path, capsys):
    path = tmp_path / "h100.yaml"
    path.write_text(NODE)
    assert main(["topo", "show", str(path)]) == 0
    assert "16 x H100 (2 nodes, 8 GPUs per NVLink domain)" in capsys.readouterr().out
    saved = tmp_path / "saved.yaml"
    assert main(["topo", "save", str(path), "-o", str(saved)]) == 0
    assert "domain_size: 8\n" in saved.read_text()  # the file written says the value in force


def test_an_nvl72_cluster_must_say_its_domain(tmp_path, capsys):
    path = tmp_path / "gb200.yaml"
    path.write_text("name: r\ngpu: GB200\nnodes: 18\ngpus_per_node: 4\nscaleup: nvl72\nnvswitch_chips: 18\n"
                    "host_cpu: grace\n")
    assert main(["topo", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scaleup 'nvl72' needs domain_size" in err and str(path) in err


def test_the_schema_no_longer_requires_it(capsys):
    assert main(["schema", "cluster"]) == 0
    spec = json.loads(capsys.readouterr().out)["$defs"]["ClusterSpec"]
    assert "domain_size" not in spec["required"] and spec["properties"]["domain_size"]["default"] == 0


def test_nvswitch_chips_without_nvswitch_scaleup_is_refused(tmp_path, capsys):
    path = tmp_path / "pcie.yaml"
    path.write_text(NODE.replace("scaleup: nvswitch", "scaleup: pcie"))  # nvswitch_chips: 4 left behind
    assert main(["topo", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nvswitch_chips 4 needs scaleup 'nvswitch' or 'nvl72', but scaleup is 'pcie'" in err

"""A log whose rank count a cluster file lacks gets an edit that builds: on NVL72-style files, whose NVLink domains
hold whole trays, that is nodes and domain_size together."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from fabricsim.cli.main import main

LOG = Path(__file__).resolve().parents[1] / "reports" / "fixtures" / "oke_gb200_concluded_only.log"  # 128 ranks


def test_the_suggested_edit_of_an_nvl72_file_runs_the_log(tmp_path, capsys):
    cluster = tmp_path / "gb200.yaml"
    assert main(["topo", "save", "gb200-nvl72", "--nodes", "36", "-o", str(cluster)]) == 0  # 2 racks, 144 GPUs
    capsys.readouterr()
    assert main(["compare", str(LOG), "--cluster", str(cluster), "--level", "analytical"]) == 2
    err = capsys.readouterr().err
    edits = dict(re.findall(r"(nodes|domain_size): (\d+)", err))
    assert edits == {"nodes": "32", "domain_size": "64"}, err
    spec = yaml.safe_load(cluster.read_text())
    spec.update({k: int(v) for k, v in edits.items()})
    cluster.write_text(yaml.safe_dump(spec))
    assert main(["compare", str(LOG), "--cluster", str(cluster), "--level", "analytical"]) == 0
    assert "vs gb200-nvl72 (128 GPUs)" in capsys.readouterr().out

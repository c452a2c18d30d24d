"""`topo show` of a PCIe-only server says its GPUs are on PCIe, not in an 'NVLink domain' it does not have."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_a_pcie_server_has_no_nvlink_domain(capsys):
    assert main(["topo", "show", "pcie-l40s-8"]) == 0
    out = capsys.readouterr().out
    assert "8 x L40S (1 node, 8 GPUs per node on PCIe, no NVLink)" in out and "NVLink domain" not in out
    assert main(["topo", "show", "dgx1-v100"]) == 0
    assert "8 x V100 (1 node, 8 GPUs per NVLink domain)" in capsys.readouterr().out

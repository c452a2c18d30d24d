"""The port speeds a NIC runs (hardware.nic_speeds), and the error of a cluster whose nic_gbps its NIC does not run:
the NIC's speeds and a catalog NIC that runs the asked speed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.topology import build, preset_spec


def test_a_nic_runs_its_network_rates_up_to_its_own():
    assert hardware.nic_speeds(hardware.get_nic("cx7")) == (100.0, 200.0, 400.0)
    assert hardware.nic_speeds(hardware.get_nic("cx5")) == (100.0,)
    assert hardware.nic_speeds(hardware.get_nic("cx8-eth")) == (100.0, 200.0, 400.0)  # 800 is 2 ports of 400


H100 = replace(preset_spec("dgx-h100"), nodes=2)
ROCE = replace(H100, fabric="roce", nic="cx7-eth", leaf_switch="sn5600", spine_switch="sn5600")


@pytest.mark.parametrize("spec, message", [
    (replace(H100, nic_gbps=800.0), "nic_gbps 800: NIC cx7 runs 100, 200 or 400 Gb/s per port: set nic: cx8 (runs "
                                    "800 Gb/s), or a nic_gbps cx7 runs"),
    (replace(H100, nic_gbps=300.0), "nic_gbps 300: NIC cx7 runs 100, 200 or 400 Gb/s per port, and no catalog "
                                    "infiniband NIC runs 300 Gb/s (their rates: 100, 200, 400, 800): set a nic_gbps cx7 "
                                    "runs"),
    (replace(ROCE, nic="cx5-eth"), "nic_gbps 400: NIC cx5-eth runs 100 Gb/s per port: set nic: cx7-eth (runs 400 "
                                   "Gb/s), or a nic_gbps cx5-eth runs"),
    (replace(ROCE, nic="cx8-eth", nic_gbps=800.0), "nic_gbps 800: NIC cx8-eth runs 100, 200 or 400 Gb/s per port "
                                                   "(nic_gbps is per port): cx8-eth gives 800 Gb/s as 2 ports of 400: "
                                                   "set nic_gbps: 400, nic_ports: 2"),
])
def test_a_speed_the_nic_does_not_run_names_its_speeds_and_a_nic_that_runs_it(spec, message):
    with pytest.raises(FabricsimError) as err:
        build(spec)
    assert str(err.value) == message


def test_a_lower_speed_the_nic_runs_builds():
    assert build(replace(H100, nic_gbps=200.0)).n_gpus == 16


def test_the_cluster_file_error_is_one_line(tmp_path, capsys):
    from fabricsim.cli.main import main
    from fabricsim.topology import save_cluster

    path = tmp_path / "c.yaml"
    save_cluster(replace(H100, nic_gbps=800.0), path)
    assert main(["perf", "all_reduce", "-c", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}: nic_gbps 800: NIC cx7 runs 100, 200 or 400 Gb/s")

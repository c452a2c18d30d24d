"""A domain's NVSwitch chips are one device (`dev_units` chips): failing it takes every chip down, which the
commands say, with the partial-loss fix (--degrade NAME:(n-1)/n, or degrade= from Python); a chip k > 0 is one clear
error saying so."""

from __future__ import annotations

import pytest

from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.topology import Faults, apply_faults, load_cluster

PERF = ["perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G"]


def test_the_report_says_all_chips_go_down():
    report = apply_faults(load_cluster("gb200-nvl72"), Faults(fail=("domain0.nvswitch0",))).features["faults"]
    assert report.notes == ("fail 'domain0.nvswitch0': fabricsim models the 18 NVSwitch chips of an NVLink domain "
                            "as one device, so failing domain0.nvswitch0 takes all 18 chips down and the domain's "
                            "GPUs lose NVLink; to lose one of the 18 chips, degrade it instead: "
                            "degrade='domain0.nvswitch0:17/18'",)  # from Python: the keyword, not the CLI flag
    degraded = apply_faults(load_cluster("gb200-nvl72"), Faults(degrade=("domain0.nvswitch0:17/18",)))
    assert degraded.features["faults"].notes == ()


def test_perf_and_train_say_it(capsys):
    assert main([*PERF, "--fail", "domain0.nvswitch0"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("note: fail 'domain0.nvswitch0': fabricsim models the 4 NVSwitch chips")
    assert "--degrade domain0.nvswitch0:3/4" in err
    assert main(["train", "--model", "gpt3-5b", "--cluster", "dgx-h100", "--gpus", "16", "--fail",
                 "domain1.nvswitch0"]) == 0
    assert "warning: fail 'domain1.nvswitch0': fabricsim models the 4 NVSwitch chips" in capsys.readouterr().err


def test_degrading_one_chip_runs_without_a_note(capsys):
    assert main([*PERF, "--degrade", "domain0.nvswitch0:3/4"]) == 0
    assert "NVSwitch" not in capsys.readouterr().err


def test_a_second_chip_is_one_clear_error(capsys):
    assert main([*PERF, "--fail", "domain0.nvswitch1"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: fail 'domain0.nvswitch1': fabricsim models the 4 NVSwitch chips of an NVLink domain as one "
                   "device, domain0.nvswitch0: to lose one of the 4 chips use --degrade domain0.nvswitch0:3/4; --fail "
                   "domain0.nvswitch0 takes all 4 down\n")
    with pytest.raises(FabricsimError, match=r"use degrade='domain0.nvswitch0:3/4'; fail='domain0.nvswitch0' takes"):
        apply_faults(load_cluster("dgx-h100"), Faults(fail=("domain0.nvswitch1",)))  # from Python: its keywords
    with pytest.raises(FabricsimError, match="matches no device"):  # a domain that does not exist: the usual error
        apply_faults(load_cluster("dgx-h100"), Faults(fail=("domain7.nvswitch1",)))


def test_the_fault_line_says_the_device_is_the_domains_chips():
    topo = apply_faults(load_cluster("dgx-h100", nodes=2), Faults(degrade=("domain*.nvswitch0:3/4",)))
    assert topo.features["faults"].lines == ("degrade domain*.nvswitch0 (x0.75): domain0.nvswitch0, domain1.nvswitch0 "
                                             "(each domain's 4 NVSwitch chips; 16 cables degraded)",)

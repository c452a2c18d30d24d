"""The mission's headline numbers come out of the arrays."""

import pytest

from fabricsim.topology import load_cluster
from fabricsim.topology.summary import summarize
from fabricsim.units import Gbit


def test_pcie5_x16_and_nvlink5_per_gpu():
    s = summarize(load_cluster("dgx-b200"))
    assert s["links"]["pcie5"]["bw"] == pytest.approx(64e9, rel=0.02)  # ~64 GB/s per direction
    assert s["scaleup_bw_per_gpu_bidir"] == pytest.approx(1.8e12)  # 18 x 100 GB/s
    assert s["nvlink_to_pcie"] == pytest.approx(14, rel=0.03)


def test_p100_nvlink_160():
    assert summarize(load_cluster("dgx1-p100"))["scaleup_bw_per_gpu_bidir"] == pytest.approx(160e9)


def test_gb200_nvl72_aggregate_and_bisection():
    s = summarize(load_cluster("gb200-nvl72"))
    assert s["gpus"] == 72
    assert s["alltoall_bw_bidir"] == pytest.approx(129.6e12)
    assert s["bisection_bw"] == pytest.approx(32.4e12)
    assert s["switches"]["nvswitch_chips"] == 18


def test_qm9700_and_xdr_ports():
    s = summarize(load_cluster("dgx-h100", nodes=16))
    qm = s["switch_parts"]["qm9700"]
    assert qm["ports"] == 64 and qm["port_bw"] / Gbit == pytest.approx(400)
    assert qm["aggregate_bw_bidir"] / Gbit == pytest.approx(51.2e3)  # 51.2 Tb/s
    x = summarize(load_cluster("gb300-nvl72"))
    assert x["links"]["ib-xdr"]["bw"] / Gbit == pytest.approx(800)
    assert x["scaleout_bw_per_gpu"] / Gbit == pytest.approx(800)

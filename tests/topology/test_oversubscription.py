"""A cluster's `oversubscription` is each leaf's down:up BANDWIDTH ratio, whatever the NIC and switch port speeds
(the fat-tree plan sizes uplinks by rate, not by port count), within the leaf's radix; one leaf makes it moot."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim import hardware
from fabricsim.engine import time_traffic
from fabricsim.errors import FabricsimError
from fabricsim.multijob.run import run_jobs
from fabricsim.multijob.spec import jobs_from
from fabricsim.reports.jobs import header
from fabricsim.schedules import StepTraffic
from fabricsim.topology import build, preset_spec
from fabricsim.topology.fat_tree import uplinks
from fabricsim.topology.model import DeviceKind
from fabricsim.topology.summary import leaf_down_up, oversubscription, summarize

S = float(256 << 20)


def _leaves(topo):
    """(down links, down bytes/s, uplinks, up bytes/s) of every leaf switch that has NICs."""
    kind, src, dst = topo.dev_kind, topo.link_src, topo.link_dst
    leaf = (kind == DeviceKind.FABRIC_SWITCH) & (topo.dev_level == 1)
    down = (kind[src] == DeviceKind.NIC) & leaf[dst]
    up = leaf[src] & (kind[dst] == DeviceKind.FABRIC_SWITCH)
    n = topo.n_devices
    rows = np.stack([np.bincount(dst[down], topo.link_count[down], n), np.bincount(dst[down], topo.link_capacity[down], n),
                     np.bincount(src[up], topo.link_count[up], n), np.bincount(src[up], topo.link_capacity[up], n)], 1)
    return rows[leaf & (rows[:, 0] > 0)]


def _roce(nodes=64, **kw):
    """The report's RoCE cluster: 4 x 200G NICs per node on Spectrum-4 SN5600 leaves (64 x 800G ports)."""
    base = preset_spec("pcie-rtx4090-8", nodes=nodes)
    return replace(base, nics_per_node=4, **kw)


@pytest.mark.parametrize("o, nodes, down, up", [(1.0, 64, 44, 11), (2.0, 56, 56, 7)])
def test_roce_200g_nics_on_800g_ports_get_the_bandwidth_ratio_set(o, nodes, down, up):
    # 200G down, 800G up: a 1:1 leaf needs a quarter as many uplinks as down ports (at most 48 + 12 of 64 ports,
    # whole nodes of 4 NICs per leaf: 64 nodes need 6 leaves, 11 nodes each, 44 + 11); 2:1 an eighth (56 + 7).
    # Before the fix: 32 + 32 (1:4) and 40 + 20 (1:2).
    rows = _leaves(build(_roce(nodes=nodes, oversubscription=o)))
    assert (rows[0, 0], rows[0, 2]) == (down, up)
    assert rows[0, 1] / rows[0, 3] == pytest.approx(o)
    assert (rows[:, 0] + rows[:, 2] <= hardware.get_switch("sn5600").ports).all()


@pytest.mark.parametrize("gbps, o, up", [(200.0, 1.0, 16), (200.0, 2.0, 8), (200.0, 4.0, 4), (400.0, 2.0, 16)])
def test_superpod_rail_leaf_bandwidth_ratio_is_the_oversubscription(gbps, o, up):
    # a rail leaf of a 32-node SU: 32 NIC links at `gbps` below, `up` NDR 400G uplinks to the spines
    topo = build(replace(preset_spec("superpod-h100", nodes=64), nic_gbps=gbps, oversubscription=o))
    rows = _leaves(topo)
    assert (rows[:, 0] == 32).all() and (rows[:, 2] == up).all()
    assert rows[:, 1] / rows[:, 3] == pytest.approx(np.full(len(rows), o))
    assert leaf_down_up(topo) == pytest.approx(o)


def test_equal_speeds_keep_the_port_rule():
    # NIC speed = port speed: uplinks = ceil(down / o), the reference architectures' counts (32 down, 32 up at 1:1)
    for o, up in ((1.0, 32), (2.0, 16), (3.0, 11)):
        rows = _leaves(build(replace(preset_spec("superpod-h100", nodes=64), oversubscription=o)))
        assert (rows[:, 2] == up).all()
        assert uplinks(32, o, 1.0) == up


@settings(max_examples=25, deadline=None)
@given(gbps=st.sampled_from([100.0, 200.0, 400.0]), o=st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 5.0]),
       nodes=st.integers(17, 96), rail=st.booleans())
def test_every_leaf_is_at_most_as_oversubscribed_as_set_with_the_fewest_uplinks(gbps, o, nodes, rail):
    topo = build(_roce(nodes=nodes, nic="cx7-eth", nic_gbps=gbps, oversubscription=o,
                       rail_optimized=rail))
    rows = _leaves(topo)  # build validated the ports: no leaf holds more links than its radix
    full = rows[np.argmax(rows[:, 0])]  # the fullest leaf sets the uplink count every leaf gets
    per_down, per_up = full[1] / full[0], full[3] / full[2]
    assert full[1] / full[3] <= o * (1 + 1e-9)
    if full[2] > 1:  # one uplink fewer would oversubscribe it past the setting
        assert full[0] * per_down / ((full[2] - 1) * per_up) > o
    assert (rows[:, 0] + rows[:, 2] <= hardware.get_switch("sn5600").ports).all()


def test_mixed_speed_oversubscription_halves_cross_leaf_bandwidth():
    # the report: 200G NICs at 2:1 ran exactly as fast as at 1:1 (their NDR uplinks gave the leaf 1:1 bandwidth).
    # GPU 0 of each node of SU 0 sends to the node 32 further (SU 1): 32 x 25 GB/s over rail 0's 16 (1:1) or 8 (2:1)
    # NDR uplinks. The suite's invariant checks hold on both (no link over its capacity, every byte delivered).
    spec = replace(preset_spec("superpod-h100", nodes=64), nic_gbps=200.0, routing="adaptive")
    src = np.arange(32, dtype=np.int32) * 8
    sent = [time_traffic(build(replace(spec, oversubscription=o)), [StepTraffic(src, src + 256, np.full(32, S))],
                         collective="sendrecv", algorithm="direct", nranks=512, nbytes=S) for o in (1.0, 2.0)]
    assert sent[1].bandwidth_time == pytest.approx(2 * sent[0].bandwidth_time, rel=1e-6)
    assert sent[1].bottlenecks[0].tech == "ib-ndr" and sent[0].bottlenecks[0].tech == "ib-hdr"


def test_a_leaf_too_small_for_its_uplinks_is_one_error_naming_the_fix():
    spec = replace(preset_spec("superpod-h100", nodes=64), oversubscription=0.01)
    with pytest.raises(FabricsimError, match=r"oversubscription 0\.01 needs 100 uplinks for a single 400 Gb/s NIC "
                                             r"port, more than a 64-port leaf holds beside it: use oversubscription "
                                             r">= 0\.0159"):
        build(spec)


def test_one_leaf_makes_oversubscription_moot_and_says_so(tmp_path):
    from fabricsim.cli.topo import render

    spec = _roce(nodes=8, oversubscription=2.0)  # 32 NIC ports: one SN5600 leaf
    topo = build(spec)
    assert leaf_down_up(topo) is None and oversubscription(topo) == 1.0
    assert "2:1 set, no effect: every NIC is on one leaf switch" in render(summarize(topo))
    path = tmp_path / "c.yaml"
    path.write_text(spec.to_yaml())
    jobs = jobs_from({"cluster": str(path), "jobs": [{"name": "a", "gpus": 16, "collective": "all_reduce",
                                                      "size": "1M"}]}, "jobs")
    assert "oversubscribed" not in header(run_jobs(jobs))
    many = build(_roce(nodes=56, oversubscription=2.0))  # 4 leaves of 14 nodes: 56 down, 7 up
    assert oversubscription(many) == pytest.approx(2.0)
    assert "2:1 set; leaves 2:1 down:up bandwidth as built" in render(summarize(many))
    assert "oversubscription" not in render(summarize(build(_roce())))  # a non-blocking cluster reads as before


def test_nodes_spread_evenly_over_the_fewest_leaves():
    # 8 DGX H100 nodes, 8 x 400G NICs each, not rail-optimised, 2:1 on 64-port NDR leaves: a leaf takes at most 5
    # nodes (40 + 20 ports), so two leaves, cabled 4 + 4 (32 down, 16 up each) as a site would, not 5 + 3
    spec = replace(preset_spec("dgx-h100", nodes=8), rail_optimized=False, levels=2, oversubscription=2.0)
    rows = _leaves(build(spec))
    assert rows[:, 0].tolist() == [32, 32] and rows[:, 2].tolist() == [16, 16]
    assert (rows[:, 1] / rows[:, 3] == 2.0).all()

"""Routing on the real topology presets (fabricsim.topology.load_cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.routing import PathKind, path_bandwidth, route_pairs
from fabricsim.topology import load_cluster
from fabricsim.topology.model import DeviceKind

CASES = [("dgx-h100", dict(nodes=4)), ("superpod-h100", dict(gpus=1024)), ("superpod-h100", dict(gpus=16384)),
         ("dgx1-v100", dict(nodes=2)), ("pcie-rtx4090-8", dict(nodes=2)), ("gb200-nvl72", dict(nodes=36))]


def chains_ok(t, s, d, r):
    lens = np.diff(r.path_ptr)
    first = r.links[r.path_ptr[:-1][lens > 0]]
    last = r.links[r.path_ptr[1:][lens > 0] - 1]
    pair = r.path_pair[lens > 0]
    assert np.array_equal(t.link_src[first], t.gpu_device[s[pair]])
    assert np.array_equal(t.link_dst[last], t.gpu_device[d[pair]])
    inner = np.ones(r.links.size, dtype=bool)
    inner[r.path_ptr[1:][lens > 0] - 1] = False
    assert np.array_equal(t.link_dst[r.links[inner]], t.link_src[r.links[np.flatnonzero(inner) + 1]])


@pytest.mark.parametrize("name,size", CASES, ids=[f"{n}-{list(k.values())[0]}" for n, k in CASES])
def test_ring_and_intra_domain_on_presets(name, size):
    t = load_cluster(name, **size)
    s = np.arange(t.n_gpus)
    d = (s + 1) % t.n_gpus
    r = route_pairs(t, s, d)
    chains_ok(t, s, d, r)
    assert np.all(path_bandwidth(t, r) > 0)
    dom = t.gpu_domain
    intra = dom[s] == dom[d]
    r_in = route_pairs(t, s[intra], d[intra])
    kinds = t.dev_kind[np.concatenate([t.link_src[r_in.links], t.link_dst[r_in.links]])]
    assert not np.isin(kinds, [DeviceKind.FABRIC_SWITCH, DeviceKind.NIC]).any()


def test_superpod_h100_nvswitch_and_ndr_bottlenecks():
    t = load_cluster("superpod-h100", gpus=1024)
    r = route_pairs(t, [0, 0, 0], [1, 8, 8 * 40 + 3])
    assert r.path_kind.tolist() == [PathKind.NVLINK, PathKind.NET, PathKind.PXN]
    bw = path_bandwidth(t, r)
    assert bw[0] == pytest.approx(18 * 25e9)  # H100: 18 NVLink 4 links x 25 GB/s per direction
    assert bw[1] == pytest.approx(50e9) and bw[2] == pytest.approx(50e9)  # NDR 400 Gb/s NIC


def test_superpod_16k_pxn_off_crosses_rails_via_spines():
    t = load_cluster("superpod-h100", gpus=16384)
    r = route_pairs(t, [0], [8 + 3], pxn=False)
    assert r.path_kind[0] == PathKind.NET
    assert t.dev_level[t.link_dst[r.path_links(0)]].max() >= 2


def test_gb200_grace_gpudirect_goes_over_c2c():
    t = load_cluster("gb200-nvl72", nodes=36)
    r = route_pairs(t, [0], [t.n_gpus - 4])  # same rail, other rack
    assert r.path_kind[0] == PathKind.NET
    techs = {t.techs[int(k)] for k in t.link_tech[r.path_links(0)]}
    assert "nvlink-c2c" in techs


def test_pcie_preset_host_bounce_without_p2p():
    t = load_cluster("pcie-rtx4090-8")
    r = route_pairs(t, [0], [1])
    assert r.path_kind[0] == (PathKind.PCIE if t.features.get("p2p") else PathKind.HOST)

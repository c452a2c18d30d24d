"""ClusterSpec YAML round trip (spec and topology arrays) and every input error."""

import re
from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.topology import PRESETS, ClusterSpec, build, load_cluster, load_spec, preset_spec, save_cluster
from fabricsim.topology.model import Topology

ARRAYS = [f.name for f in fields(Topology) if f.name.startswith(("dev_", "link_", "gpu_"))]


def _same(a, b):
    assert a.parts == b.parts and a.techs == b.techs and a.features == b.features
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_yaml_round_trip(name, tmp_path):
    spec = preset_spec(name)
    assert ClusterSpec.from_yaml(spec.to_yaml()) == spec
    path = tmp_path / "c.yaml"
    save_cluster(spec, path)
    assert load_spec(str(path)) == spec
    _same(build(spec), load_cluster(str(path)))


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 300), over=st.sampled_from([1.0, 1.5, 2.0, 3.0]), rail=st.booleans(),
       levels=st.sampled_from(["auto", 3]), su=st.sampled_from([16, 20, 32]))
def test_random_fabrics_build_and_round_trip(nodes, over, rail, levels, su):
    spec = replace(preset_spec("dgx-h100"), nodes=nodes, oversubscription=over, rail_optimized=rail,
                   levels=levels, su_nodes=su)
    again = ClusterSpec.from_yaml(spec.to_yaml())
    assert again == spec
    topo = build(again)  # validate(): radix, pairing, connectivity
    assert topo.n_gpus == 8 * nodes


def _err(text_or_call, match):
    with pytest.raises(FabricsimError, match=match):
        text_or_call() if callable(text_or_call) else ClusterSpec.from_yaml(text_or_call)


BASE = preset_spec("dgx-h100").to_yaml()


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ngpu: H100\nnodes: [1, 2\n")
    _err(lambda: load_cluster(str(path)), r"bad\.yaml line \d+: malformed YAML")
    _err("name: x\n  - : :\n", r"line 2")


@pytest.mark.parametrize("edit,match", [
    (("bogus_key", "1"), "unknown key.*bogus_key"),
    (("gpu", "H900"), "unknown GPU 'H900'"),
    (("nic", "cx99"), "unknown NIC 'cx99'"),
    (("leaf_switch", "qm0000"), "unknown switch 'qm0000'"),
    (("nodes", "two"), "field 'nodes' is 'two': it must be a whole number from 1 to 2,097,152"),
    (("nodes", "0"), "field 'nodes' is 0: it must be a whole number from 1"),
    (("nic_gbps", "-400"), "field 'nic_gbps' is -400: it must be a number from 0 to 10,000"),
    (("rail_optimized", "'yes'"), "field 'rail_optimized' is 'yes': it must be true or false"),
    (("scaleup", "torus"), "field 'scaleup' is 'torus': it must be one of 'nvl72', 'nvlink-bridge', 'nvlink-mesh', 'nvswitch', 'pcie'"),
    (("levels", "4"), "field 'levels' is 4: it must be one of 1, 2, 3, 'auto'"),
    (("routing", "random"), "field 'routing' is 'random': it must be one of 'adaptive', 'ecmp'"),
    (("bogus_key", "1"), "unknown key 'bogus_key'.*`fabricsim schema cluster`"),
    (("nodez", "2"), r"unknown key 'nodez' \(did you mean 'nodes'\?\)"),
    (("leaf_switch", "''"), "needs leaf_switch"),
    (("nic", "''"), "needs nic"),
    (("nodes", "1000000000"), "field 'nodes' is 1000000000: it must be a whole number from 1 to 2,097,152"),
    (("nodes", "300000"), "2,400,000 GPUs is more than fabricsim builds"),
])
def test_bad_fields(edit, match):
    key, value = edit
    lines = [ln for ln in BASE.splitlines() if not ln.startswith(key + ":")]
    _err("\n".join(lines + [f"{key}: {value}"]) + "\n", match)


def test_missing_key_and_not_a_mapping():
    _err("name: x\n", "^cluster YAML: missing keys 'gpu', 'nodes', 'gpus_per_node' and 'scaleup': add them ")
    _err(BASE.replace("scaleup: nvswitch\n", ""), "^cluster YAML: missing key 'scaleup': add it ")
    _err("- 1\n- 2\n", "expected a mapping")


@pytest.mark.parametrize("edit, message", [
    ("gpu: L40S\n", "GPU L40S has no NVLink, so scaleup 'nvswitch' has nothing to join its GPUs: set scaleup: pcie and "
                    "nvswitch_chips: 0"),
    ("gpu: P100\n", "no NVSwitch in the catalog has nvlink1 ports \\(P100's NVLink\\): use scaleup 'nvlink-mesh' or "
                    "'pcie' for this GPU"),
])
def test_a_gpu_its_scaleup_cannot_join_is_refused_as_the_file_is_read(tmp_path, edit, message):
    path = tmp_path / "c.yaml"
    path.write_text(BASE.replace("gpu: H100\n", edit))
    _err(lambda: load_spec(path), f"^{re.escape(str(path))}: {message}$")


def test_too_many_links_for_the_ports():
    spec = replace(preset_spec("dgx-h100"), nvswitch_chips=1)  # 8 x 18 links > 64 ports
    _err(lambda: build(spec), r"has 144 links but only 64 ports: set nvswitch_chips to 3 or more \(nvswitch3 has 64 "
                              r"ports\), or give each GPU fewer NVLinks \(nvlinks\)$")
    assert build(replace(spec, nvswitch_chips=3)).n_gpus == 8


def test_disconnected_gpus():
    spec = replace(preset_spec("dgx-h100"), nodes=2, fabric="none")
    _err(lambda: build(spec), "GPU rank 8 .* cannot reach GPU rank 0")


def test_one_level_too_small():
    _err(lambda: build(replace(preset_spec("dgx-h100"), nodes=16, levels=1)), "do not fit one 64-port switch")


def test_too_big_for_three_levels_without_rails():
    _err(lambda: build(replace(preset_spec("dgx-h100"), nodes=16384, rail_optimized=False, levels="auto")),
         "exceed a 3-level fat tree")


def test_non_multiple_gpu_counts():
    _err(lambda: load_cluster("dgx-h100", gpus=12), "12 GPUs is not a multiple of 8 GPUs per node: use 8 or 16")
    _err(lambda: load_cluster("gb200-nvl72", gpus=100), "not a multiple of 72 GPUs per rack")
    _err(lambda: load_cluster("gb200-nvl72", nodes=20), "multiple of the 18 trays")
    _err(lambda: load_cluster("dgx-h100", nodes=2, gpus=16), "not both")


def test_unknown_cluster_lists_presets():
    _err(lambda: load_cluster("dgx-h900"), "unknown cluster 'dgx-h900'.*superpod-h100")
    _err(lambda: load_cluster("missing.yaml"), "does not exist")


def test_nic_speed_and_switch_kind_mismatch():
    _err(lambda: build(replace(preset_spec("dgx-h100"), nodes=2, nic_gbps=800.0)), "NIC cx7 runs 100, 200 or 400 Gb/s per port: set nic: cx8")
    _err(lambda: build(replace(preset_spec("dgx-h100"), nodes=2, fabric="roce", nic="cx7-eth")),
         r"^leaf_switch qm9700 is an 'infiniband' switch but the fabric is 'roce': pick an 'ethernet' switch \(sn5600\)$")


@pytest.mark.parametrize("changes, message", [
    (dict(nic="cx7-eth"), r"^nic cx7-eth is an 'ethernet' NIC but the fabric is 'infiniband': pick an 'infiniband' NIC "
                          r"\(cx5, cx6, cx7, cx8\)$"),
    (dict(fabric="roce", leaf_switch="sn5600", spine_switch="sn5600"),
     r"^nic cx7 is an 'infiniband' NIC but the fabric is 'roce': pick an 'ethernet' NIC \(cx5-eth, "),
    (dict(spine_switch="pcie-switch5"), r"^spine_switch pcie-switch5 is a 'pcie' switch but the fabric is 'infiniband'"),
])
def test_a_part_of_the_other_network_is_refused_as_the_spec_is_made(changes, message):
    _err(lambda: replace(preset_spec("dgx-h100"), nodes=2, **changes), message)


def _changed(topo, field: str, index: int, value):
    """A copy of `topo` with one array entry changed (a built topology's arrays are read-only)."""
    arr = getattr(topo, field).copy()
    arr[index] = value
    return replace(topo, **{field: arr})


@pytest.mark.parametrize("corrupt,match", [
    (lambda t: _changed(t, "link_capacity", 3, 0.0), "capacity 0.0"),
    (lambda t: _changed(t, "link_capacity", 5, -1.0), "capacity -1.0"),
    (lambda t: _changed(t, "link_latency", 2, -1e-6), "latency"),
    (lambda t: _changed(t, "link_dst", 1, 5), "no opposite twin"),
])
def test_validate_rejects_corrupt_arrays(corrupt, match):
    from fabricsim.topology import validate

    topo = corrupt(load_cluster("dgx-h100"))
    _err(lambda: validate(topo), match)


def test_nvls_needs_nvswitch_and_files_must_be_text(tmp_path):
    pcie = BASE.replace("scaleup: nvswitch", "scaleup: pcie").replace("nvswitch_chips: 4", "nvswitch_chips: 0")
    _err(pcie, "nvls: true needs NVSwitch")
    path = tmp_path / "binary.yaml"
    path.write_bytes(bytes(range(128, 256)))
    _err(lambda: ClusterSpec.from_yaml(path), "not UTF-8 text")

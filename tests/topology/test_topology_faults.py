"""Faults: names and patterns resolve to the devices and cables fabricsim prints, counts draw deterministically and
nest, a cluster file's faults section round-trips and refuses bad entries by name, and applied faults remove or
slow exactly what they name."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.topology import ClusterSpec, Faults, apply_faults, build, load_cluster, load_spec
from fabricsim.topology import names as N
from fabricsim.topology.faulted import report_of
from fabricsim.topology.model import DeviceKind


@pytest.fixture(scope="module")
def pod():
    return load_cluster("superpod-h100", gpus=1024)  # 128 nodes, 32 leaves, 16 spines, leaf-spine bundles of 2


@pytest.mark.parametrize("preset", ["superpod-h100", "gb200-nvl72", "dgx1-v100", "pcie-l40s-8"])
def test_device_names_are_the_names_fabricsim_prints(preset):
    topo = load_cluster(preset)
    assert N.device_names(topo) == [topo.device_name(d) for d in range(topo.n_devices)]


def test_names_and_globs_match_the_devices_they_say(pod):
    names = N.device_names(pod)
    assert [names[d] for d in N.match_devices(pod, "node3.nic*")] == [f"node3.nic{i}" for i in range(8)]
    assert N.match_devices(pod, "spine*").size == 16 and N.match_devices(pod, "su?.leaf2").size == 4
    assert [names[d] for d in N.match_devices(pod, "node3")] == [f"node3.gpu{i}" for i in range(8)]
    assert N.match_devices(pod, "su0.leaf2").tolist() == [names.index("su0.leaf2")]
    cable = N.match_links(pod, "node3.nic0 -> su0.leaf*")
    assert cable.size == 1 and pod.link_name(int(cable[0])) == "node3.nic0 -> su0.leaf0 (ib-ndr)"
    assert np.array_equal(N.match_links(pod, "su0.leaf0 -> node3.nic0 (ib-ndr)"), cable)  # either way round
    assert N.match_links(pod, "node3.nic0 -> su0.leaf0 (nvlink*)").size == 0


def test_counts_are_deterministic_nested_and_sized(pod):
    def drawn(k: int, seed: int = 0) -> set[str]:
        return {line for line in report_of(apply_faults(pod, Faults(fail=(f"random:{k}:spines",), seed=seed))).lines}

    three = report_of(apply_faults(pod, Faults(fail=("random:3:spines",), seed=5)))
    four = report_of(apply_faults(pod, Faults(fail=("random:4:spines",), seed=5)))
    assert set(three.failed) < set(four.failed)  # the 3 drawn are among the 4 drawn
    assert three == report_of(apply_faults(pod, Faults(fail=("random:3:spines",), seed=5)))
    assert drawn(3, 5) != drawn(3, 6)
    cables = report_of(apply_faults(pod, Faults(fail=("random:1%:spine-links",), seed=2)))
    assert "10 physical cables" in cables.lines[0]  # 1% of 32 leaves x 16 spines x 2 cables = 10.24
    with pytest.raises(FabricsimError, match="has 16 spines: draw at most that many"):
        apply_faults(pod, Faults(fail=("random:17:spines",)))


def test_a_failed_spine_loses_every_cable_and_nothing_else(pod):
    down = apply_faults(pod, Faults(fail=("spine3",)))
    spine = N.device_names(pod).index("spine3")
    gone = np.setdiff1d(np.arange(pod.n_links), down.link_origin)
    assert set(pod.link_src[gone]) | set(pod.link_dst[gone]) >= {spine}
    assert ((pod.link_src[gone] == spine) | (pod.link_dst[gone] == spine)).all() and gone.size == 2 * 32
    np.testing.assert_array_equal(down.link_capacity, pod.link_capacity[down.link_origin])
    assert down.spec.faults == Faults(fail=("spine3",)) and report_of(pod) is None


def test_one_cable_of_a_bundle_fails_half_of_it_and_a_degrade_scales_it(pod):
    link = int(N.match_links(pod, "su0.leaf0 -> spine1")[0])
    for faults in (Faults(fail=("random:1:spine-links",), seed=0), Faults(degrade=("su0.leaf0 -> spine1:1/2",))):
        v = apply_faults(pod, faults)
        changed = np.flatnonzero(v.link_capacity != pod.link_capacity)
        assert v.n_links == pod.n_links and changed.size == 2 and changed[0] % 2 == 0
        assert v.link_capacity[changed] == pytest.approx(pod.link_capacity[changed] / 2)
    v = apply_faults(pod, Faults(degrade=("su0.leaf0 -> spine1:1/2", "su0.leaf0 -> spine1:0.5")))  # they compose
    assert v.link_capacity[link] == pod.link_capacity[link] / 4 and v.link_capacity[link + 1] == v.link_capacity[link]


def test_a_slow_gpu_keeps_its_links_and_a_slow_nic_slows_its_cables(pod):
    v = apply_faults(pod, Faults(degrade=("node5.gpu3:0.5", "node2.nic1:0.25")))
    report = report_of(v)
    assert report.slow_gpus() == {43: 0.5}
    nic = N.device_names(pod).index("node2.nic1")
    touched = (pod.link_src == nic) | (pod.link_dst == nic)
    np.testing.assert_array_equal(v.link_capacity[touched], pod.link_capacity[touched] * 0.25)
    np.testing.assert_array_equal(v.link_capacity[~touched], pod.link_capacity[~touched])
    assert report.domains == (2,)  # the NIC's PCIe cable lies inside node 2; a slow GPU changes no link


@pytest.mark.parametrize("faults,match", [
    (Faults(fail=("node3.nic9",)), "matches no device of superpod-h100.*names look like"),
    (Faults(fail=("node3.gpu1",)), "a dead GPU leaves the job"),
    (Faults(fail=("node3.nic*",)), r"cut the cluster.*GPU rank 24 \(node3.gpu0\) cannot reach"),
    (Faults(fail=("nodeX -> su0.leaf0",)), "matches no link"),
])
def test_faults_that_cannot_apply_name_the_target(pod, faults, match):
    with pytest.raises(FabricsimError, match=match):
        apply_faults(pod, faults)


def test_no_faults_is_the_topology_itself(pod):
    assert apply_faults(pod, Faults()) is pod


def test_a_cluster_file_faults_section_round_trips_and_builds():
    spec = replace(load_spec("dgx-h100", nodes=2), faults=Faults(fail=("node1.nic0",), degrade=("node0.gpu2:0.5",),
                                                                   seed=7))
    text = spec.to_yaml()
    assert "faults:\n  fail:\n  - node1.nic0\n" in text and "seed: 7" in text
    again = ClusterSpec.from_yaml(text)
    assert again == spec and build(again).n_links == build(replace(spec, faults=Faults())).n_links - 4
    assert "faults" not in load_spec("dgx-h100").to_yaml()  # a healthy cluster's file is unchanged


@pytest.mark.parametrize("section,match", [
    ('{"fail": ["random:2:bogus"]}', "faults.fail entry 'random:2:bogus': unknown class 'bogus'"),
    ('{"fail": ["random:x:spines"]}', "a count reads random:N:CLASS"),
    ('{"degrade": ["spine3"]}', "must read SPEC:FACTOR"),
    ('{"degrade": ["spine3:0"]}', "above 0 and at most 1"),
    ('{"degrade": ["spine3:3/2"]}', "above 0 and at most 1"),
    ('{"fial": ["spine3"]}', "unknown key 'faults.fial' \\(did you mean 'fail'\\?\\)"),
    ('{"fail": "spine3"}', "field 'faults.fail' is 'spine3': it must be a list"),
    ('{"seed": -1}', "field 'faults.seed' is -1"),
    ('{"fail": ["a -> "]}', "faults.fail entry: link 'a ->' must read 'A -> B'"),
])
def test_a_bad_faults_section_is_one_error_naming_the_entry(section, match):
    with pytest.raises(FabricsimError, match=match):
        ClusterSpec.from_yaml(load_spec("dgx-h100").to_yaml() + f"faults: {section}\n")


def test_a_cluster_file_with_faults_validates_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    from fabricsim import inputs

    schema = inputs.json_schema(ClusterSpec)
    spec = replace(load_spec("dgx-h100"), faults=Faults(fail=("node0.nic0",), degrade=("node0.gpu1:0.5",), seed=2))
    jsonschema.validate(yaml.safe_load(spec.to_yaml()), schema)
    bad = {**yaml.safe_load(spec.to_yaml()), "faults": {"fial": ["spine3"]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_classes_hold_what_they_say(pod):
    assert N.class_devices(pod, "spines").size == 16 and N.class_devices(pod, "nics").size == 1024
    assert (pod.dev_kind[N.class_devices(pod, "leaves")] == DeviceKind.FABRIC_SWITCH).all()
    assert N.class_cables(pod, "spine-links").size == 32 * 16 and N.class_cables(pod, "nic-links").size == 1024
    assert N.class_cables(pod, "links").size == 512 and N.class_cables(pod, "nvlinks").size == 1024


def test_a_faulted_spec_is_plain_data_and_a_sweep_refuses_a_faulted_cluster_file(tmp_path):
    import json

    from fabricsim import sweeps

    spec = replace(load_spec("dgx-h100", nodes=2), faults=Faults(fail=("node1.nic0",), seed=3))
    plain = json.loads(json.dumps(spec.fields()))
    assert plain["faults"] == {"fail": ["node1.nic0"], "seed": 3} and "faults" not in load_spec("dgx-h100").fields()
    (tmp_path / "c.yaml").write_text(spec.to_yaml())
    (tmp_path / "s.yaml").write_text("cluster: c.yaml\nperf: {sizes: [1M]}\naxes: {perf.collective: [all_reduce]}\n")
    with pytest.raises(FabricsimError, match="has a faults section: a sweep runs healthy clusters"):
        sweeps.load(tmp_path / "s.yaml")
    (tmp_path / "c.yaml").write_text(replace(spec, faults=Faults()).to_yaml())
    assert sweeps.load(tmp_path / "s.yaml")  # the same file healthy plans


def test_an_unknown_device_points_at_the_names_of_this_many_nodes():
    """The hint lists the names of the cluster as built: `whatif names` without --nodes would list one node's."""
    two = build(load_spec("dgx-h100", nodes=2))
    with pytest.raises(FabricsimError, match=r"`fabricsim whatif names dgx-h100 --nodes 2` lists them"):
        apply_faults(two, Faults(fail=("node5.nic0",)))

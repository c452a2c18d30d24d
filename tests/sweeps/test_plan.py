"""Sweep files -> points: the cartesian product, zip groups, exclusions, the order, the content keys, and one clear
error for each kind of bad file."""

from __future__ import annotations

import json
import math
import textwrap

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim import sweeps
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.sweeps import kinds
from fabricsim.topology import preset_spec


def plan_of(tmp_path, text: str, name: str = "sweep.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return sweeps.load(path)


PERF = """
cluster: dgx-h100
perf: {collective: all_reduce, sizes: {min: 1M, max: 64M, factor: 8}}
axes:
  cluster.nodes: [1, 2]
  perf.collective: [all_reduce, all_gather]
"""


def test_cartesian_product_in_point_order(tmp_path):
    plan = plan_of(tmp_path, PERF)
    got = [(p["cluster"]["nodes"], p["options"]["collective"], p["options"]["size"]) for p in plan.points]
    sizes = [1 << 20, 8 << 20, 64 << 20]
    assert got == [(n, c, s) for n in (1, 2) for c in ("all_reduce", "all_gather") for s in sizes]
    assert [p["index"] for p in plan.points] == list(range(12))
    assert len({p["key"] for p in plan.points}) == 12
    # every option is in the point, defaults filled in
    assert plan.points[0]["options"] == {**kinds.KINDS["perf"].defaults(), "collective": "all_reduce",
                                         "size": 1 << 20}


def test_cluster_axes_vary_slowest_whatever_the_file_order(tmp_path):
    plan = plan_of(tmp_path, """
        cluster: dgx-h100
        perf: {sizes: [1K]}
        axes:
          perf.collective: [all_reduce, all_gather]
          cluster.nodes: [1, 2]
        """)
    assert [p["cluster"]["nodes"] for p in plan.points] == [1, 1, 2, 2]


def test_keys_depend_on_content_not_on_order(tmp_path):
    a = plan_of(tmp_path, PERF, "a.yaml")
    b = plan_of(tmp_path, """
        cluster: dgx-h100
        perf: {sizes: [1M, 8M, 64M], collective: all_reduce}
        axes:
          perf.collective: [all_gather, all_reduce]
          cluster.nodes: [2, 1, 4]
        """, "b.yaml")
    assert {p["key"] for p in a.points} < {p["key"] for p in b.points}
    changed = plan_of(tmp_path, PERF.replace("perf: {", "perf: {level: analytical, "), "c.yaml")
    assert not {p["key"] for p in a.points} & {p["key"] for p in changed.points}


def test_a_cluster_file_is_keyed_by_its_content(tmp_path):
    spec = preset_spec("dgx-h100")
    (tmp_path / "c.yaml").write_text(spec.to_yaml())
    first = plan_of(tmp_path, "cluster: c.yaml\nperf: {sizes: [1M]}\n")
    assert first.base == {"spec": yaml.safe_load(spec.to_yaml())} and first.label == "c.yaml"
    (tmp_path / "c.yaml").write_text(spec.to_yaml().replace("nic_gbps: 400.0", "nic_gbps: 200.0"))
    second = plan_of(tmp_path, "cluster: c.yaml\nperf: {sizes: [1M]}\n")
    assert first.points[0]["key"] != second.points[0]["key"]


def test_zip_groups_advance_together(tmp_path):
    plan = plan_of(tmp_path, """
        cluster: dgx-h100
        train: {model: llama3-8b}
        axes:
          cluster.gpu: [H100, H200, B200]
          cluster.nvswitch_chips: [4, 4, 2]
          cluster.nodes: [1, 2]
        zip: [[cluster.gpu, cluster.nvswitch_chips]]
        """)
    got = [(p["cluster"]["gpu"], p["cluster"]["nvswitch_chips"], p["cluster"]["nodes"]) for p in plan.points]
    assert got == [(g, c, n) for g, c in (("H100", 4), ("H200", 4), ("B200", 2)) for n in (1, 2)]


def test_exclude_values_lists_and_ranges(tmp_path):
    plan = plan_of(tmp_path, """
        cluster: superpod-h100
        perf: {sizes: [1M]}
        axes:
          cluster.nic_gbps: [200, 400, 800]
          cluster.gpus: [256, 512, 1024]
        exclude:
          - {cluster.nic_gbps: 200, cluster.gpus: {min: 512}}
          - {cluster.nic_gbps: [800], cluster.gpus: 256}
        """)
    got = {(p["cluster"]["nic_gbps"], p["cluster"]["gpus"]) for p in plan.points}
    assert got == {(200.0, 256), (400.0, 256), (400.0, 512), (400.0, 1024), (800.0, 512), (800.0, 1024)}


def test_values_take_their_option_type(tmp_path):
    plan = plan_of(tmp_path, """
        cluster: dgx-h100
        perf: {sizes: [1K, 4096]}
        axes: {cluster.nic_gbps: [400], cluster.oversubscription: [2]}
        """)
    p = plan.points[0]
    assert isinstance(p["cluster"]["nic_gbps"], float) and p["cluster"]["oversubscription"] == 2.0
    assert [q["options"]["size"] for q in plan.points] == [1024, 4096]


@pytest.mark.parametrize("text, message", [
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {faults.fail: [spine0]}\n", "not in fabricsim yet"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {jobs.mix: [a]}\n", "not in fabricsim yet"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nic_gbs: [1]}\n", "did you mean 'cluster.nic_gbps'"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nic_gbps: [fast]}\n",
     "cluster.nic_gbps 'fast': it must be a number from 0 to 10,000"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {network.speed: [1]}\n", "is not a kind of setting"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {train.tp: [2]}\n", "names perf and train"),
    ("cluster: dgx-h100\n", "names none"),
    ("cluster: dgx-h100\nperf: {collective: all_reduce}\n", "needs sizes"),
    ("cluster: dgx-h100\ntrain: {tp: 2}\n", "needs a model"),
    ("cluster: dgx-h100\nperf: {sizes: [1M], colective: x}\n", "unknown key 'perf.colective'"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\nzip: [[cluster.gpu, cluster.nic]]\n", "not an axis"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: [1, 2]}\nzip: [[cluster.nodes, cluster.gpu]]\n",
     "zip names 'cluster.gpu', which is not an axis"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.gpu: [H100, H200], cluster.nic: [cx7]}\n"
     "zip: [[cluster.gpu, cluster.nic]]\n", "lengths 2, 1"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: [1]}\nexclude: [{cluster.gpu: H100}]\n",
     "not an axis of this sweep"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: [1, 1]}\n", "lists a value twice"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: [1], cluster.gpus: [8]}\n", "keep one"),
    ("cluster: nowhere.yaml\nperf: {sizes: [1M]}\n", "neither a preset"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: []}\n", "lists no values"),
    ("cluster: dgx-h100\nperf: {sizes: [1M]}\naxes: {cluster.nodes: [1]}\nexclude: [{cluster.nodes: {above: 1}}]\n",
     "a range is {min: .., max: ..}"),
    ("cluster: [dgx-h100\n", "malformed YAML"),
])
def test_bad_sweep_files_are_one_clear_error(tmp_path, text, message):
    with pytest.raises(FabricsimError, match=None) as err:
        plan_of(tmp_path, text)
    assert message in str(err.value) and str(tmp_path / "sweep.yaml") in str(err.value)


def test_the_schema_command_prints_a_schema_sweep_files_validate_against(tmp_path, capsys):
    assert main(["schema", "sweep"]) == 0  # the console script's main(), in this process
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(doc)
    jsonschema.validate(yaml.safe_load(PERF), doc)
    jsonschema.validate({"cluster": "dgx-h100", "train": {"model": "llama3-8b", "search": True, "tp": 2}}, doc)
    for bad in ({"perf": {"sizes": [1]}}, {"cluster": "x", "perf": {"dtype": "float128"}},
                {"cluster": "x", "train": {"tp": "two"}}, {"cluster": "x", "axis": {}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, doc)


values = st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True)


@settings(max_examples=40, deadline=None)
@given(nodes=values, roots=st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
       cut=st.integers(1, 64))
def test_points_are_the_product_less_what_is_excluded(tmp_path_factory, nodes, roots, cut):
    doc = {"cluster": "dgx-h100", "perf": {"sizes": [1024, 2048]},
           "axes": {"cluster.nodes": nodes, "perf.root": roots}, "exclude": [{"cluster.nodes": {"max": cut}}]}
    path = tmp_path_factory.mktemp("p") / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    kept = [n for n in nodes if n > cut]
    if not kept:
        with pytest.raises(FabricsimError, match="leave no point"):
            sweeps.load(path)
        return
    plan = sweeps.load(path)
    assert len(plan.points) == len(kept) * len(roots) * 2 == math.prod([len(kept), len(roots), 2])
    assert len({p["key"] for p in plan.points}) == len(plan.points)
    assert [p["cluster"]["nodes"] for p in plan.points[::len(roots) * 2]] == kept


def test_tasks_hold_neighbours_on_one_cluster(tmp_path):
    plan = plan_of(tmp_path, PERF)
    tasks = plan.tasks(workers=1)
    assert [p["index"] for t in tasks for p in t["points"]] == list(range(12))
    for t in tasks:
        assert len({json.dumps(p["cluster"]) for p in t["points"]}) == 1
    assert [len(t["points"]) for t in plan.tasks(workers=1, task_points=4)] == [4, 2, 4, 2]
    assert [len(t["points"]) for t in plan.tasks(workers=1, pending=[0, 1, 5, 6, 7])] == [2, 1, 2]

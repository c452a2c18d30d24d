"""Jobs sharing a fabric end to end (schema -> placement -> tuner / training step -> coflows): hand-checked figures
on a 2:1 oversubscribed 512-GPU SuperPOD (two scalable units of 32 nodes; 16 uplinks of 2 cables per leaf)."""

import dataclasses
import json

import numpy as np
import pytest

from fabricsim import topology
from fabricsim.multijob.run import run_jobs
from fabricsim.multijob.spec import jobs_from
from fabricsim.multijob.trace import trace_events
from fabricsim.reports.jobs import records, table, tier_means
from fabricsim.tuner.select import best


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    def write(routing):
        spec = dataclasses.replace(topology.load_spec("superpod-h100", nodes=64), oversubscription=2.0, routing=routing)
        path = tmp_path_factory.mktemp("c") / f"{routing}.yaml"
        path.write_text(spec.to_yaml())
        return str(path)
    return {r: write(r) for r in ("adaptive", "ecmp")}


def test_thirty_two_transfers_on_sixteen_uplinks_take_twice_their_bandwidth_time(cluster):
    # GPU 0 of each node of unit 0 exchanges 256 MiB with GPU 0 of the node 32 further (unit 1): 32 transfers each
    # way through rail 0's leaves, whose 8 spine links (2 cables each) carry half of what 32 PCIe-bound GPUs send
    jobs = [{"name": f"j{i}", "ranks": [8 * i, 8 * i + 256], "collective": "sendrecv", "size": "256M"} for i in range(32)]
    run = run_jobs(jobs_from({"cluster": cluster["adaptive"], "jobs": jobs}))
    alone = best(run.topology, "sendrecv", 256 << 20, ranks=np.array([0, 256], dtype=np.int32)).result
    assert alone.limiter.kind == "links" and "pcie5" in alone.limiter.what
    for j in run.jobs:
        assert j.alone == pytest.approx(alone.time, rel=1e-12)
        assert j.shared == pytest.approx(alone.latency_time + 2 * alone.bandwidth_time, rel=1e-9)
    assert {c.tier for c in run.contended} <= {"leaf -> spine", "spine -> leaf"} and len(run.contended) >= 8
    assert all(len(c.jobs) == 32 for c in run.contended)
    assert run.jobs[0].held_back[0][1] == pytest.approx(2 * alone.bandwidth_time, rel=1e-9)
    half = run_jobs(jobs_from({"cluster": cluster["adaptive"], "jobs": jobs[:16]}))  # 16 fit: nothing shared is full
    assert [j.slowdown for j in half.jobs] == pytest.approx([1.0] * 16, rel=1e-12) and not half.contended


def test_packed_jobs_keep_to_their_unit_and_scattered_ones_share_the_spines(cluster):
    jobs = [{"name": n, "gpus": 256, "collective": c, "size": "256M", "iterations": 3}
            for n, c in (("ar", "all_reduce"), ("a2a", "alltoall"))]
    spec = jobs_from({"cluster": cluster["ecmp"], "jobs": jobs})
    packed, scattered = run_jobs(spec, "packed"), run_jobs(spec, "scattered")
    assert [j.slowdown for j in packed.jobs] == pytest.approx([1.0, 1.0], rel=1e-12) and not packed.contended
    up = {t: m for t, m, _ in tier_means(packed)}
    assert up["leaf -> spine"] == 0.0 and up["nic -> leaf"] > 0  # rail-aligned traffic never leaves its leaves
    assert all(j.shared >= j.alone * (1 - 1e-12) for j in scattered.jobs)
    for c in scattered.contended:
        assert set(c.held) <= set(c.jobs) and len(c.jobs) >= 2


def test_a_training_job_alone_takes_the_step_time_train_prints(cluster):
    from fabricsim.training.comm import EngineCommModel
    from fabricsim.training.models import load_model
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import layout_for, topology_gpu
    from fabricsim.training import parallel as P

    spec = jobs_from({"cluster": cluster["ecmp"], "jobs": [
        {"name": "t", "gpus": 256, "placement": "scattered", "train": {"model": "llama3-8b", "tp": 8, "global_batch": 128},
         "iterations": 2}]})
    run = run_jobs(spec)
    job, topo = run.jobs[0], run.topology
    model = load_model("llama3-8b")
    par = layout_for(model, P.Parallelism(tp=8, global_batch=128, tp_overlap=True), 256, topo, allow_over_hbm=True)
    step = step_time(model, par, topology_gpu(topo), EngineCommModel(topo, "flow", placement=job.ranks))
    assert job.alone == pytest.approx(2 * step.step_time, rel=1e-9) and not run.notes
    assert job.what == f"llama3-8b {par.label()} step" and job.slowdown == pytest.approx(1.0, rel=1e-12)
    assert job.comm_alone == pytest.approx(2 * sum(step.comm_total.values()), rel=1e-9)


def test_a_late_start_and_loops_run_in_order(cluster):
    spec = jobs_from({"cluster": cluster["ecmp"], "jobs": [
        {"name": "a", "ranks": "0-63", "collective": "all_gather", "size": "64M", "iterations": 4, "gap": "1ms"},
        {"name": "b", "ranks": "64-127", "collective": "all_gather", "size": "64M", "iterations": 2, "start": "3ms"}]})
    run = run_jobs(spec)
    s = run.schedule
    a, b = run.jobs
    assert b.start == 3e-3 and s.job_span(1)[0] == pytest.approx(3e-3)
    assert s.spans.iteration[s.spans.job == 0].max() == 3 and s.spans.phase[s.spans.job == 0].max() == 1  # loop + gap
    assert a.alone == pytest.approx(4 * (s.workloads[0].phases[0].alone + 1e-3), rel=1e-12)
    assert [a.slowdown, b.slowdown] == pytest.approx([1.0, 1.0], rel=1e-12)  # different nodes of one unit: their rails' leaves have room


def test_reports_trace_and_records(cluster):
    spec = jobs_from({"cluster": cluster["ecmp"], "jobs": [
        {"name": "x", "gpus": 128, "collective": "all_reduce", "size": "128M", "iterations": 2},
        {"name": "y", "gpus": 128, "collective": "alltoall", "size": "64M", "iterations": 2, "start": "1ms"}]})
    runs = [run_jobs(spec, "packed"), run_jobs(spec, "scattered")]
    text = table(runs)
    assert "packed alone ms" in text and "scattered alone ms" in text and text.count("\nx ") == 1
    assert "fabric utilisation over the" in text
    one = table(runs[:1])
    assert "held back most by" in one and "ranks" in one
    rec = records(runs[1])
    json.dumps(rec)
    assert [j["name"] for j in rec["jobs"]] == ["x", "y"] and rec["placement"] == "scattered"
    ev = trace_events(runs)
    names = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    assert names == ["packed: job x (128 GPUs)", "packed: job y (128 GPUs)", "packed: fabric utilisation",
                     "scattered: job x (128 GPUs)", "scattered: job y (128 GPUs)", "scattered: fabric utilisation"]
    slices = [e for e in ev if e["ph"] == "X" and e["pid"] == 1]
    assert len(slices) == 2 and slices[0]["name"] == "all_reduce 128 MiB"
    assert trace_events(runs) == ev  # deterministic

"""fabricsim against the calibration set's real nccl-tests logs: the table is printed, and a regression fails.

The unit tests build small indexes over the excerpts in tests/reports/fixtures (sources in its README)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.topology import build, load_spec
from fabricsim.tuner.select import best
from fabricsim.validation.logs import (
    CLUSTER_DIR, case_for, cluster_file, default_index, logs_json, logs_table, run_logs, score, spec_gaps, summary,
)
from tests.conftest import REPORTS
from tests.validation.log_index import FIX, entry, write_index

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)


# Regression bounds on the 16 logs (pooled over every size of every log, absolute %). The targets are a
# busbw median <= 12% and p90 <= 40% at >= 1 MiB, and a time median <= 25% at <= 64 KiB; these bounds are today's
# figures (analytical engine level: 26.1%, 534.1%, 25.9%) rounded up, not the targets. Above p90 sit the
# RTX 4090 boxes (+534% / +819%: lane widths and host path not stated); the A3 High log (+93%) runs GPUDirect-TCPX,
# whose throughput per NIC no source gives (its NICs run at the catalog's network efficiency, the log measures
# half of it); the p5 logs' mid sizes await the mid-size pipeline mechanism (see the cluster files' '# gap:' lines).
BUSBW_MEDIAN_BOUND = 26.5
BUSBW_P90_BOUND = 535.0
TIME_MEDIAN_BOUND = 26.5

needs_data = pytest.mark.skipif(not default_index().is_file(), reason=f"calibration logs not found at {default_index()}")


@pytest.fixture(scope="module")
def scores():
    return run_logs(level="analytical")


@needs_data
def test_every_log_is_scored_on_its_own_cluster_file(scores):
    ids = [json.loads(line)["id"] for line in default_index().read_text().splitlines() if line.strip()]
    assert sorted(s.case.id for s in scores) == sorted(ids) and len(ids) == 16
    assert sorted(p.stem for p in CLUSTER_DIR.glob("*.yaml")) == sorted(ids)
    for s in scores:
        assert s.case.skipped == () and len(s.rows) == len(s.case.rows) > 0
        assert s.busbw_errors() or s.time_errors()


@needs_data
def test_log_accuracy_does_not_regress(scores):
    REPORTS.append("fabricsim validate --logs (real nccl-tests logs, analytical engine level)\n"
                   + logs_table(scores, show_notes=False))
    g = summary(scores)[-1]
    assert g.group == "all" and g.logs == 16
    assert g.busbw_median <= BUSBW_MEDIAN_BOUND, f"busbw median {g.busbw_median:.1f}% exceeds {BUSBW_MEDIAN_BOUND}%"
    assert g.busbw_p90 <= BUSBW_P90_BOUND, f"busbw p90 {g.busbw_p90:.1f}% exceeds {BUSBW_P90_BOUND}%"
    assert g.time_median <= TIME_MEDIAN_BOUND, f"time median {g.time_median:.1f}% exceeds {TIME_MEDIAN_BOUND}%"


def test_cluster_files_load_build_and_say_what_they_cannot():
    files = sorted(CLUSTER_DIR.glob("*.yaml"))
    assert files
    for path in files:
        spec = load_spec(path)
        assert spec.name == path.stem and build(spec).n_gpus == spec.nodes * spec.gpus_per_node
        text = path.read_text()
        assert text.startswith(f"# Calibration log {path.stem}:"), path.name
    gaps = spec_gaps(cluster_file("aws-p5-16gpu-ar-a").read_text())
    assert not any("TUNER_PLUGIN" in g for g in gaps)  # the plugin's tuner leaves 2 nodes to NCCL's (see below)
    assert not any("NCCL_BUFFSIZE" in g for g in gaps)  # applied from the environment (engine.chunking.ChunkEnv)
    assert not any("EFA" in g for g in gaps)  # EFA and its 4 devices per GPU are cluster fields (transport, nics)
    assert all("\n" not in g and " # " not in g and not g.startswith("#") for g in gaps)


def test_the_two_rack_gb200_log_runs_nvls_off_as_its_manifest_said():
    """OCI's GB200-v3.4 manifest of the README's date passes NCCL_NVLS_ENABLE=0 (the cluster file's nvls line): the
    tuner picks neither NVLS nor NVLSTree on it, as it would with NVLS on."""
    spec = load_spec(cluster_file("oke-gb200-128gpu-ar"))
    assert spec.nvls is False and "NCCL_NVLS_ENABLE=0" in cluster_file("oke-gb200-128gpu-ar").read_text()
    picks = [best(build(s), "all_reduce", 1 << 30, nccl_version="2.29.2", level="analytical").algorithm
             for s in (spec, dataclasses.replace(spec, nvls=True))]
    assert picks[0] in ("ring", "tree") and picks[1] == "nvls_tree"


def test_four_of_eight_dgx_gpus_sit_alike():
    """The dgx logs ran GPUs 4-7; the harness takes 0-3: the same prediction, with and without P2P."""
    spec = load_spec(cluster_file("dgxa100-4gpu-ar"))
    shm = dataclasses.replace(spec, scaleup="pcie", nvswitch_chips=0, p2p=False)
    for s in (spec, shm):
        topo = build(s)
        t = [best(topo, "all_reduce", 1 << 30, ranks=np.array(r), level="analytical").result.time
             for r in ([0, 1, 2, 3], [4, 5, 6, 7])]
        assert t[0] == pytest.approx(t[1], rel=1e-12)


def test_a_headerless_excerpt_is_scored_at_each_size(tmp_path):
    case = case_for(entry(), FIX)
    assert (case.collective, case.ranks, case.nccl_version) == ("all_reduce", tuple(range(8)), (2, 26, 6))
    s = score(case, "analytical")
    assert [r.size_bytes for r in s.rows] == [8, 16, 32, 2097152, 4194304, 8388608, 34359738368]
    assert len(s.time_errors()) == 3 and len(s.busbw_errors()) == 4
    r = s.rows[-1]
    assert r.measured_time_s == pytest.approx(70981e-6) and r.error_pct == pytest.approx(
        (70981e-6 / r.predicted_time_s - 1) * 100)
    assert s.time_errors(signed=True)[0] == pytest.approx((s.rows[0].predicted_time_s / 21.57e-6 - 1) * 100)


def test_p2p_disable_routes_through_host_memory():
    case = case_for(entry(env={"NCCL_P2P_DISABLE": "1"}), FIX)
    assert (case.spec.scaleup, case.spec.p2p, case.spec.nvls, case.spec.nvswitch_chips) == ("pcie", False, False, 0)
    assert case.env[0].status == "applied"
    off = case_for(entry(env={"NCCL_P2P_DISABLE": "0"}), FIX)
    assert off.spec.scaleup == "nvl72" and off.env[0].status == "no effect"


def test_algo_and_proto_restrict_the_tuner():
    case = case_for(entry(env={"NCCL_ALGO": "Ring,NVLSTree", "NCCL_PROTO": "^LL128"}), FIX)
    assert (case.algos, case.protos) == (("ring", "nvls_tree"), ("^ll128",))
    s = score(dataclasses.replace(case, rows=case.rows[:2]), "analytical")
    assert {r.algo for r in s.rows} <= {"ring", "nvls_tree"} and all(r.proto != "ll128" for r in s.rows)
    with pytest.raises(FabricsimError, match="NCCL_ALGO=Ring,Bogus: unknown algorithm 'Bogus'"):
        case_for(entry(env={"NCCL_ALGO": "Ring,Bogus"}), FIX)


@pytest.mark.parametrize("env, status", [
    ({"NCCL_BUFFSIZE": "8388608"}, "applied"), ({"NCCL_NVLS_CHUNKSIZE": "524288"}, "applied"),
    ({"NCCL_NVLSTREE_MAX_CHUNKSIZE": "524288"}, "applied"), ({"NCCL_P2P_NET_CHUNKSIZE": "524288"}, "no effect"),
    ({"NCCL_NET_FORCE_FLUSH": "0"}, "no effect"), ({"NCCL_NET_FORCE_FLUSH": "1"}, "not modelled"),
    ({"NCCL_TOPO_FILE": "/opt/x.xml"}, "cluster file"),
    ({"NCCL_IB_QPS_PER_CONNECTION": "4"}, "not modelled"), ({"NCCL_TUNER_PLUGIN": "libx.so"}, "not modelled"),
    ({"NCCL_MNNVL_ENABLE": "1"}, "cluster file"), ({"NCCL_DEBUG": "INFO"}, "no effect"),
    ({"NCCL_MAX_NCHANNELS": "4"}, "applied"), ({"NCCL_MIN_CTAS": "2"}, "applied"),
    ({"NCCL_NVLS_ENABLE": "0"}, "applied"), ({"NCCL_NVLS_ENABLE": "2"}, "no effect"),
    ({"NCCL_COLLNET_ENABLE": "0"}, "no effect"),
])
def test_every_environment_variable_says_how_it_is_honoured(env, status):
    assert case_for(entry(env=env), FIX).env[0].status == status


def test_the_logs_own_environment_lines_size_ncclbuffers_and_chunks(tmp_path):
    # NCCL prints what it read ('NCCL_X set by environment to V.', src/misc/param.cc), including what a network
    # plugin set before it read them (aws-ofi-nccl's NVLS chunks on p5, src/platform-aws.c): they join the index's env
    (tmp_path / "x.log").write_text(
        "host:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.\n"
        "host:1:1 [0] NCCL INFO NCCL_NVLSTREE_MAX_CHUNKSIZE set by environment to 524288.\n"
        + (FIX / "oke_gb200_headerless.log").read_text())
    case = case_for(entry(log="x.log", env={"NCCL_NVLS_CHUNKSIZE": "262144"}), tmp_path)
    assert (case.chunk_env.buffsize, case.chunk_env.nvls_chunk, case.chunk_env.nvls_tree_max_chunk) == (
        8 << 20, 256 << 10, 512 << 10)
    assert {e.var: e.status for e in case.env} == {"NCCL_BUFFSIZE": "applied", "NCCL_NVLS_CHUNKSIZE": "applied",
                                                   "NCCL_NVLSTREE_MAX_CHUNKSIZE": "applied"}
    s = score(dataclasses.replace(case, rows=case.rows[-1:]), "analytical")
    plain = score(dataclasses.replace(case_for(entry(), FIX), rows=case.rows[-1:]), "analytical")
    assert s.rows[0].predicted_time_s != plain.rows[0].predicted_time_s
    with pytest.raises(FabricsimError, match="NCCL_BUFFSIZE='8M' is not a whole number of bytes"):
        case_for(entry(env={"NCCL_BUFFSIZE": "8M"}), FIX)


def test_a_tuner_plugin_the_log_says_did_not_load_changes_nothing(tmp_path):
    (tmp_path / "x.log").write_text("host:1:1 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2 symbol, "
                                    "using internal tuner instead.\n" + (FIX / "oke_gb200_headerless.log").read_text())
    case = case_for(entry(log="x.log", env={"NCCL_TUNER_PLUGIN": "libx.so"}), tmp_path)
    assert case.env[0].status == "no effect"


@pytest.mark.parametrize("version, status", [("1.9.2-aws", "no effect"), ("1.10.0-aws", "not modelled")])
def test_a_tuner_plugin_that_leaves_small_communicators_to_nccl_changes_nothing(tmp_path, version, status):
    # aws-ofi-nccl 1.9.x's tuner returns without choosing on 2 nodes or fewer (src/tuner/nccl_ofi_tuner.c:60-62);
    # the fixture's 8 GB200 GPUs are one NVL72 domain: one NCCL node
    (tmp_path / "x.log").write_text(f"host:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl {version}\n"
                                    "host:1:1 [0] NCCL INFO Using tuner plugin: 'nccl_ofi_tuner'\n"
                                    + (FIX / "oke_gb200_headerless.log").read_text())
    effect = case_for(entry(log="x.log", env={"NCCL_TUNER_PLUGIN": "libnccl-ofi-tuner.so"}), tmp_path).env[0]
    assert effect.status == status
    assert ("this run has 1" in effect.why) == (status == "no effect")


@pytest.mark.parametrize("change, message", [
    ({"env": {"NCCL_SOMETHING_NEW": "1"}}, "NCCL_SOMETHING_NEW=1 is not an NCCL variable fabricsim knows how to honour: give one of NCCL_ALGO"),
    ({"hardware": {"gpu": "GB200", "gpus_per_node": 4, "nodes": 3}}, "has 2 nodes of 4 GPUs but the log ran 3 of 4"),
    ({"hardware": {"gpu": "H100", "gpus_per_node": 4, "nodes": 2}}, "has GPU GB200 but the index says H100"),
    ({"hardware": {"gpu": "GB200", "gpus_per_node": 2, "nodes": 2}}, "the log says 8 ranks but nodes x gpus_per_node is 4"),
    ({"id": "no-such-log"}, "no cluster file for log no-such-log"),
    ({"id": "../x"}, "use letters, digits"),
    ({"collective": "all_gather", "log": "oke_gb200_concluded_only.log", "id": "oke-gb200-128gpu-ar"},
     "the log ran all_reduce but field 'collective' says all_gather"),
])
def test_an_index_that_disagrees_is_one_clear_error(change, message):
    with pytest.raises(FabricsimError, match=message.replace("(", r"\(").replace(")", r"\)")):
        case_for(entry(**change), FIX)


def test_json_is_deterministic(tmp_path):
    index = write_index(tmp_path, entry(), entry(id="oke-gb200-128gpu-ar", log="oke_gb200_concluded_only.log",
                                                 hardware={"gpu": "GB200", "gpus_per_node": 4, "nodes": 32}))
    a, b = (logs_json(run_logs(index, level="analytical")) for _ in range(2))
    assert a == b and [d["id"] for d in json.loads(a)["logs"]] == ["oke-gb200-128gpu-ar", "oke-gb200-8gpu-ar"]


def test_a_logs_channel_bound_reaches_its_prediction_and_its_env_table():
    plain = score(dataclasses.replace(case_for(entry(), FIX), rows=case_for(entry(), FIX).rows[-1:]), "analytical")
    assert plain.rows[0].algo == "nvls"
    scores = []
    for env in ({"NCCL_MAX_NCHANNELS": "1"}, {"NCCL_MAX_CTAS": "1"}):
        case = case_for(entry(env=env), FIX)
        scores.append(score(dataclasses.replace(case, rows=case.rows[-1:]), "analytical"))
    nch, ctas = scores
    assert nch.case.chunk_env.channels.max_nchannels == 1 and ctas.case.chunk_env.channels.max_ctas == 1
    # NVLS runs its own channels, which only the CTA bound reaches (src/transport/nvls.cc:235)
    assert nch.rows[0].predicted_time_s == plain.rows[0].predicted_time_s != ctas.rows[0].predicted_time_s
    assert (nch.rows[0].channels, ctas.rows[0].channels) == (plain.rows[0].channels, 1)
    lines = logs_table(scores).splitlines()
    assert (f"  {nch.case.id:<30} NCCL_MAX_NCHANNELS=1: applied (comm->nChannels at most 1: NCCL runs its first "
            "channels; NVLS channels unchanged (engine.chunking.ChannelEnv))") in lines
    assert (f"  {ctas.case.id:<30} NCCL_MAX_CTAS=1: applied (comm->nChannels and the NVLS channels at most 1: config "
            "maxCTAs, NCCL 2.17+ (engine.chunking.ChannelEnv))") in lines

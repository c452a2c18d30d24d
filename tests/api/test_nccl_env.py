"""A run's NCCL environment in `perf` and `compare`, honoured as `reports.nccl_env.ENV` says: buffer sizes reach the
engine's chunking, NCCL_ALGO restricts the candidates, NCCL_P2P_DISABLE reroutes through host memory, a log's own
'set by environment' lines apply, and what fabricsim cannot honour is said, never silently dropped."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.engine.chunking import ChannelEnv, ChunkEnv
from fabricsim.reports.nccl_env import CHANNEL_VARS, RunSetup, environment
from fabricsim.reports.nccltests_table import format_table
from fabricsim.tuner.select import best

TWO_NODES = fs.cluster("dgx-h100", nodes=2)


def test_a_buffer_size_reaches_the_engine_as_best_takes_it():
    plain = fs.perf(TWO_NODES, "all_reduce", ["64M"], algo="ring", proto="simple")
    small = fs.perf(TWO_NODES, "all_reduce", ["64M"], algo="ring", proto="simple", env={"NCCL_BUFFSIZE": "65536"})
    direct = best(TWO_NODES.topology, "all_reduce", 64 << 20, ranks=np.arange(16), algos=["ring"], protos=["simple"],
                  chunk_env=ChunkEnv(buffsize=1 << 16))
    assert small.rows[0].time_s == direct.result.time != plain.rows[0].time_s
    assert [(e.var, e.status) for e in small.env] == [("NCCL_BUFFSIZE", "applied")]
    assert small.meta()["env"][0]["value"] == "65536" and "env" not in plain.meta()


def test_nccl_algo_and_p2p_disable_change_what_runs():
    ring = fs.perf(TWO_NODES, "all_reduce", ["1G"], env={"NCCL_ALGO": "Ring"})
    assert ring.rows[0].algo == "ring" and ring.algo == ("ring",)
    with pytest.raises(fs.FabricsimError, match="algo and NCCL_ALGO both choose the algorithms: give one of them"):
        fs.perf(TWO_NODES, "all_reduce", ["1G"], algo="tree", env={"NCCL_ALGO": "Ring"})
    node = fs.cluster("dgx-h100")
    off = fs.perf(node, "all_reduce", ["1G"], env={"NCCL_P2P_DISABLE": "1"})
    assert off.rows[0].busbw < fs.perf(node, "all_reduce", ["1G"]).rows[0].busbw / 4  # host memory, not NVLink
    assert off.cluster.ranks.tolist() == node.ranks.tolist()


def test_an_unknown_variable_or_a_bad_value_is_one_error_naming_the_fix(capsys):
    with pytest.raises(fs.FabricsimError, match="NCCL_FOO=1 is not an NCCL variable fabricsim knows how to honour: "
                                                "give one of NCCL_ALGO, NCCL_BUFFSIZE"):
        fs.perf(TWO_NODES, "all_reduce", ["1M"], env={"NCCL_FOO": "1"})
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "--env", "NCCL_BUFFSIZE=-1"]) == 2
    assert capsys.readouterr().err == "error: NCCL_BUFFSIZE=-1 must be a positive number of bytes\n"
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "--env", "NCCL_BUFFSIZE"]) == 2
    assert "give NCCL_NAME=VALUE" in capsys.readouterr().err


def test_perf_prints_how_each_variable_was_honoured(capsys):
    assert main(["perf", "all_reduce", "-c", "dgx-h100", "-b", "1M", "-e", "1M", "--env", "NCCL_DEBUG=INFO",
                 "--env", "NCCL_PROTO=LL"]) == 0
    out = capsys.readouterr().out
    assert "# NCCL_DEBUG=INFO: no effect (logging only)\n# NCCL_PROTO=LL: applied (protocols ll)\n" in out
    (row,) = [line for line in out.splitlines() if line.strip().startswith("1048576")]
    assert row.split()[-2] == "ll"


def test_compare_applies_the_logs_own_environment_lines(tmp_path, capsys):
    """A log whose NCCL says it read NCCL_ALGO=Tree and a variable fabricsim does not know: the prediction runs
    Tree, and the unknown one is a note."""
    rows = fs.perf(TWO_NODES, "all_reduce", ["1G"], algo="tree").rows
    said = ("host-1:25:66 [0] NCCL INFO NCCL_ALGO set by environment to Tree\n"
            "host-1:25:66 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n")
    log = tmp_path / "tree.log"
    log.write_text(said + format_table(list(rows), "all_reduce", 16, extra_cols=False))
    result = fs.compare(log, TWO_NODES)
    assert result.rows[0].predicted_time_s == rows[0].time_s  # Tree, as the log's NCCL ran it
    assert [e["var"] for e in result.meta["env"]] == ["NCCL_ALGO"]
    assert any("NCCL_SOCKET_IFNAME=eth0, which fabricsim does not know how to honour" in n for n in result.notes)
    assert fs.compare(log, TWO_NODES, algo="ring").rows[0].predicted_time_s != rows[0].time_s  # given wins
    assert main(["compare", str(log), "-c", "dgx-h100", "--nodes", "2"]) == 0
    captured = capsys.readouterr()
    assert "# NCCL_ALGO=Tree: applied (algorithms tree)" in captured.out and "NCCL_SOCKET_IFNAME" in captured.err


def test_a_channel_bound_lowers_a_large_all_reduce_across_nodes_and_is_reported(capsys):
    """NCCL_MAX_NCHANNELS=1 on two DGX A100: NCCL runs the communicator's first channel, one ring leaving each node
    on one of its eight HDR NICs (src/graph/connect.cc:492-506)."""
    args = ["perf", "all_reduce", "-c", "dgx-a100", "--nodes", "2", "-b", "1G", "-e", "1G"]
    assert main(args) == 0
    (plain,) = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("1073741824")]
    assert main([*args, "--env", "NCCL_MAX_NCHANNELS=1"]) == 0
    out = capsys.readouterr().out
    assert ("# NCCL_MAX_NCHANNELS=1: applied (comm->nChannels at most 1: NCCL runs its first channels; NVLS channels "
            "unchanged (engine.chunking.ChannelEnv))\n") in out
    (one,) = [line.split() for line in out.splitlines() if line.strip().startswith("1073741824")]
    assert plain[-3:-1] == one[-3:-1] == ["ring", "simple"] and one[-1] == "1"
    assert float(one[7]) < float(plain[7]) / 6  # busbw: one NIC of eight per node
    result = fs.perf(fs.cluster("dgx-a100", nodes=2), "all_reduce", ["1G"], env={"NCCL_MAX_CTAS": "1"})
    assert result.rows[0].busbw == pytest.approx(float(one[7]) * 1e9, rel=0.01)  # the CTA bound says the same here
    assert result.meta()["env"][0]["status"] == "applied"


@pytest.mark.parametrize("env, message", [
    ({"NCCL_MAX_NCHANNELS": "one"}, "NCCL_MAX_NCHANNELS='one' is not a whole number of channels: give a count, e.g. "
                                    "NCCL_MAX_NCHANNELS=4"),
    ({"NCCL_MAX_NCHANNELS": "0"}, "NCCL_MAX_NCHANNELS=0: a communicator runs at least 1 channel"),
    ({"NCCL_MIN_CTAS": "-2"}, "NCCL_MIN_CTAS=-2: a communicator runs at least 1 channel"),
    ({"NCCL_MIN_CTAS": "8", "NCCL_MAX_CTAS": "2"}, "NCCL_MIN_CTAS=8 is above NCCL_MAX_CTAS=2 (NCCL would lower the "
                                                   "minimum to 2): give NCCL_MIN_CTAS at most NCCL_MAX_CTAS"),
    ({"NCCL_NVLS_ENABLE": "yes"}, "NCCL_NVLS_ENABLE='yes': give 0 (NVLS off), 1 (on) or 2"),
    ({"NCCL_COLLNET_ENABLE": "2"}, "NCCL_COLLNET_ENABLE='2': give 0 (CollNet off, NCCL's default) or 1"),
])
def test_a_bad_channel_or_algorithm_switch_is_one_error_naming_the_fix(env, message, capsys):
    argv = ["perf", "all_reduce", "-c", "dgx-h100", "-b", "1M", "-e", "1M"]
    assert main([*argv, *(a for k, v in env.items() for a in ("--env", f"{k}={v}"))]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and "Traceback" not in err


def test_min_nchannels_above_max_copies_the_first_channels_as_nccl_permits():
    run = RunSetup(TWO_NODES.spec, "all_reduce", "")
    effects = environment(run, {"NCCL_MAX_NCHANNELS": "2", "NCCL_MIN_NCHANNELS": "8"})
    assert [e.status for e in effects] == ["applied", "applied"]
    assert run.chunk_env.channels == ChannelEnv(min_nchannels=8, max_nchannels=2)
    assert environment(RunSetup(TWO_NODES.spec, "all_reduce", ""), {"NCCL_MIN_NCHANNELS": "0"})[0].status == "no effect"


def test_nvls_and_collnet_switches_take_algorithms_out_or_in():
    node = fs.cluster("dgx-h100")
    assert fs.perf(node, "all_reduce", ["1G"]).rows[0].algo == "nvls"
    off = fs.perf(node, "all_reduce", ["1G"], env={"NCCL_NVLS_ENABLE": "0"})
    assert off.rows[0].algo not in ("nvls", "nvls_tree") and off.env[0].why == ("NVLS and NVLSTree out of the "
                                                                                 "candidates: nvls false")
    assert fs.perf(node, "all_reduce", ["1G"], env={"NCCL_NVLS_ENABLE": "2"}).env[0].status == "no effect"
    # CollNet where the fabric's switches reduce (the dgx-h100 preset's QM9700: SHARP), nowhere else
    # without the switch, forcing CollNet names it (the switches do SHARP; NCCL's collnetEnable is 0 by default)
    with pytest.raises(fs.FabricsimError, match=r"CollNet is off on dgx-h100, whose qm9700 switches do SHARP: NCCL "
                                                r"runs it only with NCCL_COLLNET_ENABLE=1 \(0 by default\)"):
        fs.perf(TWO_NODES, "all_reduce", ["1G"], algo="collnet_direct")
    with pytest.raises(fs.FabricsimError, match="CollNet needs SHARP in-network reduction, which pcie-l40s-8 has no"):
        fs.perf(fs.cluster("pcie-l40s-8", nodes=2), "all_reduce", ["1G"], algo="collnet_direct")
    on = fs.perf(TWO_NODES, "all_reduce", ["1G"], algo="collnet_direct", env={"NCCL_COLLNET_ENABLE": "1"})
    assert on.rows[0].algo == "collnet_direct" and on.env[0].status == "applied"
    assert on.cluster.spec.sharp and not TWO_NODES.spec.sharp
    roce = dataclasses.replace(TWO_NODES.spec, fabric="roce", nic="cx7-eth", leaf_switch="sn5600",
                               spine_switch="sn5600")
    run = RunSetup(roce, "all_reduce", "")
    (effect,) = environment(run, {"NCCL_COLLNET_ENABLE": "1"})
    assert effect.status == "no effect" and "no SHARP switches" in effect.why and not run.spec.sharp


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(CHANNEL_VARS) + ["NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE"]),
                       st.text(alphabet="0123456789-x ab", max_size=5), max_size=4))
def test_the_channel_and_switch_parsers_apply_or_raise_one_error(env):
    run = RunSetup(TWO_NODES.spec, "all_reduce", "")
    try:
        effects = environment(run, env)
    except fs.FabricsimError:
        return
    assert len(effects) == len(env)
    ch = run.chunk_env.channels
    assert all(v is None or v >= 1 for v in (ch.min_nchannels, ch.max_nchannels, ch.min_ctas, ch.max_ctas))


@pytest.mark.parametrize("var, version, since", [("NCCL_MAX_CTAS", "2.16", "2.17.1"),
                                                 ("NCCL_MAX_NCHANNELS", "2.4", "2.5.6")])
def test_a_channel_bound_the_runs_release_does_not_read_is_of_no_effect(var, version, since):
    # the tuner leaves a release's bounds open where it has no such variable (tuner.nccl_versions 'cta config',
    # 'nchannels env'): the environment table says so rather than 'applied'
    a100 = fs.cluster("dgx-a100", nodes=2)
    plain = fs.perf(a100, "all_reduce", ["1G"], nccl_version=version)
    old = fs.perf(a100, "all_reduce", ["1G"], nccl_version=version, env={var: "1"})
    assert old.rows[0].time_s == plain.rows[0].time_s
    assert [(e.var, e.status) for e in old.env] == [(var, "no effect")] and since in old.env[0].why
    new = fs.perf(a100, "all_reduce", ["1G"], nccl_version=since, env={var: "1"})
    assert [e.status for e in new.env] == ["applied"] and new.rows[0].time_s > plain.rows[0].time_s


def test_a_bound_above_maxchannels_names_the_runs_releases_maxchannels():
    # MAXCHANNELS 32 up to 2.24.3, 64 from 2.25.1 (src/include/device.h:62; tuner.nccl_versions 'max channels')
    why = {v: environment(RunSetup(TWO_NODES.spec, "all_reduce", "", nccl_version=v), {"NCCL_MIN_NCHANNELS": "48"})[0]
           .why for v in ("2.24", "2.25")}
    assert "(NCCL caps it at MAXCHANNELS, 32)" in why["2.24"] and "MAXCHANNELS" not in why["2.25"]


def test_gdr_over_c2c_is_read_with_each_releases_default():
    # NCCL_NET_GDR_C2C: not read before 2.26, default 0 in 2.26 (paths.cc:381), 1 from 2.27.3 (paths.cc:386)
    spec = fs.cluster("gb200-nvl72", gpus=144).spec

    def effect(version: str, value: str):
        (e,) = environment(RunSetup(spec, "all_reduce", "", nccl_version=version), {"NCCL_NET_GDR_C2C": value})
        return e.status, e.why

    assert effect("2.25.1", "1") == ("no effect", "NCCL 2.25.1 does not read it (NCCL 2.26 and newer do)")
    assert effect("2.26.2", "1")[0] == "cluster file" and "default is 0" in effect("2.26.2", "1")[1]
    assert effect("2.26.2", "0") == ("no effect", "0 is NCCL 2.26.2's default")
    assert effect("2.29.2", "1") == ("no effect", "1 is NCCL 2.29.2's default")
    assert effect("2.29.2", "0")[0] == "not modelled"


def test_the_legacy_nrings_names_bound_channels_unless_the_new_names_are_set():
    # NCCL_MIN/MAX_NRINGS: read first, overridden by NCCL_MIN/MAX_NCHANNELS (src/graph/connect.cc:327-360)
    run = RunSetup(TWO_NODES.spec, "all_reduce", "")
    (e,) = environment(run, {"NCCL_MAX_NRINGS": "2"})
    assert e.status == "applied" and run.chunk_env.channels == ChannelEnv(max_nchannels=2)
    run = RunSetup(TWO_NODES.spec, "all_reduce", "")
    effects = environment(run, {"NCCL_MAX_NRINGS": "2", "NCCL_MAX_NCHANNELS": "4"})
    assert [(x.var, x.status) for x in effects] == [("NCCL_MAX_NCHANNELS", "applied"), ("NCCL_MAX_NRINGS", "no effect")]
    assert run.chunk_env.channels == ChannelEnv(max_nchannels=4)
    old = RunSetup(TWO_NODES.spec, "all_reduce", "", nccl_version="2.4.8")
    assert environment(old, {"NCCL_MAX_NRINGS": "2"})[0].status == "not modelled"


def test_channel_counts_read_as_nccl_reads_integers():
    # src/misc/param.cc: strtoll(str, nullptr, 0): '010' is octal 8, '0x10' 16; Python's '1_0' is no C integer
    run = RunSetup(TWO_NODES.spec, "all_reduce", "")
    environment(run, {"NCCL_MAX_NCHANNELS": "010", "NCCL_MIN_NCHANNELS": "0x2"})
    assert run.chunk_env.channels == ChannelEnv(min_nchannels=2, max_nchannels=8)
    with pytest.raises(fs.FabricsimError, match="is not a whole number of channels"):
        environment(RunSetup(TWO_NODES.spec, "all_reduce", ""), {"NCCL_MAX_NCHANNELS": "1_0"})


def test_nvls_off_on_a_release_without_nvls_changes_nothing():
    node = fs.cluster("dgx-h100").spec
    run = RunSetup(node, "all_reduce", "", nccl_version="2.16.5")
    (e,) = environment(run, {"NCCL_NVLS_ENABLE": "0"})
    assert (e.status, e.why) == ("no effect", "NCCL 2.16.5 has no NVLS (NCCL 2.17 and newer do)") and run.spec.nvls

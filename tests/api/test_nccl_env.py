"""A run's NCCL environment in `perf` and `compare`, honoured as `reports.nccl_env.ENV` says: buffer sizes reach the
engine's chunking, NCCL_ALGO restricts the candidates, NCCL_P2P_DISABLE reroutes through host memory, a log's own
'set by environment' lines apply, and what fabricsim cannot honour is said, never silently dropped."""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.engine.chunking import ChunkEnv
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

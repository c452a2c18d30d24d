"""nccl-tests without GPUs: flags, environment, and output that nccl-tests' parsers read back exactly."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from fabricsim.cli.main import main
from fabricsim.cli.nccltests import BINARIES, run_binary, sweep
from fabricsim.errors import FabricsimError
from fabricsim.nccltests.args import parse_args
from fabricsim.reports.nccltests_log import parse_nccl_tests
from fabricsim.reports.nccltests_table import float_str
from fabricsim.topology import load_cluster

H100 = {"FABRICSIM_CLUSTER": "dgx-h100"}


def plain_parse(text: str) -> tuple[list[dict], float | None]:
    """How common nccl-tests scripts read a log: skip '#' lines, split data lines into the 13 columns of
    size count type redop root + (time algbw busbw #wrong) out-of-place and in-place; the average from the
    '# Avg bus bandwidth' footer."""
    rows, avg = [], None
    for line in text.splitlines():
        if line.startswith("#"):
            m = re.match(r"#\s*Avg bus bandwidth\s*:\s*(\S+)", line)
            if m:
                avg = float(m.group(1))
            continue
        f = line.split()
        if len(f) != 13 or not f[0].isdigit():
            continue
        rows.append({"size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4]),
                     "time": float(f[5]), "algbw": float(f[6]), "busbw": float(f[7]), "wrong": f[8],
                     "ip_time": float(f[9]), "ip_algbw": float(f[10]), "ip_busbw": float(f[11])})
    return rows, avg


@pytest.fixture(scope="module")
def ar_log():
    text, notes = run_binary("all_reduce_perf", "-b 8 -e 8G -f 2 -g 8".split(), H100)
    return text, notes


def test_all_reduce_8_to_8g_on_dgx_h100_reads_back_exactly(ar_log):
    text, notes = ar_log
    assert not notes
    assert "# SIMULATED by fabricsim" in text and "no GPU ran" in text
    rows, avg = plain_parse(text)
    assert [r["size"] for r in rows] == [8 << k for k in range(31)]  # 8 B .. 8 GiB, x2
    expected = sweep(load_cluster("dgx-h100"), "all_reduce", [r["size"] for r in rows], dtype="float", redop="sum",
                     root=0, algos=None, protos=None)
    for r, p in zip(rows, expected):
        assert (r["count"], r["type"], r["redop"], r["root"], r["wrong"]) == (p.count, "float", "sum", -1, "N/A")
        assert f"{r['time']:.6g}" == f"{float(float_str(p.time_s * 1e6, 7)):.6g}"
        assert r["busbw"] == float(float_str(p.busbw / 1e9, 6)) and r["algbw"] == float(float_str(p.algbw / 1e9, 6))
        assert r["ip_busbw"] == r["busbw"]
    assert avg == pytest.approx(sum(p.busbw for p in expected) / len(expected) / 1e9, rel=1e-5)
    # fabricsim's own parser: the same rows, the rank count and the collective
    log = parse_nccl_tests(text)
    assert (log.collective, log.nranks, len(log.rows)) == ("all_reduce", 8, 31)
    assert [x.out_of_place.busbw for x in log.rows] == [r["busbw"] for r in rows]
    assert log.avg_busbw == avg


def test_fabricsim_compare_reads_the_log_and_finds_no_error(ar_log, tmp_path, capsys):
    path = tmp_path / "ar.log"
    path.write_text(ar_log[0])
    assert main(["compare", str(path), "--cluster", "dgx-h100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["log_nranks"] == 8 and doc["collective"] == "all_reduce" and len(doc["rows"]) == 31
    assert max(abs(r["error_pct"]) for r in doc["rows"]) < 0.1  # only the printed rounding of the times


def test_json_output_is_nccl_tests_document(tmp_path):
    out = tmp_path / "r.json"
    text, _ = run_binary("all_gather_perf", ["-b", "1M", "-e", "16M", "-f", "4", "-g", "8", "-J", str(out)], H100)
    assert text.startswith(f"# Writing JSON output to {out}\n")
    doc = json.loads(out.read_text())
    assert doc["version"] == 2 and "SIMULATED" in doc["simulated"]
    assert len(doc["config"]["devices"]) == 8 and [r["size"] for r in doc["results"]] == [1 << 20, 4 << 20, 16 << 20]
    log = parse_nccl_tests(out.read_text())
    assert (log.collective, log.nranks) == ("all_gather", 8)
    plain, avg = plain_parse(text)
    assert [round(r.out_of_place.busbw, 2) for r in log.rows] == [r["busbw"] for r in plain]
    assert doc["average_bus_bandwidth"]["bandwidth"] == pytest.approx(avg, rel=1e-5)
    # nccl-tests never overwrites: the next run writes r.json.0
    text2, _ = run_binary("all_gather_perf", ["-b", "1M", "-e", "1M", "-g", "8", "-J", str(out)], H100)
    assert text2.startswith(f"# Writing JSON output to {out}.0\n")


def test_every_binary_runs_and_names_itself():
    for binary in BINARIES:
        text, _ = run_binary(binary, ["-b", "1M", "-e", "1M", "-g", "8"], H100)
        assert f"# Collective test starting: {binary}" in text and f"# Collective test concluded: {binary}" in text
        rows, _ = plain_parse(text)
        assert len(rows) == 1 and rows[0]["size"] == 1 << 20


def _busbw(text: str) -> list[float]:
    return [r["busbw"] for r in plain_parse(text)[0]]


def test_nccl_env_changes_the_prediction_or_says_why():
    args = ["-b", "1G", "-e", "1G", "-g", "8"]
    base = _busbw(run_binary("all_reduce_perf", args, H100)[0])[0]
    for var, value in [("NCCL_ALGO", "Ring"), ("NCCL_NVLS_ENABLE", "0"), ("NCCL_PROTO", "LL"),
                       ("NCCL_P2P_DISABLE", "1")]:
        text, notes = run_binary("all_reduce_perf", args, {**H100, var: value})
        assert _busbw(text)[0] < base, var
        assert any(n.startswith(var) for n in notes) and f"{var}={value}" in text
    # a channel bound leaves one node's NVLS pick on NVLS's own channels (src/transport/nvls.cc:235), as in NCCL
    text, notes = run_binary("all_reduce_perf", args, {**H100, "NCCL_MAX_NCHANNELS": "4"})
    assert _busbw(text)[0] == base and any(n.startswith("NCCL_MAX_NCHANNELS=4: applied") and "NVLS channels unchanged"
                                           in n for n in notes)
    two = ["-b", "1G", "-e", "1G", "-g", "8"]
    env2 = {**H100, "OMPI_COMM_WORLD_SIZE": "2"}
    base2 = _busbw(run_binary("all_reduce_perf", two, env2)[0])[0]
    for var, value in [("NCCL_IB_HCA", "mlx5_0,mlx5_1"), ("NCCL_NET_GDR_LEVEL", "LOC"), ("NCCL_MAX_CTAS", "1")]:
        text, notes = run_binary("all_reduce_perf", two, {**env2, var: value})
        assert _busbw(text)[0] < base2, var
    # SHARP is a candidate only with NCCL_COLLNET_ENABLE=1 (NCCL's default is off), as in NCCL
    with pytest.raises(FabricsimError, match="collnet_chain"):
        run_binary("all_reduce_perf", two, {**env2, "NCCL_ALGO": "CollNetChain"})
    text, notes = run_binary("all_reduce_perf", two, {**env2, "NCCL_ALGO": "CollNetChain", "NCCL_COLLNET_ENABLE": "1"})
    assert _busbw(text)[0] > 0 and any("SHARP" in n for n in notes)


@pytest.mark.parametrize("env, match", [
    ({"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}, "network loopback"),
    ({"NCCL_ALGO": "Ring,Butterfly"}, "NCCL_ALGO: unknown algorithm 'Butterfly'"),
    ({"NCCL_NVLS_ENABLE": "yes"}, "NCCL_NVLS_ENABLE"),
    ({"FABRICSIM_CLUSTER": ""}, "FABRICSIM_CLUSTER is not set"),
    ({"OMPI_COMM_WORLD_SIZE": "two"}, "not a process count"),
])
def test_refused_environments(env, match):
    with pytest.raises(FabricsimError, match=match):
        run_binary("all_reduce_perf", ["-g", "8"], {**H100, **env})


def test_rank_count_from_mpi_slurm_and_flags():
    text, _ = run_binary("all_reduce_perf", ["-g", "8", "-b", "1M", "-e", "1M"], {**H100, "SLURM_NTASKS": "2"})
    assert len(re.findall(r"^#  Rank ", text, re.M)) == 16 and "16 x H100, 2 nodes" in text
    text, _ = run_binary("all_reduce_perf", ["-t", "2", "-g", "4", "-b", "1M", "-e", "1M"], H100)
    assert len(re.findall(r"^#  Rank ", text, re.M)) == 8
    assert run_binary("all_reduce_perf", ["-g", "8"], {**H100, "OMPI_COMM_WORLD_RANK": "1"}) == ("", [])
    with pytest.raises(FabricsimError, match=r"12 ranks \(1 process x -t 3 x -g 4\).*multiple of 8"):
        run_binary("all_reduce_perf", ["-t", "3", "-g", "4"], H100)


def test_part_of_one_node_runs_on_its_first_gpus_like_the_api():
    """`-g 4` on a DGX H100 is GPUs 0-3 of a whole node (nccl-tests' device order), as fs.cluster(gpus=4) is."""
    import fabricsim as fs

    text, notes = run_binary("all_reduce_perf", ["-g", "4", "-b", "1G", "-e", "1G"], H100)
    assert len(re.findall(r"^#  Rank ", text, re.M)) == 4 and "4 x H100, 1 node)" in text
    assert any("GPUs 0-3 of 8" in n for n in notes)
    rows, _ = plain_parse(text)
    api_row = fs.perf(fs.cluster("dgx-h100", gpus=4), "all_reduce", 1 << 30).rows[0]
    assert rows[0]["busbw"] == pytest.approx(api_row.busbw / 1e9, rel=1e-3)


def test_types_ops_roots_and_memory_cap():
    text, notes = run_binary("all_reduce_perf", ["-b", "1M", "-e", "1M", "-g", "8", "-o", "all", "-d", "all"], H100)
    rows, _ = plain_parse(text)
    assert len(rows) == 12 * 5 and {r["redop"] for r in rows} == {"sum", "prod", "max", "min", "avg"}
    assert any("mulsum" in n for n in notes)
    rows, _ = plain_parse(run_binary("broadcast_perf", ["-b", "1M", "-e", "1M", "-g", "8", "-r", "all"], H100)[0])
    assert [r["root"] for r in rows] == list(range(8))
    text, _ = run_binary("all_reduce_perf", ["-b", "1G", "-e", "64G", "-f", "4", "-g", "8"], H100)
    cap = int((80e9 - (1 << 30)) / 3)  # H100 80 GB, -c 1: send + recv + expected buffers and 1 GiB spare
    assert f"# Reducing maxBytes to {cap} due to memory limitation" in text
    assert max(r["size"] for r in plain_parse(text)[0]) <= cap


def test_nccl_tests_flags_parse_like_getopt():
    a = parse_args(["-b8", "--maxbytes=8G", "-f", "2", "-g8", "-c", "0", "-J", "x.json", "-w", "5"])
    assert (a.minbytes, a.maxbytes, a.stepfactor, a.ngpus, a.check, a.output_file, a.warmup_iters) == \
        (8, 8 << 30, 2, 8, 0, "x.json", 5)
    for bad, match in [(["-q", "1"], "unknown option"), (["-b"], "needs a value"), (["-g", "x"], "not an integer"),
                       (["-b", "9", "-e", "8"], "invalid sizes")]:
        with pytest.raises(FabricsimError, match=match):
            parse_args(bad)


def test_cli_and_installed_shims(tmp_path, capsys):
    assert main(["nccl-tests", "install", str(tmp_path)]) == 0
    shim = tmp_path / "all_reduce_perf"
    assert os.access(shim, os.X_OK) and "fabricsim nccl-tests shim" in shim.read_text()
    out = subprocess.run([str(shim), "-b", "1M", "-e", "1M", "-g", "8"], capture_output=True, text=True,
                         env={**os.environ, **H100}, check=True).stdout
    assert "SIMULATED by fabricsim" in out and len(plain_parse(out)[0]) == 1
    assert main(["nccl-tests", "install", str(tmp_path)]) == 0  # rewriting its own shims is fine
    (tmp_path / "sendrecv_perf").write_bytes(b"\x7fELF real binary")
    capsys.readouterr()
    assert main(["nccl-tests", "install", str(tmp_path)]) == 2
    assert "is not a fabricsim shim" in capsys.readouterr().err


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["-b", "-e", "-f", "-g", "-t", "-c", "-o", "-d", "-J", "--minbytes=1K", "-q", "8",
                                 "8G", "x", "-1", "all", "--iters", "0"]), max_size=8))
def test_flag_parser_only_raises_fabricsim_errors(argv):
    try:
        parse_args(argv)
    except FabricsimError:
        pass


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_IB_HCA",
                                        "NCCL_NET_GDR_LEVEL", "NCCL_COLLNET_ENABLE", "NCCL_MAX_NCHANNELS",
                                        "NCCL_MIN_CTAS", "NCCL_MAX_CTAS"]),
                       st.text(alphabet="RingTreLL128^,:;NVS0123 mlx5_", max_size=12), max_size=3))
def test_env_parser_only_raises_fabricsim_errors(env):
    from fabricsim.nccltests.env import apply_env
    from fabricsim.topology import load_spec

    try:
        apply_env(load_spec("dgx-h100", nodes=2), "all_reduce", env)
    except FabricsimError:
        pass

"""`fabricsim perf`: nccl-tests layout, JSON/CSV, forced choices, NCCL's model, clear errors."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.main import main
from fabricsim.reports.sweep import sizes
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_log import parse_nccl_tests


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_table_has_nccl_tests_layout_and_parses_back(capsys):
    rc, out, _ = run(capsys, "perf", "all_reduce", "--cluster", "dgx-h100", "-b", "1M", "-e", "64M", "-f", "4")
    assert rc == 0
    assert "#       size         count      type   redop    root     time   algbw   busbw  #wrong" in out
    assert "# Avg bus bandwidth" in out
    log = parse_nccl_tests(out)
    assert [r.size_bytes for r in log.rows] == [1 << 20, 1 << 22, 1 << 24, 1 << 26]
    assert all(r.out_of_place.busbw > 0 and r.redop == "sum" and r.root == -1 for r in log.rows)
    busbw = [r.out_of_place.busbw for r in log.rows]
    assert busbw == sorted(busbw), "bus bandwidth grows with size on one node"


def test_json_has_the_documented_keys(capsys):
    rc, out, _ = run(capsys, "perf", "all_gather", "-c", "dgx-h100", "-b", "8M", "-e", "8M", "--format", "json")
    assert rc == 0
    rows = json.loads(out)["rows"]
    assert len(rows) == 1
    for key in ("size_bytes", "count", "type", "redop", "time_us", "algbw_GBps", "busbw_GBps", "algo", "proto", "channels"):
        assert key in rows[0]
    assert rows[0]["size_bytes"] == 8 << 20 and rows[0]["count"] == (8 << 20) // 4 // 8  # AG size is the total output


def test_forced_algorithm_and_protocol_are_used(capsys):
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1M", "-e", "1M", "--algo", "ring",
                     "--proto", "ll128", "--format", "json")
    assert rc == 0
    row = json.loads(out)["rows"][0]
    assert (row["algo"], row["proto"]) == ("ring", "ll128")


def test_nccl_model_and_explain(capsys):
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "1G", "--cost-model", "nccl", "--format", "json")
    assert rc == 0 and json.loads(out)["rows"][0]["algo"] == "nvls"  # spelled as fabricsim's own rows
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1K", "-e", "1G", "-f", "1024", "--explain")
    assert rc == 0 and "# explain" in out and "nccl model" in out


def test_multi_node_ring_uses_every_nic(capsys):
    """A ring over 2 DGX H100 crosses nodes on all 8 NDR rails: bus bandwidth far above one NIC's 48 GB/s."""
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "4G", "-e", "4G", "--algo", "ring",
                     "--format", "json")
    assert rc == 0
    assert json.loads(out)["rows"][0]["busbw_GBps"] > 300


@pytest.mark.parametrize("args,needle", [
    (("perf", "all_reduce", "-c", "no-such-cluster"), "unknown cluster"),
    (("perf", "all_reduce", "-c", "dgx-h100", "-b", "-4"), "invalid size"),
    (("perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "1M"), "smaller than -b"),
    (("perf", "broadcast", "-c", "dgx-h100", "-r", "8"), "root 8 is outside"),
    (("perf", "all_reduce", "-c", "dgx-h100", "--algo", "collnet_direct"), "set 'sharp: true'"),
    (("perf", "all_reduce", "-c", "dgx-h100", "--algo", "pat"), "does not apply"),
    (("perf", "all_reduce", "-c", "dgx-h100", "--algo", "nvls", "--proto", "ll"), "LL and LL128 exist only"),
])
def test_bad_input_is_one_clear_line(capsys, args, needle):
    rc, out, err = run(capsys, *args)
    assert rc == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_size_sweep_follows_nccl_tests():
    assert sizes(8, 64, 2.0, None) == [8, 16, 32, 64]
    assert sizes(100, 350, None, 100) == [100, 200, 300]
    with pytest.raises(FabricsimError):
        sizes(8, 64, 2.0, 8)


def test_trace_is_perfetto_json(capsys, tmp_path):
    path = tmp_path / "trace.json"
    rc, _, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "64M", "-f", "8",
                   "--trace", str(path))
    assert rc == 0
    events = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)


def test_algo_exclusion_as_nccl_algo_caret(capsys):
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "1G", "--algo", "^nvls",
                     "--format", "json")
    assert rc == 0 and json.loads(out)["rows"][0]["algo"] in ("ring", "tree")


def test_routing_override_reaches_the_engine(capsys, tmp_path):
    """--routing adaptive spreads flows over every fat-tree path: never slower than one hashed path each (32 nodes at
    2:1: 7 leaves of at most 5 nodes, 4 spines, so hashed flows collide)."""
    import dataclasses

    from fabricsim.topology import load_spec, save_cluster

    path = tmp_path / "flat.yaml"
    save_cluster(dataclasses.replace(load_spec("superpod-h100", nodes=32), rail_optimized=False, su_nodes=8,
                                     oversubscription=2.0), path)
    args = ("perf", "alltoall", "-c", str(path), "-b", "256M", "-e", "256M", "--level", "analytical", "--format", "json")
    rc1, ecmp, _ = run(capsys, *args)
    rc2, adaptive, _ = run(capsys, *args, "--routing", "adaptive")
    assert rc1 == rc2 == 0
    assert json.loads(adaptive)["rows"][0]["busbw_GBps"] > json.loads(ecmp)["rows"][0]["busbw_GBps"]


@pytest.mark.parametrize("args,match", [
    (("-b", "8", "-e", "64", "-f", "nan"), "finite number"),
    (("-b", "8", "-e", "99999999999999999999999"), "256 TiB"),
    (("-b", "1M", "-e", "1M", "--algo", "^ring,tree,nvls"), "excludes every algorithm"),
    (("-b", "1M", "-e", "1M", "--proto", "^ll,ll128,simple"), "some, not all"),
    (("-b", "1M", "-e", "1M", "--cost-model", "nccl", "--explain"), "drop --cost-model nccl"),
    (("-b", "64M", "-e", "64M", "-o", "prod", "--algo", "nvls"), "NVLS cannot reduce prod on float"),
])
def test_bad_perf_inputs_are_one_clear_error(capsys, args, match):
    rc, out, err = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", *args)
    assert rc == 2 and err.startswith("error: ") and match in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra", [("-o", "prod"), ("-o", "avg"), ("-d", "int8"), ("-d", "f8e4m3"), ("-o", "max", "-d", "float")])
def test_nvls_only_for_the_reductions_the_nvswitch_does(capsys, extra):
    """NCCL's NVLS reduces sum/min/max on 32/64-bit integers, half, bfloat16 and sum on float/double only."""
    base = ("perf", "all_reduce", "-c", "dgx-h100", "-b", "64M", "-e", "64M", "--format", "json")
    rc, out, _ = run(capsys, *base, *extra)
    assert rc == 0 and json.loads(out)["rows"][0]["algo"] != "nvls"
    rc, out, _ = run(capsys, *base, *extra, "--cost-model", "nccl")
    assert rc == 0 and json.loads(out)["rows"][0]["algo"] not in ("NVLS", "NVLSTree")
    rc, out, _ = run(capsys, *base, "-o", "max", "-d", "bfloat16")
    assert json.loads(out)["rows"][0]["algo"] == "nvls"


def test_sizes_below_one_element_move_nothing(capsys):
    for model in ("fabricsim", "nccl"):
        rc, out, _ = run(capsys, "perf", "alltoall", "-c", "dgx-h100", "-b", "1", "-e", "2", "--cost-model", model, "--format", "json")
        rows = json.loads(out)["rows"]
        assert rc == 0 and all(r["size_bytes"] == 0 and r["time_us"] == 0 for r in rows)


def test_all_to_all_beyond_the_listing_limit_is_timed_by_symmetry(capsys):
    rc, out, _ = run(capsys, "perf", "alltoall", "-c", "superpod-h100", "--gpus", "2048", "-b", "64M", "-e", "1G", "-f", "16")
    assert rc == 0 and "routed and the rest follow by symmetry" in out
    log = parse_nccl_tests(out)
    assert [r.size_bytes for r in log.rows] == [64 << 20, 1 << 30]
    assert all(40 < r.out_of_place.busbw < 50 for r in log.rows)  # one 400G NIC per GPU
    rc, _, err = run(capsys, "perf", "alltoall", "-c", "superpod-h100", "--gpus", "2048", "-b", "1G", "-e", "1G",
                     "--algo", "pairwise")
    assert rc != 0 and "pairwise" in err and "Traceback" not in err


@pytest.mark.parametrize("gpus", ["512", "1024"])
def test_adaptive_routing_is_not_slower_than_ecmp(capsys, gpus):
    """Issue 12 item 3: spraying over every equal-cost uplink of a non-blocking tree never loses to one hashed path."""
    busbw = {}
    for routing in ("ecmp", "adaptive"):
        rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "superpod-h100", "--gpus", gpus, "-b", "1G", "-e", "1G",
                         "--routing", routing, "--format", "json")
        assert rc == 0
        busbw[routing] = json.loads(out)["rows"][0]["busbw_GBps"]
    assert busbw["adaptive"] >= busbw["ecmp"] * (1 - 1e-9)


def _busbw(capsys, *args) -> float:
    rc, out, _ = run(capsys, "perf", *args, "-b", "1G", "-e", "1G", "--format", "json")
    assert rc == 0
    return json.loads(out)["rows"][0]["busbw_GBps"]


@pytest.mark.parametrize("collective,extra", [("broadcast", ()), ("broadcast", ("-r", "3")), ("reduce", ())])
@pytest.mark.parametrize("cluster", [("-c", "dgx-h100", "--nodes", "2"), ("-c", "dgx-a100", "--nodes", "2")])
def test_broadcast_and_reduce_across_nodes_use_every_nic(capsys, collective, extra, cluster):
    """Issue 12 item 1: Broadcast/Reduce chains follow the rings' channels, which leave each node on different NICs:
    as fast as all_gather on the same nodes (not 47.8 GB/s through gpu0's PCIe link and NIC on 2 DGX H100)."""
    bus = _busbw(capsys, collective, *cluster, *extra)
    gather = _busbw(capsys, "all_gather", *cluster)
    assert bus >= 0.9 * gather
    nic = 48.0 if cluster[1] == "dgx-h100" else 24.0  # one NIC's GPU-side PCIe link, as NCCL counts it
    assert bus > 4 * nic


def test_a_message_larger_than_hbm_is_reduced_as_nccl_tests_does_and_says_so(capsys):
    """Issue 12 item 6: `-e 256T` on 80 GB GPUs ran without a word. nccl-tests reduces maxBytes to what its send,
    receive and check buffers fit in (src/common.cu); fabricsim does the same, warns on stderr naming HBM and prints
    nccl-tests' own 'Reducing maxBytes' line."""
    from fabricsim.hardware import get_gpu
    from fabricsim.hardware.memory import nccltests_max_bytes

    limit = nccltests_max_bytes(get_gpu("H100"))
    rc, out, err = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "256T", "-f", "4")
    assert rc == 0
    assert "HBM" in err and "H100" in err and "warning" in err
    assert f"# Reducing maxBytes to {limit} due to memory limitation" in out
    sizes_run = [r.size_bytes for r in parse_nccl_tests(out).rows]
    assert max(sizes_run) <= limit and sizes_run[0] == 1 << 30
    rc, out, err = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "-b", "1G", "-e", "1G")
    assert rc == 0 and err == "" and "Reducing" not in out


def test_nccl_version_selects_that_releases_rules_and_the_header_says_which(capsys):
    """NCCL 2.17 has no NVLSTree (2.18.1): two H100 nodes get other picks; the default is the newest modelled."""
    args = ("perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "-b", "1G", "-e", "1G")
    rc, out, _ = run(capsys, *args, "--nccl-version", "2.17")
    assert rc == 0 and "NCCL 2.17.1 rules" in out.splitlines()[0]
    assert parse_nccl_tests(out).rows[0].extra.get("algo") != "nvls_tree"
    rc, out, _ = run(capsys, *args, "--format", "json")
    assert rc == 0 and json.loads(out)["nccl"] == "NCCL 2.30.7" and json.loads(out)["rows"][0]["algo"] == "nvls_tree"
    rc, _, err = run(capsys, *args, "--nccl-version", "2.16", "--algo", "nvls_tree")
    assert rc == 2 and "NCCL 2.16.5 has no nvls_tree" in err and "Traceback" not in err
    rc, _, err = run(capsys, "perf", "all_reduce", "-c", "dgx-b200", "--nccl-version", "2.20")
    assert rc == 2 and "compute capability 10.0" in err

"""A run on part of a node (nccl-tests' `-g 2` / `-g 4` on an 8-GPU server) through the CLI: the node is built
whole, the communicator uses the first GPUs; with --nodes, the GPUs spread evenly over the nodes."""

from __future__ import annotations

import json

from fabricsim.cli.main import main
from fabricsim.reports.nccltests_log import parse_nccl_tests


def run(capsys, *args):
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topo_show_a_partial_node(capsys):
    rc, out, err = run(capsys, "topo", "show", "dgx-h100", "--gpus", "4")
    assert rc == 0 and err == ""
    assert "ranks used            4 of 8 (ranks 0-3); the figures below are the whole cluster's hardware" in out
    rc, out, _ = run(capsys, "topo", "show", "dgx-h100", "--gpus", "4", "--json")
    doc = json.loads(out)
    assert (doc["gpus"], doc["ranks_used"], doc["ranks"]) == (8, 4, "0-3")


def test_topo_save_a_partial_node_saves_the_whole_node_and_says_so(capsys, tmp_path):
    path = tmp_path / "c.yaml"
    rc, out, err = run(capsys, "topo", "save", "dgx-h100", "--gpus", "4", "-o", str(path))
    assert rc == 0 and out == f"wrote {path}\n"
    assert err == f"note: {path} holds the whole hardware (8 GPUs); a run on ranks 0-3 of it is --gpus 4\n"


def test_perf_on_four_gpus_of_a_dgx(capsys):
    rc, out, _ = run(capsys, "perf", "all_gather", "-c", "dgx-h100", "--gpus", "4", "-b", "64M", "-e", "64M")
    assert rc == 0
    assert out.startswith("# fabricsim perf all_gather on dgx-h100: 4 of 8 GPUs (ranks 0-3), cost model fabricsim")
    log = parse_nccl_tests(out)
    assert log.nranks == 4 and log.rows[0].count == (64 << 20) // 4 // 4
    rc, out, _ = run(capsys, "perf", "all_gather", "-c", "dgx-h100", "--gpus", "4", "-b", "64M", "-e", "64M",
                     "--cost-model", "nccl", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and (doc["gpus"], doc["cluster_gpus"], doc["level"]) == (4, 8, None)


def test_perf_on_four_gpus_of_each_of_two_nodes(capsys):
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "--nodes", "2", "--gpus", "8", "-b", "1G",
                     "-e", "1G", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and (doc["gpus"], doc["ranks"]) == (8, "0-3,8-11")


def test_compare_a_two_gpu_log_on_an_eight_gpu_preset(capsys, tmp_path):
    rc, out, _ = run(capsys, "perf", "all_reduce", "-c", "dgx-h100", "--gpus", "2", "-b", "1M", "-e", "256M", "-f", "16")
    log = tmp_path / "two.log"
    log.write_text(out)
    rc, out, err = run(capsys, "compare", str(log), "-c", "dgx-h100")
    assert rc == 2 and err == (f"error: the log ran on 2 ranks but dgx-h100 has 8 GPUs: use --gpus 2\n")
    rc, out, _ = run(capsys, "compare", str(log), "-c", "dgx-h100", "--gpus", "2", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["gpus"] == 2 and doc["summary"]["median_abs_pct"] < 0.1  # its own prediction, as printed

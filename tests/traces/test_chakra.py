"""Chakra ET traces generated with protobuf, replayed on a cluster; communication timed as `perf` times it."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("google.protobuf")

from fabricsim.cli.main import main  # noqa: E402
import fabricsim as fs  # noqa: E402
from fabricsim.errors import FabricsimError  # noqa: E402
from fabricsim.topology import load_cluster  # noqa: E402
from fabricsim.traces import run_chakra  # noqa: E402
from fabricsim.traces.chakra import read_messages, write_messages  # noqa: E402
from fabricsim.traces.chakra_schema import COLL_TYPES, messages  # noqa: E402

M = messages()
BUCKET = 100 << 20  # 100 MiB gradient buckets (bytes)
LAYERS = 4


def _node(nid, name, kind, deps=(), ctrl=(), dur_us=0, **attrs):
    n = M["Node"](id=nid, name=name, type=kind, data_deps=list(deps), ctrl_deps=list(ctrl), duration_micros=dur_us)
    for key, value in attrs.items():
        a = n.attr.add(name=key)
        if isinstance(value, bool):
            a.bool_val = value
        elif isinstance(value, int):
            a.int64_val = value
        else:
            a.string_val = value
    return n


def dp_step(tmp_path, ranks=16, name="dp"):
    """A data-parallel step per rank: forward per layer, backward per layer from the last, an all-reduce of each
    layer's gradient bucket after its backward, the optimizer after every all-reduce."""
    coll = COLL_TYPES.index("ALL_REDUCE")
    for r in range(ranks):
        nodes, nid = [], 0
        prev = None
        for layer in range(LAYERS):
            nodes.append(_node(nid, f"fwd{layer}", 4, deps=[prev] if prev is not None else [], dur_us=1000))
            prev, nid = nid, nid + 1
        reduces = []
        for layer in reversed(range(LAYERS)):
            nodes.append(_node(nid, f"bwd{layer}", 4, deps=[prev], dur_us=2000))
            prev, nid = nid, nid + 1
            nodes.append(_node(nid, f"allreduce_grad{layer}", 7, deps=[prev], comm_type=coll, comm_size=BUCKET,
                               pg_name="0"))
            reduces.append(nid)
            nid += 1
        nodes.append(_node(nid, "optimizer", 4, deps=reduces, ctrl=[prev], dur_us=500))
        write_messages(tmp_path / f"{name}.{r}.et", M["GlobalMetadata"](version="0.0.4"), nodes)
    return str(tmp_path / name)


def test_round_trip_of_the_file_format(tmp_path):
    prefix = dp_step(tmp_path, ranks=1)
    meta, nodes = read_messages(tmp_path / "dp.0.et")
    assert meta.version == "0.0.4" and len(nodes) == 2 * LAYERS + LAYERS + 1
    assert nodes[LAYERS + 1].attr[1].name == "comm_size" and nodes[LAYERS + 1].attr[1].int64_val == BUCKET
    assert prefix.endswith("dp")


def test_data_parallel_step_on_16_ranks_matches_perf(tmp_path):
    topo = load_cluster("dgx-h100", nodes=2)
    rep = run_chakra(dp_step(tmp_path), topo)
    (row,) = fs.perf(fs.cluster("dgx-h100", nodes=2), "all_reduce", [BUCKET]).rows
    (c,) = rep.collectives
    assert (c.collective, c.ranks, c.nbytes, c.calls) == ("all_reduce", 16, BUCKET, LAYERS)
    assert c.time == row.time_s and (c.algo, c.proto, c.channels) == (row.algo, row.proto, row.channels)
    t = row.time_s
    for r in rep.ranks:
        assert r.comm == pytest.approx(LAYERS * t, rel=1e-12)  # the buckets run back to back on the DP stream
    # hand timeline: forward 4 ms, backward 2 ms per layer; bucket k starts when backward k ends or the previous
    # bucket ends, whichever is later; the optimizer (0.5 ms) runs after the last bucket.
    bwd_end = [4e-3 + 2e-3 * (k + 1) for k in range(LAYERS)]
    end = 0.0
    for k in range(LAYERS):
        end = max(end, bwd_end[k]) + t
    assert rep.step_time == pytest.approx(end + 0.5e-3, rel=1e-12)
    exposed = end - bwd_end[-1]
    assert all(r.exposed_comm == pytest.approx(exposed, rel=1e-9) for r in rep.ranks)
    assert all(r.compute == pytest.approx(4e-3 + LAYERS * 2e-3 + 0.5e-3) for r in rep.ranks)


def test_a_one_rank_group_costs_nccls_local_copy_as_perf_prints_it(tmp_path):
    topo = load_cluster("dgx-h100")
    rep = run_chakra(dp_step(tmp_path, ranks=1), topo)
    (row,) = fs.perf(fs.cluster("dgx-h100", gpus=1), "all_reduce", [BUCKET]).rows
    (c,) = rep.collectives
    assert c.time == row.time_s > 0 and (c.algo, c.proto, c.channels) == (row.algo, row.proto, row.channels)
    assert rep.ranks[0].comm == pytest.approx(LAYERS * row.time_s, rel=1e-12)


def test_compute_from_flops_and_cli_with_perfetto(tmp_path, capsys):
    coll = COLL_TYPES.index("ALL_GATHER")
    for r in range(8):
        nodes = [_node(0, "gemm", 4, num_ops=989_400_000_000_000),  # 1 s at H100 dense BF16 peak (989.4 TFLOP/s)
                 _node(1, "gather_params", 7, deps=[0], comm_type=coll, comm_size=8 << 20)]
        write_messages(tmp_path / f"ag.{r}.et", M["GlobalMetadata"](version="0.0.4"), nodes)
    out = tmp_path / "trace.json"
    assert main(["trace", "run", str(tmp_path / "ag"), "--cluster", "dgx-h100", "--efficiency", "0.5",
                 "--perfetto", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == 8 and doc["per_rank"][0]["compute"] == pytest.approx(2.0)
    (row,) = fs.perf("dgx-h100", "all_gather", [8 << 20]).rows
    assert doc["collectives"][0]["time"] == row.time_s
    events = json.loads(out.read_text())["traceEvents"]
    assert {e["args"]["kind"] for e in events if e["ph"] == "X"} == {"comp", "coll"}
    assert main(["trace", "run", str(tmp_path / "ag"), "--cluster", "dgx-h100"]) == 0
    assert "step time" in capsys.readouterr().out


def test_two_groups_and_send_recv(tmp_path):
    # 4 ranks: tensor-parallel pairs {0,1} and {2,3} all-reduce on their own group; rank 1 sends to rank 2.
    ar = COLL_TYPES.index("ALL_REDUCE")
    for r in range(4):
        g = "tp0" if r < 2 else "tp1"
        nodes = [_node(0, "mlp", 4, dur_us=100), _node(1, "tp_ar", 7, deps=[0], comm_type=ar, comm_size=1 << 20,
                                                      pg_name=g)]
        if r == 1:
            nodes.append(_node(2, "send_act", 5, deps=[1], comm_dst=2, comm_size=4 << 20))
        if r == 2:
            nodes.append(_node(2, "recv_act", 6, deps=[1], comm_src=1, comm_size=4 << 20))
        write_messages(tmp_path / f"pp.{r}.et", M["GlobalMetadata"](version="0.0.4"), nodes)
    rep = run_chakra(str(tmp_path / "pp"), load_cluster("dgx-h100"))
    groups = {(c.group, c.ranks) for c in rep.collectives}
    assert groups == {("tp0", 2), ("tp1", 2)}
    send = [e for e in rep.events if e.name == "send_act"][0]
    recv = [e for e in rep.events if e.name == "recv_act"][0]
    assert (send.start, send.end) == (recv.start, recv.end) and send.collective == "sendrecv"
    assert any("timed alone" in n for n in rep.notes)


@pytest.mark.parametrize("edit, match", [
    (lambda nodes, r: nodes[1].attr[1].__setattr__("int64_val", 123 if r == 3 else 1 << 20), "out of step"),
    (lambda nodes, r: nodes[1].data_deps.append(99), "depends on node 99"),
    (lambda nodes, r: nodes[1].attr[0].__setattr__("int64_val", COLL_TYPES.index("GATHER")), "GATHER is not supported"),
])
def test_bad_traces_are_one_clear_error(tmp_path, edit, match):
    ar = COLL_TYPES.index("ALL_REDUCE")
    for r in range(4):
        nodes = [_node(0, "x", 4, dur_us=10), _node(1, "ar", 7, deps=[0], comm_type=ar, comm_size=1 << 20)]
        edit(nodes, r)
        write_messages(tmp_path / f"bad.{r}.et", M["GlobalMetadata"](version="0.0.4"), nodes)
    with pytest.raises(FabricsimError, match=match):
        run_chakra(str(tmp_path / "bad"), load_cluster("dgx-h100"))


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(FabricsimError, match="no Chakra ET files"):
        run_chakra(str(tmp_path / "none"), load_cluster("dgx-h100"))
    dp_step(tmp_path, ranks=2, name="cut")
    data = (tmp_path / "cut.1.et").read_bytes()
    (tmp_path / "cut.1.et").write_bytes(data[:-3])
    with pytest.raises(FabricsimError, match="cut short"):
        run_chakra(str(tmp_path / "cut"), load_cluster("dgx-h100"))
    (tmp_path / "gap.0.et").write_bytes(b"")
    (tmp_path / "gap.2.et").write_bytes(b"")
    with pytest.raises(FabricsimError, match="ranks 1 have no file"):
        run_chakra(str(tmp_path / "gap"), load_cluster("dgx-h100"))

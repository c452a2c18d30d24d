"""Perfetto / Chrome trace export."""

import json

from fabricsim.engine import simulate, to_perfetto
from fabricsim.schedules import build_schedule
from fabricsim.topology import load_cluster


def test_trace_is_valid_json_with_steps_ranks_and_links(tmp_path):
    topo = load_cluster("dgx-h100")
    r = simulate(topo, build_schedule("all_reduce", "ring", 8), 1 << 24)
    data = json.loads(to_perfetto(r, tmp_path / "t.json").read_text())
    ev = data["traceEvents"]
    steps = [e for e in ev if e["ph"] == "X" and e["pid"] == 1]
    flows = [e for e in ev if e["ph"] == "X" and e["pid"] == 2]
    links = [e for e in ev if e["ph"] == "X" and e["pid"] >= 10]
    assert len(steps) == 14  # 2(n-1) ring steps
    assert len(flows) == 14 * 8 and {e["tid"] for e in flows} == set(range(8))
    assert links and all(e["dur"] >= 0 and "ts" in e for e in steps + flows + links)
    assert abs(steps[-1]["ts"] + steps[-1]["dur"] - r.time * 1e6) < 1e-6
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] >= 10}
    assert any("nvswitch" in n for n in names)

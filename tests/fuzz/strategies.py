"""Hypothesis strategies shared by the fuzz tests: YAML / JSON values and text edits of valid inputs."""

from __future__ import annotations

import json

import yaml
from hypothesis import strategies as st

from fabricsim import hardware
from fabricsim.topology.spec import FABRICS, HOST_CPUS, ROUTINGS, SCALEUPS

# Words a valid file uses, so edits often stay valid and reach the checks behind parsing.
WORDS = [*hardware.GPUS, *hardware.NICS, *hardware.SWITCHES, *SCALEUPS, *FABRICS, *HOST_CPUS, *ROUTINGS, "auto"]

# Spellings YAML reads in surprising ways, and values at the edges of every range.
YAML_TOKENS = [".nan", ".NaN", ".inf", "-.inf", "4e2", "1e400", "-1e308", "1e308", "0x10", "0o17", "1_000", "~",
               "null", "yes", "no", "on", "off", "2024-01-01", "12:30:00", "[", "]", "{", "{a: 1}", "[1, 2]", "&a 1",
               "*a", "!!binary aGk=", "!!python/object:os.system", "'quoted'", '"\\u0000"', "-", "? x", "!!int 3",
               "!!float x", "<<: {a: 1}", "0", "-1", "32767", "32768", "2147483648", "9223372036854775808",
               "1" + "0" * 400, "0.1", "-0.0", "''", '""', "|\n  text", ">", "%YAML 1.1", "---", "...", "@", "`"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30) | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


@st.composite
def yaml_value(draw) -> str:
    """One YAML value as text: a dumped Python value, an edge token, or nesting up to 1,200 levels deep."""
    kind = draw(st.integers(0, 13))
    if kind < 3:
        return yaml.safe_dump(draw(json_values), default_flow_style=True, width=1 << 30).strip().removesuffix("\n...")
    if kind < 7:
        return str(draw(st.integers(0, 80) | st.sampled_from([128, 144, 256, 576, 1024, 4096, 65536, 2097152])))
    if kind == 7:
        return draw(st.sampled_from(["0.5", "1.0", "1.5", "2.0", "3.0", "100.0", "200.0", "400.0", "800.0", "1e-300"]))
    if kind < 10:
        return draw(st.sampled_from(WORDS))
    if kind < 13:
        return draw(st.sampled_from(YAML_TOKENS))
    depth = draw(st.sampled_from([3, 50, 500, 999, 1200]))
    return "[" * depth + "]" * depth


@st.composite
def edited_yaml(draw, base: str, fields: list[str]) -> str:
    """`base` (a valid mapping, one 'key: value' per line) with a few lines replaced, dropped, added or garbled."""
    lines = base.splitlines()
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        action = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4, 5]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        key = draw(st.sampled_from(fields) | st.sampled_from(["null", "2.5", "~", "true", "[1]", "{a: 1}", "bogus"])
                   | st.text(max_size=8))
        if action == 0 and lines:
            lines[i] = f"{lines[i].split(':', 1)[0]}: {draw(yaml_value())}"
        elif action == 1 and lines:
            del lines[i]
        elif action == 2:
            lines.insert(i, f"{key}: {draw(yaml_value())}")
        elif action == 3:
            lines.insert(i, draw(st.text(max_size=30)))
        elif action == 4 and lines:
            lines[i] = "  " * draw(st.integers(1, 3)) + lines[i]
        else:
            lines.append(f"{key}:")
    return "\n".join(lines) + draw(st.sampled_from(["\n", "\n", "\n", "", "\n---\nname: x\n"]))


LOG_TOKENS = ["N/A", "nan", "-nan", "inf", "-inf", "1e308", "1e400", "-1", "0", "0.00", "1" + "0" * 40, "abc", "#",
              "-1e-5", "2147483648", "9" * 20, "float", "sum", "int8", "bogus", "[1,0]<stdout>:", "1:", "", "\x00",
              "time", "busbw", "algbw", "size", "count", "#wrong", "e", "0x10"]
LOG_LINES = ["#  Rank 99 Group  0 Pid 1 on host device 0 [0x18] NVIDIA H100", "# Collective test starting: bogus_perf",
             "# Collective test starting: all_gather_perf",
             "# nccl-tests version 2.19.6 nccl-headers=99999 nccl-library=1", "# Avg bus bandwidth    : nan",
             "# Avg bus bandwidth    : 1e400", "#  size  count", "host: NCCL INFO nRanks 0",
             "host: NCCL INFO NCCL version 2.99.99", "#       size         count      type   redop    root     time",
             "  1048576 262144 float sum -1 1 2 3 0 1 2 3 0", "  0 0 float sum -1 0 0 0 0 0 0 0 0"]


@st.composite
def edited_log(draw, base: str) -> str:
    """An nccl-tests text log with tokens replaced and lines dropped, repeated or added."""
    lines = base.splitlines()
    for _ in range(draw(st.integers(0, 6))):
        action = draw(st.integers(0, 4))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if action <= 1 and lines:
            tokens = lines[i].split()
            if tokens:
                tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(LOG_TOKENS) | st.text(max_size=6))
                lines[i] = "  ".join(tokens)
        elif action == 2 and lines:
            del lines[i]
        elif action == 3 and lines:
            lines.insert(i, lines[draw(st.integers(0, len(lines) - 1))])
        else:
            lines.insert(i, draw(st.sampled_from(LOG_LINES) | st.text(max_size=40)))
    return "\n".join(lines) + "\n"


@st.composite
def edited_json(draw, base: str) -> str:
    """A JSON document with a few values replaced by arbitrary JSON (NaN and huge numbers included)."""
    doc = json.loads(base)
    for _ in range(draw(st.integers(0, 4))):
        node = doc
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                if isinstance(node, dict):
                    node[draw(st.text(max_size=6))] = draw(json_values)
                break
            key = draw(st.sampled_from(keys))
            if isinstance(node[key], (dict, list)) and draw(st.booleans()):
                node = node[key]
                continue
            node[key] = draw(json_values)
            break
    return json.dumps(doc)


_few = st.integers(0, 20) | st.sampled_from([32, 64, 72, 128, 4096])


@st.composite
def cluster_fields(draw) -> dict:
    """Cluster fields each inside its own range, mostly consistent (domains of whole nodes, chips where NVSwitch
    is), so most reach the cross-field checks and the builder."""
    d = draw(st.fixed_dictionaries(dict(
        name=st.just("fuzz"), gpu=st.sampled_from(list(hardware.GPUS)), nodes=st.integers(1, 20),
        gpus_per_node=st.integers(1, 16), scaleup=st.sampled_from(SCALEUPS), nics_per_node=_few,
        nic=st.sampled_from([*hardware.NICS, ""]), nic_gbps=st.sampled_from([0.0, 100.0, 200.0, 400.0, 800.0, 1e-300]),
        fabric=st.sampled_from(FABRICS), levels=st.sampled_from([1, 2, 3, "auto"]),
        oversubscription=st.sampled_from([1e-9, 0.5, 1.0, 3.0, 1000.0]), rail_optimized=st.booleans(),
        sharp=st.booleans(), gpudirect=st.booleans(), nvls=st.booleans(), pcie_switches_per_node=_few,
        pcie_switch=st.sampled_from([*hardware.SWITCHES, ""]), p2p=st.booleans(), su_nodes=st.integers(1, 40),
        leaf_switch=st.sampled_from([*hardware.SWITCHES, ""]), spine_switch=st.sampled_from([*hardware.SWITCHES, ""]),
        nvswitch_chips=_few, cpus_per_node=st.integers(1, 4), host_cpu=st.sampled_from(HOST_CPUS),
        routing=st.sampled_from(ROUTINGS))))
    d["domain_size"] = d["gpus_per_node"] * (d["nodes"] if d["scaleup"] == "nvl72" else 1)
    if d["scaleup"] in ("nvswitch", "nvl72") and not d["nvswitch_chips"]:
        d["nvswitch_chips"] = draw(st.integers(1, 18))
    return d

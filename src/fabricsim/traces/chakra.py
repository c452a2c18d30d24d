"""Chakra ET files -> plain per-rank node lists (and back, for generating traces).

An ET file is a stream of length-delimited protobuf messages (each preceded by its size as a base-128
varint, as Chakra's protolib encode_message / decode_message write them): one GlobalMetadata, then Nodes.
A set of files `PREFIX.0.et, PREFIX.1.et, ...` holds one rank each (Chakra's converters and ASTRA-sim's
workload naming). Attributes read (the names Chakra's converters write and ASTRA-sim's feeder reads):
comm_type (CollectiveCommType), comm_size (bytes), pg_name (process group), comm_src / comm_dst / comm_tag
(send / recv), num_ops (FLOPs of a compute node), is_cpu_op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.traces.chakra_schema import COLL_TYPES, NODE_TYPES, messages

# CollectiveCommType -> fabricsim collective (None: not timed by fabricsim; BARRIER: a one-element all-reduce,
# as torch.distributed.barrier runs on NCCL).
COLLECTIVE = {"ALL_REDUCE": "all_reduce", "REDUCE": "reduce", "ALL_GATHER": "all_gather", "BROADCAST": "broadcast",
              "ALL_TO_ALL": "alltoall", "REDUCE_SCATTER": "reduce_scatter", "REDUCE_SCATTER_BLOCK": "reduce_scatter",
              "BARRIER": "all_reduce", "GATHER": None, "SCATTER": None}


@dataclass(frozen=True)
class TraceNode:
    """One node of one rank, plain data. kind: 'comp' | 'cpu' | 'coll' | 'send' | 'recv' | 'other'."""

    rank: int
    id: int
    name: str
    kind: str
    deps: tuple[int, ...]
    duration_s: float  # recorded duration (0 where the trace has none)
    flops: float = 0.0
    collective: str = ""
    nbytes: int = 0
    group: str = ""
    peer: int = -1
    tag: int = 0
    node_type: str = ""


def _attrs(node) -> dict:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        if which is None:
            continue
        v = getattr(a, which)
        out[a.name] = list(v.values) if which.endswith("_list") else v
    return out


def _varint(data: bytes, pos: int, path: Path) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise FabricsimError(f"{path}: truncated at byte {pos} (a message length runs past the end): the file "
                                 "is cut short; copy it again")
        b = data[pos]
        result |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise FabricsimError(f"{path}: byte {pos}: not a Chakra ET file (bad message length)")


def read_messages(path: Path) -> tuple[object, list]:
    """(GlobalMetadata, [Node, ...]) of one ET file."""
    from google.protobuf.message import DecodeError

    msgs = messages()
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise FabricsimError(f"cannot read {path}: {err.strerror}; check the path") from None
    pos, items = 0, []
    while pos < len(data):
        size, start = _varint(data, pos, path)
        if start + size > len(data):
            raise FabricsimError(f"{path}: message at byte {pos} claims {size} bytes but the file ends first: the "
                                 "file is cut short")
        cls = msgs["GlobalMetadata"] if not items else msgs["Node"]
        msg = cls()
        try:
            msg.ParseFromString(data[start:start + size])
        except DecodeError:
            raise FabricsimError(f"{path}: message {len(items)} at byte {pos} is not a Chakra "
                                 f"{'GlobalMetadata' if not items else 'Node'}: give Chakra ET (.et) files") from None
        items.append(msg)
        pos = start + size
    if not items:
        raise FabricsimError(f"{path}: empty file: a Chakra ET file starts with its GlobalMetadata")
    return items[0], items[1:]


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_messages(path: Path, metadata, nodes) -> None:
    """Write one ET file: GlobalMetadata, then the Nodes, each length-delimited."""
    with open(path, "wb") as f:
        for msg in (metadata, *nodes):
            body = msg.SerializeToString()
            f.write(_varint_bytes(len(body)))
            f.write(body)


def trace_files(prefix: str) -> list[Path]:
    """PREFIX.0.et, PREFIX.1.et, ... (contiguous ranks from 0)."""
    base = Path(prefix)
    found = {}
    pattern = re.compile(re.escape(base.name) + r"\.(\d+)\.et$")
    folder = base.parent if str(base.parent) else Path(".")
    if folder.is_dir():
        for p in folder.iterdir():
            if (m := pattern.match(p.name)):
                found[int(m.group(1))] = p
    if not found:
        raise FabricsimError(f"no Chakra ET files {prefix}.0.et, {prefix}.1.et, ... found: give the prefix the "
                             "files share (one file per rank)")
    missing = [r for r in range(max(found) + 1) if r not in found]
    if missing:
        raise FabricsimError(f"ranks {', '.join(map(str, missing[:8]))} have no file {prefix}.<rank>.et: give every "
                             f"rank's file from 0 to {max(found)}")
    return [found[r] for r in range(len(found))]


def _node(rank: int, node, path: Path) -> TraceNode:
    ntype = NODE_TYPES[node.type] if 0 <= node.type < len(NODE_TYPES) else f"type {node.type}"
    a = _attrs(node)
    deps = tuple(dict.fromkeys([*node.data_deps, *node.ctrl_deps]))
    base = dict(rank=rank, id=int(node.id), name=node.name, deps=deps, duration_s=node.duration_micros * 1e-6,
                node_type=ntype)
    where = f"{path}: node {node.id} '{node.name}'"
    if ntype == "COMP_NODE":
        return TraceNode(kind="cpu" if a.get("is_cpu_op") else "comp", flops=float(a.get("num_ops", 0)), **base)
    if ntype == "COMM_COLL_NODE":
        if "comm_type" not in a:
            raise FabricsimError(f"{where}: a COMM_COLL_NODE without a comm_type attribute")
        ct = int(a["comm_type"])
        name = COLL_TYPES[ct] if 0 <= ct < len(COLL_TYPES) else str(ct)
        coll = COLLECTIVE.get(name)
        if coll is None:
            raise FabricsimError(f"{where}: collective {name} is not supported (fabricsim schedules all-reduce, "
                                 "reduce, all-gather, broadcast, all-to-all, reduce-scatter and barrier)")
        size = 4 if name == "BARRIER" else int(a.get("comm_size", 0))
        if size <= 0:
            raise FabricsimError(f"{where}: {name} without a positive comm_size attribute (bytes)")
        return TraceNode(kind="coll", collective=coll, nbytes=size, group=str(a.get("pg_name", "")), **base)
    if ntype in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
        key = "comm_dst" if ntype == "COMM_SEND_NODE" else "comm_src"
        if key not in a or int(a.get("comm_size", 0)) <= 0:
            raise FabricsimError(f"{where}: a {ntype} needs {key} and a positive comm_size")
        return TraceNode(kind="send" if ntype == "COMM_SEND_NODE" else "recv", peer=int(a[key]),
                         nbytes=int(a["comm_size"]), tag=int(a.get("comm_tag", 0)), **base)
    return TraceNode(kind="other", **base)


def read_trace(prefix: str) -> list[list[TraceNode]]:
    """Every rank's nodes, in file order."""
    out = []
    for rank, path in enumerate(trace_files(prefix)):
        _, nodes = read_messages(path)
        out.append([_node(rank, n, path) for n in nodes])
    return out

"""NCCL_DEBUG=INFO logs (with or without nccl-tests around them): what NCCL found and chose at init.

Lines read (NCCL's own INFO messages, src/init.cc, transport/net_ib.cc, transport.cc, graph/connect.cc;
nccl-tests' `#  Rank N ... on HOST device D [BUS] NAME` lines, src/common.cu):
- `NCCL version 2.20.3+cuda12.2`
- `comm 0x.. rank R nRanks N nNodes M localRanks L localRank l MNNVL 0` (2.19+), or the older
  `comm 0x.. rank R nranks N cudaDev D busId B`
- `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_4:1/RoCE ...` (`/IB/SHARP` where SHARP is offered),
  `NET/Socket : Using ...`, `Using network IB | Socket | AWS Libfabric`,
  `NET/OFI Selected Provider is efa (found 32 nics)`, `NET/OFI NIC group G device #K BUSID`
- `Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA`, `... via P2P/CUMEM`, `... via SHM/direct/direct`
  (`Ring 00 : 3 -> 10 [send] via ...` before 2.5)
- `NVLS multicast support is (not) available on dev D`
- `24 coll channels, 0 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer`
- `NCCL_BUFFSIZE set by environment to 8388608.` (src/misc/param.cc), `Connected all rings, use ring PXN 0 GDR 1`
  (2.19+, src/init.cc), `NET/OFI Internode latency set at 75.0 us` (aws-ofi-nccl), `Using tuner plugin: ...` /
  `... using internal tuner instead.` (src/plugin/tuner.cc), and NCCL_DEBUG_SUBSYS=TUNING's
  `262144 Bytes -> Algo 0 proto 1 time 54.7` (NCCL_ALGO_* / NCCL_PROTO_* numbers, src/include/nccl_common.h)
Other lines are skipped. Several communicators (a training job) are read as the largest one. `scan` keeps, for
each kind of fact, the first lines that said it (number and text), for reports that quote their evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabricsim import hardware
from fabricsim.errors import FabricsimError
from fabricsim.importers.machine import Gpu, Machine, Nic

_MPI_TAG = re.compile(r"^(?:\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?\s?|\s*\d+:\s)")
_INFO = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):\d+ \[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_COMM = re.compile(r"comm 0x[0-9a-f]+ rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)"
                   r"(?: MNNVL (\d))?")
_COMM_OLD = re.compile(r"comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) cudaDev (\d+)")
_IB_USING = re.compile(r"\[(\d+)\]([A-Za-z0-9_.]+):(\d+)/(IB|RoCE)(/SHARP)?")
_OFI = re.compile(r"NET/OFI Selected Provider is (\S+) \(found (\d+) nics\)")
_OFI_GROUP = re.compile(r"NET/OFI NIC group (\d+) device #(\d+) (\S+)")
_VIA = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[\d+\])? -> (\d+)(?:\[\d+\])? (?:\[(send|receive)\] )?"
                  r"via (.+?)\s*$")
_NVLS = re.compile(r"NVLS multicast support is (not )?available on dev (\d+)")
_CHANNELS = re.compile(r"(\d+) coll channels, (?:(\d+) collnet channels, )?")
_NVLS_CHANNELS = re.compile(r"(\d+) nvls channels")
_NET_VIA = re.compile(r"^NET/(?P<net>[^/]+)/(?P<dev>\d+)")  # 'NET/IB/0/GDRDMA', 'NET/AWS Libfabric/5', 'NET/IB/1(7)/GDRDMA'
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\.?\s*$")
_RING_GDR = re.compile(r"Connected all rings, use ring PXN (\d) GDR (\d)")
_OFI_LATENCY = re.compile(r"NET/OFI Internode latency set at ([0-9.]+) us")
_TUNING = re.compile(r"^(?:(\w+): )?(\d+) Bytes -> Algo (\w+) proto (\w+)")
# NCCL_ALGO_* and NCCL_PROTO_* numbers (src/include/nccl_common.h, 2.19+), as TUNING lines print them.
NCCL_ALGO_IDS = {0: "Tree", 1: "Ring", 2: "CollNetDirect", 3: "CollNetChain", 4: "NVLS", 5: "NVLSTree", 6: "PAT"}
NCCL_PROTO_IDS = {0: "LL", 1: "LL128", 2: "Simple"}
_KEEP_LINES = 3  # lines kept per kind of fact
_DEVICE = re.compile(r"^#\s*Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.+?)\s*$")


def _fail(i: int, line: str, what: str) -> FabricsimError:
    return FabricsimError(f"line {i}: {what}: '{line.strip()[:100]}'; give the unedited NCCL_DEBUG=INFO log")


@dataclass
class InfoLog:
    """What the NCCL INFO lines (and nccl-tests' device lines) of a log say, as read; `lines` holds, per kind of
    fact ('version', 'comm', 'net', 'net_gdr', 'net_host', 'local_p2p', 'local_shm', 'nvls', 'nvls_not', 'channels',
    'env:NCCL_X', 'ring_gdr', 'tuner', 'tuning', ...),
    the first lines that said it as (line number, text without MPI prefixes)."""

    version: str = ""
    comms: dict[int, dict] = field(default_factory=dict)  # nRanks -> {nodes, local, mnnvl}
    hosts: set[str] = field(default_factory=set)
    ib: dict[str, tuple[str, bool]] = field(default_factory=dict)  # name -> (layer, sharp)
    socket: bool = False
    network: str = ""
    ofi: tuple[str, int] | None = None
    ofi_groups: dict[int, dict[int, str]] = field(default_factory=dict)  # group -> device # -> bus id
    net_via: list[str] = field(default_factory=list)
    net_devs: dict[str, set[int]] = field(default_factory=dict)  # net name ('IB', 'AWS Libfabric') -> devices used
    local_via: list[str] = field(default_factory=list)
    nvls: list[bool] = field(default_factory=list)
    nvls_channels: list[int] = field(default_factory=list)
    coll: list[int] = field(default_factory=list)
    collnet: list[int] = field(default_factory=list)
    devices: dict[int, tuple[str, int, str]] = field(default_factory=dict)  # rank -> (host, device, GPU name)
    env: dict[str, str] = field(default_factory=dict)  # NCCL_* -> value, from 'set by environment' lines
    ring_gdr: list[bool] = field(default_factory=list)  # 'Connected all rings, use ring PXN p GDR g' lines
    plugin_latency_us: float | None = None  # aws-ofi-nccl's internode latency, a tuning input
    tuner_plugin: bool | None = None  # True: a tuner plugin loaded; False: NCCL fell back to its internal tuner
    tuning: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)  # (function, bytes) -> (algo, proto)
    info_lines: int = 0
    lines: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def said(self, kind: str, i: int, line: str) -> None:
        """Keep line `i` as evidence of a fact of this kind (the first few of each kind)."""
        kept = self.lines.setdefault(kind, [])
        if len(kept) < _KEEP_LINES and all(n != i for n, _ in kept):
            kept.append((i, line))


def _info(log: InfoLog, i: int, line: str, host: str, msg: str) -> None:
    log.hosts.add(host)
    log.info_lines += 1
    if (m := _ENV.match(msg)):
        log.env.setdefault(m.group(1), m.group(2).strip())
        log.said("env:" + m.group(1), i, line)
    elif (m := _RING_GDR.search(msg)):
        log.ring_gdr.append(m.group(2) == "1")
        log.said("ring_gdr", i, line)
    elif (m := _OFI_LATENCY.search(msg)):
        log.plugin_latency_us = float(m.group(1))
        log.said("plugin_latency", i, line)
    elif msg.startswith(("Using tuner plugin", "TUNER/Plugin: Using")) or "using internal tuner instead" in msg:
        log.tuner_plugin = "internal tuner" not in msg
        log.said("tuner", i, line)
    elif (m := _TUNING.match(msg)):
        algo, proto = m.group(3), m.group(4)
        algo = NCCL_ALGO_IDS.get(int(algo), algo) if algo.isdigit() else algo
        proto = NCCL_PROTO_IDS.get(int(proto), proto) if proto.isdigit() else proto
        log.tuning.setdefault((m.group(1) or "", int(m.group(2))), (algo, proto))
        log.said("tuning", i, line)
    elif (m := _VERSION.search(msg)):
        log.version = log.version or m.group(1)
        log.said("version", i, line)
    elif "nRanks" in msg and msg.startswith("comm "):
        m = _COMM.search(msg)
        if not m:
            raise _fail(i, line, "a 'comm ... nRanks' line without rank, nRanks, nNodes and localRanks numbers")
        n = int(m.group(2))
        log.comms[n] = {"nodes": int(m.group(3)), "local": int(m.group(4)),
                        "mnnvl": None if m.group(6) is None else m.group(6) == "1"}
        log.said("comm", i, line)
    elif (m := _COMM_OLD.search(msg)):
        log.comms.setdefault(int(m.group(2)), {"nodes": 0, "local": 0, "mnnvl": None})
        log.said("comm_old", i, line)
    elif msg.startswith("NET/IB : Using"):
        log.said("net", i, line)
        found = _IB_USING.findall(msg)
        if not found and "No device" not in msg:
            raise _fail(i, line, "a 'NET/IB : Using' line without devices like [0]mlx5_0:1/IB")
        for _, name, port, layer, sharp in found:
            log.ib[name if port == "1" else f"{name}:{port}"] = (layer, bool(sharp))
    elif msg.startswith("NET/Socket : Using"):
        log.socket = True
        log.said("net", i, line)
    elif msg.startswith("Using network "):
        log.network = msg.removeprefix("Using network ").strip()
        log.said("network", i, line)
    elif (m := _OFI.search(msg)):
        log.ofi = (m.group(1), int(m.group(2)))
        log.said("net", i, line)
    elif (m := _OFI_GROUP.search(msg)):
        log.ofi_groups.setdefault(int(m.group(1)), {})[int(m.group(2))] = m.group(3).lower()
        log.said("nic_group", i, line)
    elif msg.startswith(("Channel ", "Ring ")) and " via " in msg:
        m = _VIA.match(msg)
        if not m:
            raise _fail(i, line, "a channel connection line not like 'Channel 00/0 : 0[0] -> 1[1] via P2P/IPC'")
        via = m.group(4)
        if via.startswith("NET/"):
            log.net_via.append(via)
            if (d := _NET_VIA.match(via)):
                log.net_devs.setdefault(d.group("net"), set()).add(int(d.group("dev")))
            log.said("net_gdr" if "/GDRDMA" in via else "net_host", i, line)
        else:
            log.local_via.append(via)
            log.said("local_" + via.split("/")[0].lower(), i, line)
    elif (m := _NVLS.search(msg)):
        log.nvls.append(m.group(1) is None)
        log.said("nvls" if m.group(1) is None else "nvls_not", i, line)
    elif "coll channels" in msg:
        m = _CHANNELS.search(msg)
        if not m:
            raise _fail(i, line, "a 'coll channels' line without a channel count")
        log.coll.append(int(m.group(1)))
        log.said("channels", i, line)
        if m.group(2) is not None:
            log.collnet.append(int(m.group(2)))
        if (m := _NVLS_CHANNELS.search(msg)):
            log.nvls_channels.append(int(m.group(1)))


def scan(text: str) -> InfoLog:
    """Every fact the NCCL INFO lines and nccl-tests' '#  Rank' device lines of a log state (none is an empty
    InfoLog: an nccl-tests log without NCCL_DEBUG=INFO); a malformed line NCCL would print whole is an error."""
    log = InfoLog()
    for i, raw in enumerate(text.splitlines(), 1):
        line = _MPI_TAG.sub("", raw, count=1).rstrip()
        if (m := _INFO.match(line)):
            _info(log, i, line, m.group("host"), m.group("msg"))
        elif (m := _DEVICE.match(line.lstrip())):
            log.devices[int(m.group(1))] = (m.group(2), int(m.group(3)), m.group(4))
            log.said("device", i, line)
        elif (m := _VERSION.search(line)) and not log.version:
            log.version = m.group(1)  # rank 0 prints 'NCCL version ...' without the INFO prefix
            log.said("version", i, line)
    return log


def parse(text: str, source: str) -> Machine:
    """What an NCCL_DEBUG=INFO log says about the machine and the job."""
    log = scan(text)
    if not log.info_lines:
        raise FabricsimError("no 'NCCL INFO' lines: run with NCCL_DEBUG=INFO and give the whole log")
    return machine(log, source)


def device_names(text: str) -> tuple[str, ...]:
    """The GPU names nccl-tests' '#  Rank N ... device D [bus] NAME' lines print, each once, in order of first
    appearance (none for a log without them); lines that do not match are ignored, not errors."""
    names: dict[str, None] = {}
    for raw in text.splitlines():
        if "Rank" in raw and (m := _DEVICE.match(_MPI_TAG.sub("", raw, count=1).strip())):
            names[m.group(4)] = None
    return tuple(names)


def _gpu_model(name: str, notes: list[str], source: str) -> str:
    try:
        return hardware.get_gpu(name).name
    except FabricsimError:
        notes.append(f"{source}: GPU '{name}' is not in the catalog")
        return ""


def machine(log: InfoLog, source: str) -> Machine:
    """The neutral Machine of what a scanned log states."""
    notes: list[str] = []
    ranks = max(log.comms) if log.comms else (max(log.devices) + 1 if log.devices else 0)
    comm = log.comms.get(ranks, {"nodes": 0, "local": 0, "mnnvl": None})
    if len(log.comms) > 1:
        notes.append(f"{source}: {len(log.comms)} communicator sizes ({', '.join(map(str, sorted(log.comms)))} ranks); "
                     f"read as the largest, {ranks} ranks")
    dev_hosts = [h for h, _, _ in (log.devices[r] for r in sorted(log.devices))]
    nodes = comm["nodes"] or len(set(dev_hosts)) or len(log.hosts)  # hosts: the INFO lines' host names
    local = comm["local"] or (ranks // nodes if nodes else 0)
    gpus: tuple[Gpu, ...] = ()
    if local:
        first_host = dev_hosts[0] if dev_hosts else None
        models = {d: name for (h, d, name) in log.devices.values() if h == first_host}
        gpus = tuple(Gpu(index=g, model=_gpu_model(models[g], notes, source) if g in models else "")
                     for g in range(local))
    nics: list[Nic] = []
    net_nics: tuple[str, ...] = ()
    transport = provider = ""
    nic_count = 0
    if log.ib:
        for name, (layer, sharp) in log.ib.items():
            nics.append(Nic(name=name, link_layer="infiniband" if layer == "IB" else "ethernet",
                            transport="ib" if layer == "IB" else "roce"))
        net_nics = tuple(log.ib)
        transport = "IB"
    elif log.ofi:
        transport = "OFI"
        provider, nic_count = log.ofi
        groups = [len(log.ofi_groups[g]) for g in sorted(log.ofi_groups)]
        if groups:
            notes.append(f"{source}: aws-ofi-nccl groups its {sum(groups)} NICs {'/'.join(map(str, sorted(set(groups))))} "
                         f"per group, {len(groups)} groups")
    elif log.socket or log.network == "Socket":
        transport = "Socket"
    if any(sharp for _, sharp in log.ib.values()):
        notes.append(f"{source}: the NICs offer SHARP (NET/IB .../IB/SHARP)")
    gdr = None
    if log.net_via:
        gdr = any(v.endswith("/GDRDMA") for v in log.net_via)
    p2p = None
    if log.local_via:
        p2p = any(v.startswith("P2P/") for v in log.local_via)
    return Machine(
        sources=(source,), gpus=gpus, nics=tuple(nics), net_provider=provider, net_nic_count=nic_count,
        nodes=nodes, ranks=ranks, local_ranks=local,
        nvls=any(log.nvls) if log.nvls else (max(log.nvls_channels) > 0 if log.nvls_channels else None), mnnvl=comm["mnnvl"], gdr=gdr, p2p=p2p,
        net=transport, net_nics=net_nics,
        sharp=(max(log.collnet) > 0) if log.collnet else None,
        channels=max(log.coll) if log.coll else 0, nccl_version=log.version, notes=tuple(notes),
    )

"""A Diagnosis as text (what `fabricsim doctor` prints) and as a JSON document (`--format json`)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from fabricsim.diagnosis.diagnose import Diagnosis, Finding, RangeDiagnosis
from fabricsim.diagnosis.facts import Facts
from fabricsim.diagnosis.shortfall import Range, SizeCheck
from fabricsim.units import format_bytes

BUSBW_BAND_BYTES = 1 << 20  # the bands validation.logs scores: busbw from 1 MiB, time up to 64 KiB
TIME_BAND_BYTES = 64 << 10
_MAX_CONSIDERED = 8


def _span(r: Range) -> str:
    lo, hi = format_bytes(r.lo), format_bytes(r.hi)
    n = len(r.sizes)
    return (lo if r.lo == r.hi else f"{lo} - {hi}") + f" ({n} size{'s' * (n != 1)})"


def _sizes(sizes: tuple[int, ...]) -> str:
    if not sizes:
        return "-"
    return format_bytes(sizes[0]) if len(sizes) == 1 else f"{format_bytes(sizes[0])} - {format_bytes(sizes[-1])}"


def observed(facts: Facts) -> list[tuple[str, str, list[str]]]:
    """(topic, what the log says, the lines that say it) for the summary of the run."""
    info = facts.info
    out: list[tuple[str, str, list[str]]] = []
    comm = info.comms.get(facts.ranks)
    nodes = comm["nodes"] if comm and comm.get("nodes") else 0
    local = comm["local"] if comm and comm.get("local") else 0
    if facts.logged_ranks:
        ranks = f"{facts.logged_ranks} ranks" + (" (its busbw / algbw imply them)" if facts.log.nranks_inferred else "")
    else:
        ranks = f"not printed; its busbw / algbw imply {facts.ranks_implied}" if facts.ranks_implied else "not printed"
    if nodes:
        ranks += f" on {nodes} node{'s' * (nodes != 1)} ({local} per node)"
    out.append(("ranks", ranks, [str(q) for q in (facts.quotes("comm") or facts.quotes("comm_old"))[:1]]))
    models = sorted({name for _, _, name in info.devices.values()})
    out.append(("GPUs", ", ".join(models) if models else "not printed", [str(q) for q in facts.quotes("device")[:1]]))
    local_kinds = sorted({v.split("/")[0] + ("/" + v.split("/")[1] if "/" in v else "") for v in info.local_via})
    out.append(("intra-node path", ", ".join(local_kinds) if local_kinds else "not printed",
                [str(q) for k in ("local_p2p", "local_shm") for q in facts.quotes(k)[:1]]))
    net = info.network or ("IB" if info.ib else "Socket" if info.socket else "")
    if info.ib:
        layers = sorted({layer for layer, _ in info.ib.values()})
        net += f": {len(info.ib)} NICs ({'/'.join(layers)})"
    if info.ofi:
        groups = f", {len(info.ofi_groups)} NCCL devices" if info.ofi_groups else ""
        net += f" (OFI provider {info.ofi[0]}, {info.ofi[1]} NICs found{groups})"
    out.append(("network", net or "not printed", [str(q) for k in ("network", "net") for q in facts.quotes(k)[:1]]))
    used = {name: sorted(devs) for name, devs in info.net_devs.items()}
    if used:
        out.append(("NICs the channels use", "; ".join(f"NET/{n} devices {','.join(map(str, v))}" for n, v in used.items()),
                    []))
    if info.net_via or info.ring_gdr:
        gdr = any(v.endswith("/GDRDMA") or "/GDRDMA/" in v for v in info.net_via) or any(info.ring_gdr)
        host = any("/GDRDMA" not in v for v in info.net_via)
        what = "used" if gdr and not host else "not used" if not gdr else "used on some channels only"
        out.append(("GPUDirect RDMA", what, [str(q) for k in ("net_gdr", "net_host", "ring_gdr")
                                             for q in facts.quotes(k)[:1]]))
    if info.coll:
        nvls = f", {max(info.nvls_channels)} nvls channels" if info.nvls_channels else ""
        out.append(("channels", f"{max(info.coll)} coll channels{nvls}", [str(q) for q in facts.quotes("channels")[:1]]))
    if info.nvls:
        out.append(("NVLS", "supported" if any(info.nvls) else "not supported",
                    [str(q) for k in ("nvls", "nvls_not") for q in facts.quotes(k)[:1]]))
    if info.tuning:
        picks = sorted({f"{a}/{p}" for a, p in info.tuning.values()})
        out.append(("algorithm/protocol", f"{len(info.tuning)} sizes: {', '.join(picks)}",
                    [str(q) for q in facts.quotes("tuning")[:1]]))
    elif info.tuner_plugin is not None:
        out.append(("algorithm/protocol", "a tuner plugin loaded" if info.tuner_plugin else "NCCL's internal tuner "
                    "(the plugin did not load)", [str(q) for q in facts.quotes("tuner")[:1]]))
    else:
        out.append(("algorithm/protocol", "not printed (NCCL_DEBUG_SUBSYS=TUNING prints NCCL's choice per size)", []))
    out.append(("NCCL version", facts.version or "not printed", [str(facts.version_quote)] if facts.version_quote else []))
    return out


def bands(d: Diagnosis) -> dict[str, float | None]:
    """Median measured/predicted ratio over validation.logs' bands: busbw at >= 1 MiB, time at <= 64 KiB."""
    big = [c.ratio for c in d.checks if c.size_bytes >= BUSBW_BAND_BYTES]
    small = [c.ratio for c in d.checks if c.size_bytes <= TIME_BAND_BYTES]
    return {"large": float(np.median(big)) if big else None, "small": float(np.median(small)) if small else None}


def _cluster_line(d: Diagnosis) -> str:
    s = d.case.spec
    up = {"nvswitch": f"NVSwitch ({s.nvswitch_chips} chips)", "nvl72": f"NVL72 domain of {s.domain_size} GPUs",
          "nvlink-mesh": "NVLink mesh", "pcie": "PCIe only"}[s.scaleup]
    net = (f"{s.nics_per_node} x {s.nic_gbps:g} Gb/s {s.fabric} NICs per node, GPUDirect {'on' if s.gpudirect else 'off'}, "
           f"routing {s.routing}" if s.fabric != "none" else "no network")
    return (f"{s.name}: {s.nodes} x {s.gpus_per_node} {s.gpu}, {up}, NVLS {'on' if s.nvls else 'off'}, "
            f"P2P {'on' if s.p2p else 'off'}; {net}")


def _finding_line(f: Finding) -> str:
    if f.ratio is None and f.state in ("ruled out", "in the prediction"):
        return f"[{f.state}] {f.title}"
    if f.ratio is None:
        effect = f.verdict
    elif f.state == "ruled out":  # what it would have done, had the log not ruled it out
        effect = (f"the log's lines rule it out (applied anyway, measured would be {f.ratio:.2f}x the prediction, "
                  f"{f.share:.0%} of the gap closed at {_sizes(f.covered)})")
    else:
        effect = (f"{f.verdict}: measured {f.ratio:.2f}x the prediction with it applied, closes {f.share:.0%} of the gap"
                  f" at {_sizes(f.covered)}")
    return f"[{f.state}] {f.title}: {effect}"


def _range_text(r: RangeDiagnosis, lines: list[str]) -> None:
    rg = r.range
    worst = rg.worst
    lines.append(f"  {_span(rg)}: measured {rg.median_ratio:.2f}x the predicted busbw (median), worst "
                 f"{worst.ratio:.2f}x at {format_bytes(worst.size_bytes)} "
                 f"({worst.measured_time_s * 1e6:.1f} us vs {worst.predicted_time_s * 1e6:.1f} us, "
                 f"fabricsim picks {worst.algo}/{worst.proto}/{worst.channels})")
    causes = r.causes
    if not causes:
        lines.append("    no cause found: no rule the log supports explains these sizes")
    for k, f in enumerate(causes, 1):
        lines.append(f"    {k}. {_finding_line(f)}")
        lines.append(f"       effect: {f.how}")
        for e in f.evidence:
            lines.append(f"       {'to check' if f.state == 'not shown' else 'evidence'}: {e}")
        if f.against:
            lines.append(f"       but: the run measured faster than it allows at {len(f.against)} other sizes "
                         f"({_sizes(f.against)})")
    if causes and r.unexplained:
        lines.append(f"    no cause reaches {len(r.unexplained)} of these sizes "
                     f"({_sizes(tuple(c.size_bytes for c in r.unexplained))})")
    rest = [f for f in r.findings if not f.named and not (f.state == "not shown" and f.verdict == "not computable")]
    if rest:
        lines.append("    also considered:")
        for f in rest[:_MAX_CONSIDERED]:
            why = f.evidence[0] if f.state in ("ruled out", "in the prediction") and f.evidence else f.how
            lines.append(f"      - {_finding_line(f)}" + (f" ({why})" if why else ""))
            if f.verdict == "contradicted":
                lines.append(f"        the run measured faster than it allows at {len(f.against)} other sizes "
                             f"({_sizes(f.against)})")


def text(d: Diagnosis) -> str:
    """The report `fabricsim doctor` prints."""
    f = d.facts
    c = d.case
    t = d.target
    version = f"NCCL {f.version}" if f.version else "NCCL version not stated"
    lines = [f"fabricsim doctor: {f.source}: {c.collective}, {len(c.ranks)} ranks, {version}",
             f"cluster ({t.source}): {_cluster_line(d)}"]
    lines += [f"  assumed: {a}" for a in t.assumptions]
    lines += [f"  the cluster file cannot say: {g}" for g in t.gaps]
    said = [(topic, what, quotes) for topic, what, quotes in observed(f) if not what.startswith("not printed")]
    if f.info.info_lines:
        lines.append("what the log says:")
    else:
        lines.append("what the log says: no NCCL INFO lines, so most causes cannot be tested against it (rerun with "
                     "NCCL_DEBUG=INFO)" + (":" if said else ""))
    for topic, what, quotes in said:
        lines.append(f"  {topic}: {what}")
        lines += [f"      {q}" for q in quotes]
    if c.env or d.env_not_honoured:
        lines.append("NCCL environment:")
        for e in c.env:
            lines.append(f"  {e.var}={e.value}: {e.status} ({e.why}) [{f.env_quote(e.var)}]")
        for var, value in d.env_not_honoured:
            lines.append(f"  {var}={value}: not honoured (fabricsim does not know what it changes) [{f.env_quote(var)}]")
    b = bands(d)
    version_rules = f"NCCL {c.nccl_version[0]}.{c.nccl_version[1]} rules" if c.nccl_version else "fabricsim's NCCL rules"
    lines.append(f"prediction: fabricsim, engine level {d.level}, {version_rules}; {len(d.checks)} sizes of the log "
                 "(out-of-place)")
    summary = ", ".join(f"{'busbw at >= 1 MiB' if k == 'large' else 'time at <= 64 KiB'} {v:.2f}x"
                        for k, v in b.items() if v is not None)
    pct = f"{d.threshold:.0%}"
    if d.verdict == "short":
        n = sum(len(r.range.sizes) for r in d.short)
        lines.append(f"verdict: falls short by more than {pct} at {n} of {len(d.checks)} sizes, in {len(d.short)} "
                     f"range{'s' * (len(d.short) != 1)} (medians measured/predicted: {summary})")
    elif d.verdict == "above":
        lines.append(f"verdict: no size falls short by more than {pct}; some run faster than predicted ({summary})")
    else:
        lines.append(f"verdict: matches the prediction within {pct} at every size ({summary}); no cause to find")
    for r in d.short:
        _range_text(r, lines)
    for r in d.above:
        lines.append(f"  above the prediction: {_span(r)} at {r.median_ratio:.2f}x (median): the cluster described "
                     "delivers less than this hardware did" + ("; see what the cluster file cannot say" if t.gaps else ""))
    if d.dips:
        lines.append(f"  one-off dips (short in one placement only, run-to-run variation): "
                     f"{', '.join(format_bytes(c.size_bytes) for c in d.dips)}")
    untested = {f.title: f.how for r in d.short for f in r.findings if f.state == "not shown"
                and f.verdict == "not computable"}
    lines += [f"  not testable from this log: {title} ({how})" for title, how in untested.items()]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def size_record(c: SizeCheck) -> dict[str, Any]:
    """One size's figures (us and GB/s in the key names)."""
    return {"size_bytes": c.size_bytes, "measured_time_us": c.measured_time_s * 1e6,
            "predicted_time_us": c.predicted_time_s * 1e6, "measured_busbw_GBps": c.measured_busbw / 1e9,
            "predicted_busbw_GBps": c.predicted_busbw / 1e9, "ratio": c.ratio, "in_place_ratio": c.in_place_ratio,
            "algo": c.algo, "proto": c.proto, "channels": c.channels}


def as_dict(d: Diagnosis) -> dict[str, Any]:
    """The diagnosis as plain data (what `--format json` prints)."""
    f, c, t = d.facts, d.case, d.target
    return {
        "log": f.source, "collective": c.collective, "ranks": len(c.ranks), "nccl_version": f.version or None,
        "threshold": d.threshold, "level": d.level, "verdict": d.verdict, "bands": bands(d),
        "cluster": {"source": t.source, "spec": c.spec.fields(), "assumptions": list(t.assumptions),
                    "gaps": list(t.gaps)},
        "observed": [{"topic": k, "said": v, "lines": q} for k, v, q in observed(f)],
        "env": [dataclasses.asdict(e) for e in c.env]
               + [{"var": k, "value": v, "status": "not honoured", "why": "fabricsim does not know what it changes"}
                  for k, v in d.env_not_honoured],
        "sizes": [size_record(x) for x in d.checks],
        "short": [{"from_bytes": r.range.lo, "to_bytes": r.range.hi, "sizes": len(r.range.sizes),
                   "median_ratio": r.range.median_ratio,
                   "unexplained_bytes": [x.size_bytes for x in r.unexplained],
                   "causes": [dataclasses.asdict(x) for x in r.causes],
                   "considered": [dataclasses.asdict(x) for x in r.findings if not x.named]} for r in d.short],
        "above": [{"from_bytes": r.lo, "to_bytes": r.hi, "sizes": len(r.sizes), "median_ratio": r.median_ratio}
                  for r in d.above],
        "dips_bytes": [x.size_bytes for x in d.dips],
    }


def json_doc(d: Diagnosis) -> str:
    """as_dict as JSON text."""
    return json.dumps(as_dict(d), indent=1) + "\n"

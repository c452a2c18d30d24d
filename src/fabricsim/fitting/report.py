"""The fit as text: each parameter before and after with its bounds, and every row's residuals."""

from __future__ import annotations

import math

import numpy as np

from fabricsim.fitting.fit import FitResult
from fabricsim.topology.calibrated import BY_NAME, PARAMETERS
from fabricsim.units import format_bytes


def _value(unit: str, v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v * 1e6:.2f} us" if unit == "s" else f"{v:.3f}"


def _bounds(p) -> str:
    return f"[{_value(p.unit, p.lower)}, {_value(p.unit, p.upper)}]"


def at_bounds(r: FitResult) -> list[str]:
    """Fitted parameters that ended on a physical bound (within 0.5% of its range; a latency at 0 is a cost the
    logs do not show, not a bound pressed against)."""
    out = []
    for name, v in r.after.items():
        p = BY_NAME[name]
        span = p.upper - p.lower
        if v >= p.upper - 0.005 * span or (p.unit == "fraction" and v <= p.lower + 0.005 * span):
            out.append(name)
    return out


def text(r: FitResult) -> str:
    """Parameters before -> after, why any was not fitted, then per row: size, measured, predicted before and after."""
    lines = [f"calibrated {r.spec.name} from {len(r.calibrated.logs)} log(s): "
             + ", ".join(f"{u.file} ({u.collective}, {u.gpus} GPUs, {u.sizes}, sha256 {u.sha256[:12]})"
                         for u in r.calibrated.logs),
             f"method: {r.calibrated.method}; {r.evaluations} evaluations, cost {r.cost_before:.4g} -> {r.cost_after:.4g}",
             "",
             f"{'parameter':<18} {'catalog':>10} {'fitted':>10}  {'bounds':<22} mechanism"]
    for p in PARAMETERS:
        after = _value(p.unit, r.after[p.name]) if p.name in r.after else "-"
        lines.append(f"{p.name:<18} {_value(p.unit, r.before[p.name]):>10} {after:>10}  {_bounds(p):<22} {p.mechanism}")
    for name in at_bounds(r):
        lines.append(f"  at its bound: {name}: the logs ask for more than the parameter can physically give, so a "
                     "mechanism is missing here (the value will not generalise; see `fabricsim doctor`)")
    for name, why in r.not_fitted.items():
        lines.append(f"  not fitted: {name}: {why}")
    w = max([24, *(len(row.log) for row in r.rows)])  # whole names: two logs may share their first 24 characters
    lines += ["", "rows (out-of-place; error = predicted busbw vs measured, + = predicted faster):",
              f"{'log':<{w}} {'size':>10} {'measured':>11} {'before':>11} {'after':>11} {'busbw GB/s':>10} {'before':>8} "
              f"{'after':>8} {'err before':>10} {'after':>8}  pick after"]
    for row in r.rows:
        lines.append(f"{row.log:<{w}} {format_bytes(row.size_bytes):>10} {row.measured_time_s * 1e6:>9.1f}us "
                     f"{row.before_time_s * 1e6:>9.1f}us {row.after_time_s * 1e6:>9.1f}us {row.measured_busbw / 1e9:>10.2f} "
                     f"{row.before_busbw / 1e9:>8.2f} {row.after_busbw / 1e9:>8.2f} {row.error_pct('before'):>+9.1f}% "
                     f"{row.error_pct('after'):>+7.1f}%  {row.after_pick}")
    before = [abs(x.error_pct("before")) for x in r.rows]
    after = [abs(x.error_pct("after")) for x in r.rows]
    lines.append(f"median absolute error over the {len(r.rows)} rows fitted: {np.median(before):.1f}% -> "
                 f"{np.median(after):.1f}% (in-sample: `fabricsim validate --logs --calibrate-holdout` scores logs the "
                 "fit did not see)")
    if np.median(after) > np.median(before):
        lines.append("  worse on this measure: the fit lowers its cost (a soft-L1 loss on log(predicted / measured "
                     "time), each log weighted equally) while the median busbw error rises, so its values trade large "
                     "sizes for small ones; check the rows above before using the file, or fit on more logs")
    return "\n".join(line.rstrip() for line in lines) + "\n"

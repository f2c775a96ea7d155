"""Last month's recommendations against what happened: adoption read from the history itself.

``score_ledger(ledger, workload_rows, daily, prices)`` takes the ledger a review stored at the end
of the previous month (``analyzer.history.ledger``) and the history's days after it, and says per
recommendation whether it was adopted, on which day, and what it changed against what it promised.

**Workloads.** For each resource with a recommendation, the day's per-pod request ``q`` (the
history's time-weighted mean over the day) is placed on the line from the request at review ``c``
to the recommendation ``t`` as the fraction of the way moved, ``f = (q − c) / (t − c)``:

- ``applied``: ``f ≥ 0.9`` on the last observed day (within 10 % of the recommended change; a
  team that went further is still counted as applied and the row says how far);
- ``partly``: ``0.2 ≤ f < 0.9`` (moved at least a fifth of the way);
- ``not adopted``: anything else, including a move the other way (the row says so);
- ``not seen``: the workload has no row after the review (deleted or renamed).

A workload with both resources recommended is ``applied`` when both are, else ``partly`` when
either moved. The **day** is the first day of the trailing run of days whose fraction is at
least half the last day's: a request changed at 10:00 gives that day a mixed mean (the history is
daily), so the day found is the change's day or the next one.

**Predicted against realised** (request-hours, per resource): predicted = ``(c − t) × replicas at
review × 24 h`` per day from the adoption day to the last observed day; realised = the sum over
every observed day of ``(c − q_d) × replicas_d × 24 h``. The history's ``q_d`` is weighted by
pod-time and ``replicas_d`` is pod-time / 24 h, so ``q_d × replicas_d × 24 h`` is the day's exact
request-hours: realised is exactly what the change freed (or added) at the replicas that really
ran, the change's own day included. The error is realised against predicted, in % of predicted:
it holds a partial adoption, a replica count that moved, and the day found.

**Pools.** The pool's node count (the day's time-weighted mean) against its count on the last day
before the review, ``n0``: ``applied`` when it moved by at least 90 % of the recommended nodes in
the recommended direction, ``partly`` when by at least half a node, the day found as above.
Node-hours: predicted ``nodes × 24 h`` per day from the adoption day, realised the sum over every
observed day of ``(n_d − n0) × 24 h`` in the recommended direction; money from ``--prices`` on node-hours only (requests freed cost
nothing less until nodes go).

**The scheduler configuration** is not in the history (the nightly rollups do not record which
scheduler placed the pods), so its adoption is reported as "not recorded", never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.prices import Prices

APPLIED = 0.9
PARTLY = 0.2
_RESOURCES = (
    ("cpu", "millicores", 1000.0, "core-hours"),
    ("memory", "bytes", 2.0**30, "GiB-hours"),
)
_KEY = ("namespace", "owner_kind", "owner_name")


def _state(f: float) -> str:
    if f >= APPLIED:
        return "applied"
    if f >= PARTLY:
        return "partly"
    return "not adopted"


def _trailing_start(fractions: np.ndarray) -> int:
    """Index of the first day of the trailing run whose fraction is ≥ half the last day's."""
    last = fractions[-1]
    i = len(fractions) - 1
    while i > 0 and fractions[i - 1] >= last / 2:
        i -= 1
    return i


def _error_pct(realised: float, predicted: float) -> float | None:
    return None if predicted == 0 else 100.0 * (realised - predicted) / abs(predicted)


def _workload(entry: Mapping[str, Any], rows: pd.DataFrame) -> dict[str, Any]:
    """One recommendation's outcome from its workload's rows after the review (sorted by day)."""
    out: dict[str, Any] = {k: entry[k] for k in (*_KEY, "pool")}
    out["replicas_at_review"] = entry["replicas"]
    recommended = [r for r in _RESOURCES if entry.get(f"{r[0]}_recommended_{r[1]}") is not None]
    if rows.empty:
        out.update(status="not seen", day=None, resources={}, predicted={}, realised={})
        return out
    days = list(rows["day"])
    replicas = rows["replicas_mean"].to_numpy(np.float64)
    states, starts, resources = [], [], {}
    ends: dict[str, tuple[float, float]] = {}  # resource → (at review, recommended)
    for resource, unit, _scale, _label in recommended:
        c = float(entry[f"{resource}_request_{unit}"])
        t = float(entry[f"{resource}_recommended_{unit}"])
        q = rows[f"{resource}_request_{unit}"].to_numpy(np.float64)
        q = np.where(np.isnan(q), c, q)  # a day without the request recorded: no move seen
        f = (q - c) / (t - c)
        ends[resource] = (c, t)
        states.append(_state(float(f[-1])))
        starts.append(_trailing_start(f))
        resources[resource] = {
            "current": c,
            "recommended": t,
            "observed": float(q[-1]),
            "moved_percent": 100.0 * float(f[-1]) + 0.0,  # + 0.0: never "-0"
            "direction": "down" if t < c else "up",
        }
    if all(s == "applied" for s in states):
        status = "applied"
    elif any(s != "not adopted" for s in states):
        status = "partly"
    else:
        status = "not adopted"
    moved = [i for i, s in zip(starts, states, strict=True) if s != "not adopted"]
    start = min(moved) if moved else 0
    out["status"] = status
    out["day"] = None if status == "not adopted" else str(days[start])
    out["resources"] = resources
    predicted, realised = {}, {}
    for resource, unit, scale, label in recommended:
        c, t = ends[resource]
        q = rows[f"{resource}_request_{unit}"].to_numpy(np.float64)
        q = np.where(np.isnan(q), c, q)
        n_days = len(days) - start
        predicted[label] = (c - t) * float(entry["replicas"]) * 24.0 * n_days / scale
        # every day counts: before the change q = c adds nothing, and the change's own day adds
        # its hours after the change (its mean request is time-weighted), found day or not
        realised[label] = float(np.sum((c - q) * replicas) * 24.0 / scale)
    out["predicted"] = predicted  # saved request-hours (negative: added), from the day on
    out["realised"] = realised
    out["error_percent"] = {  # no error for what was not done: its prediction was never tested
        k: None if status == "not adopted" else _error_pct(realised[k], predicted[k])
        for k in predicted
    }
    return out


def _pool(entry: Mapping[str, Any], rows: pd.DataFrame, prices: Prices | None) -> dict[str, Any]:
    """One pool decision's outcome from the pool's daily rows after the review."""
    out: dict[str, Any] = {
        k: entry[k] for k in ("pool", "action", "nodes", "by_date", "nodes_at_review")
    }
    n0 = float(entry["nodes_at_review"])
    if rows.empty:
        out.update(status="not seen", day=None, nodes_now=None)
        return out
    nodes = rows["nodes_mean"].to_numpy(np.float64)
    out["nodes_now"] = float(nodes[-1])
    if entry["action"] == "none" or int(entry["nodes"]) == 0:
        out.update(status="nothing recommended", day=None)
        return out
    sign = -1.0 if entry["action"] == "release" else 1.0
    moved = sign * (nodes - n0)
    wanted = float(entry["nodes"])
    last = float(moved[-1])
    status = "applied" if last >= APPLIED * wanted else "partly" if last >= 0.5 else "not adopted"
    start = _trailing_start(moved) if status != "not adopted" else 0
    n_days = len(nodes) - start
    out["status"] = status
    out["day"] = None if status == "not adopted" else str(rows["day"].iloc[start])
    predicted = wanted * 24.0 * n_days
    realised = float(np.sum(moved) * 24.0)  # every day, as for workloads
    out["node_hours"] = {
        "predicted": predicted,
        "realised": realised,
        "error_percent": _error_pct(realised, predicted),
    }
    price = None if prices is None else prices.for_pool(str(entry["pool"]))
    if price is not None and price.node_hour is not None:
        out["money"] = {
            "currency": prices.currency if prices else None,
            "predicted": predicted * price.node_hour,
            "realised": realised * price.node_hour,
        }
    return out


def score_ledger(
    ledger: Mapping[str, Any],
    workload_rows: pd.DataFrame,
    daily: pd.DataFrame,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """The outcome of every recommendation in ``ledger`` (module docstring).

    ``workload_rows``: the history's workload-day rows (WORKLOAD_SCHEMA); ``daily``: the review's
    pool × day frame (``monthly.aggregate.daily_frame``). Only days after the ledger's
    ``history_end`` are read.
    """
    end = date.fromisoformat(str(ledger["history_end"]))
    w = workload_rows
    if not w.empty:
        w = w.assign(day=pd.to_datetime(w["day"], utc=True).dt.date)
        w = w[w["day"] > end].sort_values("day", kind="stable")
        w = w.drop_duplicates([*_KEY, "day"], keep="first")
    # not dict(groupby): dict() calls a GroupBy's .keys, which is its list of key columns
    by_key = {k: g for k, g in w.groupby(list(_KEY), sort=False)} if not w.empty else {}  # noqa: C416
    workloads = [
        _workload(e, by_key.get(tuple(e[k] for k in _KEY), pd.DataFrame()))
        for e in ledger.get("workloads", [])
    ]
    d = daily[daily["day"] > end].sort_values("day", kind="stable")
    pools = [_pool(e, d[d["pool"] == e["pool"]], prices) for e in ledger.get("pools", [])]
    days = sorted(set(d["day"]))
    scheduler = dict(ledger.get("scheduler") or {})
    scheduler["status"] = (
        "nothing recommended"
        if not scheduler.get("recommended")
        else "not recorded in the history (the nightly rollups do not say which scheduler placed "
        "the pods); say in the review whether it was changed"
    )
    return {
        "ledger_month": ledger["month"],
        "history_end": str(end),
        "observed_from": str(days[0]) if days else None,
        "observed_to": str(days[-1]) if days else None,
        "days_observed": len(days),
        "workloads": workloads,
        "pools": pools,
        "scheduler": scheduler,
        "totals": _totals(workloads, pools),
    }


def _totals(workloads: list[dict[str, Any]], pools: list[dict[str, Any]]) -> dict[str, Any]:
    counts = dict.fromkeys(("applied", "partly", "not adopted", "not seen"), 0)
    for w in workloads:
        counts[w["status"]] += 1
    sums: dict[str, dict[str, float]] = {}
    for w in workloads:
        if w["status"] in ("applied", "partly"):
            for side in ("predicted", "realised"):
                for label, value in w[side].items():
                    sums.setdefault(label, {"predicted": 0.0, "realised": 0.0})[side] += value
    for figures in sums.values():
        figures["error_percent"] = _error_pct(figures["realised"], figures["predicted"])  # type: ignore[assignment]
    node_hours = {"predicted": 0.0, "realised": 0.0}
    for p in pools:
        if p["status"] in ("applied", "partly"):
            node_hours["predicted"] += p["node_hours"]["predicted"]
            node_hours["realised"] += p["node_hours"]["realised"]
    return {
        "workloads": counts,
        "workloads_recommended": len(workloads),
        "pools_recommended": sum(1 for p in pools if p["status"] != "nothing recommended"),
        "pools_adopted": sum(1 for p in pools if p["status"] in ("applied", "partly")),
        "request_hours": sums,
        "node_hours": node_hours,
    }


def finite_or_none(value: float | None) -> float | None:
    """``value`` when finite, else None (for JSON)."""
    return value if value is not None and math.isfinite(value) else None

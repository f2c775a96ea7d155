"""The demo's last month of advice: a review of the month before, and some of it adopted.

The demo's monthly page opens with "last month's decisions → what happened" (docs/monthly.md).
A fresh demo has no earlier review, so before its review of month M it runs the review of M − 1
(the same ``build_review`` and right-sizing, no page written), stores that month's ledger and
forecast in the history as a real run would, and then — because the history is synthetic — lets
the generated teams adopt a known part of that advice in month M's stored days: every third
recommended workload takes its recommended requests on the 7th of the month, every tenth other
one half of its CPU change on the 14th. The pool's requested CPU and memory in those days drop by
exactly the change × the workload's replicas, so the pool figures stay the sum of their workloads.
Only days before the snapshot's first day are changed (the nightly days are the snapshot's own).
The page's notes say what the demo did, so no one mistakes it for a team's choice.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.history.capacity import read_pools, read_workloads, write_tables
from analyzer.history.forecasts import write_forecast
from analyzer.history.ledger import write_ledger
from analyzer.monthly.ledger_entries import ledger_payload
from analyzer.monthly.months import Month
from analyzer.monthly.review import ReviewSettings, build_review
from analyzer.report.monthly import clean_json
from analyzer.report.monthly_rightsize import rightsize_review

APPLY_DAY, PARTLY_DAY = 7, 14  # days of month M on which the demo's teams change requests
_KEY = ["namespace", "owner_kind", "owner_name"]


def _adoptions(ledger: dict[str, Any]) -> list[tuple[dict[str, Any], float, int]]:
    """(recommendation, fraction of the change taken, day of month) the demo applies."""
    ranked = sorted(
        ledger["workloads"],
        key=lambda w: (-abs((w["cpu_recommended_millicores"] or w["cpu_request_millicores"] or 0)
                            - (w["cpu_request_millicores"] or 0)), w["owner_name"]),
    )  # fmt: skip
    out: list[tuple[dict[str, Any], float, int]] = []
    for n, w in enumerate(ranked):
        if n % 3 == 0:
            out.append((w, 1.0, APPLY_DAY))
        elif n % 10 == 1 and w["cpu_recommended_millicores"] is not None:
            out.append((w, 0.5, PARTLY_DAY))
    return out


def _rows_by_key(frame: pd.DataFrame, columns: list[str]) -> dict[tuple[Any, ...], np.ndarray]:
    """Each distinct value of ``columns``: the positions of its rows, in table order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for at, key in enumerate(zip(*(frame[c].tolist() for c in columns), strict=True)):
        groups.setdefault(key, []).append(at)
    return {key: np.asarray(at, dtype=np.intp) for key, at in groups.items()}


def _apply(root: Path, month: Month, last_day: date, ledger: dict[str, Any]) -> int:
    """Rewrite month's stored days up to ``last_day`` with the adoptions; returns how many.

    The columns are changed as numpy arrays, row positions looked up once per workload and per
    (pool, day): the same float operations in the same order as pandas' ``.loc`` updates one
    adoption at a time (which cost ~25 s CPU on the demo's ~12,000 cell updates), so the same
    bits are written."""
    adoptions = _adoptions(ledger)
    end = min(month.last, last_day)
    pools = read_pools(root, month.first, end)
    workloads = read_workloads(root, month.first, end)
    if pools.empty or workloads.empty:
        return 0
    days = pd.to_datetime(workloads["day"], utc=True).dt.date
    pool_days = pd.to_datetime(pools["day"], utc=True).dt.date
    day_of = days.to_numpy()
    by_workload = _rows_by_key(workloads, _KEY)
    pools_at = _rows_by_key(
        pd.DataFrame({"pool": pools["pool"], "day": pool_days}), ["pool", "day"]
    )
    columns = {
        c: workloads[c].to_numpy(dtype=float, copy=True)
        for c in ("cpu_request_millicores", "memory_request_bytes")
    }
    replicas = workloads["replicas_mean"].to_numpy(dtype=float)
    sums = {
        f"{r}_requested_{stat}_{unit}": pools[f"{r}_requested_{stat}_{unit}"].to_numpy(
            dtype=float, copy=True
        )
        for r, unit in (("cpu", "millicores"), ("memory", "bytes"))
        for stat in ("mean", "peak")
    }
    applied = 0
    for w, fraction, day_of_month in adoptions:
        start = month.first + timedelta(days=day_of_month - 1)
        rows = by_workload.get(tuple(w[k] for k in _KEY), np.empty(0, dtype=np.intp))
        rows = rows[day_of[rows] >= start]
        if not len(rows):
            continue
        applied += 1
        for resource, unit, pool_unit in (
            ("cpu", "millicores", "millicores"),
            ("memory", "bytes", "bytes"),
        ):
            target = w[f"{resource}_recommended_{unit}"]
            if target is None or (resource == "memory" and fraction < 1):
                continue  # the partial adopters change CPU only
            column = columns[f"{resource}_request_{unit}"]
            now = column[rows]
            new = now + fraction * (float(target) - now)
            change = (new - now) * replicas[rows]
            column[rows] = new
            # summed per day as before (pandas' groupby sum, the days in order)
            by_day = pd.Series(change, index=day_of[rows]).groupby(level=0).sum()
            pool = w["pool"]
            for day, delta in by_day.items():
                at = pools_at.get((pool, day))
                if at is None:
                    continue
                for stat in ("mean", "peak"):
                    sums[f"{resource}_requested_{stat}_{pool_unit}"][at] += delta
    for name, values in columns.items():
        workloads[name] = values
    for name, values in sums.items():
        pools[name] = values
    for day in sorted(set(days)):
        write_tables(
            root,
            day,
            {
                "pools": pools[pool_days == day].reset_index(drop=True),
                "workloads": workloads[days == day].reset_index(drop=True),
            },
        )
    return applied


def seed_last_month(
    root: Path, month: Month, first_nightly_day: date, settings: ReviewSettings, recipe: str
) -> str | None:
    """Review ``month`` − 1 and store its ledger and forecast, then adopt part of its advice in
    ``month``'s synthetic days; returns the page's note (None: no previous month to review)."""
    previous = month.shift(-1)
    try:
        review = build_review(root, replace(settings, month=previous))
    except InputError:  # a demo history that does not reach back into the month before
        return None
    rightsizing = rightsize_review(review, recipe)
    history_end = str(review.stored_forecast["history_end"])
    record = ledger_payload(
        review.payload, review.daily, rightsizing.changed(), review.workload_days,
        history_end=history_end, recipe=rightsizing.recipe,
    )  # fmt: skip
    write_forecast(root, str(previous), clean_json(review.stored_forecast))
    ledger = {"month": str(previous), **clean_json(record)}
    write_ledger(root, str(previous), clean_json(record))
    applied = _apply(root, month, first_nightly_day - timedelta(days=1), ledger)
    return (
        f"Demo: the review of {previous} was run first (its advice and forecast are stored in the "
        f"history), and the generated teams adopted {applied} of its {len(ledger['workloads'])} "
        f"request recommendations in {month} (in full on day {APPLY_DAY}, or half the CPU change "
        f"on day {PARTLY_DAY}), so that 'Last month's decisions' has something to score."
    )

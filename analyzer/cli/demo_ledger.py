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


def _apply(root: Path, month: Month, last_day: date, ledger: dict[str, Any]) -> int:
    """Rewrite month's stored days up to ``last_day`` with the adoptions; returns how many."""
    adoptions = _adoptions(ledger)
    end = min(month.last, last_day)
    pools = read_pools(root, month.first, end)
    workloads = read_workloads(root, month.first, end)
    if pools.empty or workloads.empty:
        return 0
    days = pd.to_datetime(workloads["day"], utc=True).dt.date
    pool_days = pd.to_datetime(pools["day"], utc=True).dt.date
    applied = 0
    for w, fraction, day_of_month in adoptions:
        start = month.first + timedelta(days=day_of_month - 1)
        mine = (workloads[_KEY] == [w[k] for k in _KEY]).all(axis=1) & (days >= start)
        if not mine.any():
            continue
        applied += 1
        for resource, unit, pool_unit in (
            ("cpu", "millicores", "millicores"),
            ("memory", "bytes", "bytes"),
        ):
            target = w[f"{resource}_recommended_{unit}"]
            if target is None or (resource == "memory" and fraction < 1):
                continue  # the partial adopters change CPU only
            column = f"{resource}_request_{unit}"
            now = workloads.loc[mine, column].astype(float)
            new = now + fraction * (float(target) - now)
            change = (new - now) * workloads.loc[mine, "replicas_mean"].astype(float)
            workloads.loc[mine, column] = new
            by_day = pd.Series(change.to_numpy(), index=days[mine]).groupby(level=0).sum()
            pool = w["pool"]
            for day, delta in by_day.items():
                rows = (pools["pool"] == pool) & (pool_days == day)
                for stat in ("mean", "peak"):
                    pools.loc[rows, f"{resource}_requested_{stat}_{pool_unit}"] += delta
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

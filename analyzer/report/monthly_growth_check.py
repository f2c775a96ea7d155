"""The monthly page's growth replay held against its forecast decisions, pool by pool.

The two answer "when does this pool need nodes?" from different models: the forecast extends the
pool's daily requested totals (which also move when requests are changed: adopted right-sizing,
new defaults), the growth replay grows replicas at today's requests and places them with the
scheduler. Where they disagree within the replay's horizon a manager sees two answers, so the
page names the pool, both answers and why they differ, instead of leaving it to be noticed.

A forecast date is placed in the replay's months by its distance from the history's last day
(a month is 365.25/12 days; month 1 is the first month after it). Pools that agree say nothing.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

from analyzer.whatif.growth_result import GrowthResult

MONTH_DAYS = 365.25 / 12


def _month_of(by_date: str, last_day: str) -> int:
    """The replay month a forecast date falls in (1 = within a month of the history's end)."""
    days = (date.fromisoformat(by_date) - date.fromisoformat(last_day)).days
    return max(1, math.ceil(days / MONTH_DAYS))


def _first_add(growth: GrowthResult, pool: str) -> tuple[int, int] | None:
    """The first month the replay needs nodes in ``pool``, and how many; None within the horizon."""
    for month in growth.months:
        for row in month.pools:
            if row.pool == pool and (row.nodes_to_add or 0) > 0:
                return month.month, int(row.nodes_to_add or 0)
    return None


def growth_against_forecast(
    pools: list[dict[str, Any]], growth: GrowthResult, last_day: str | None
) -> list[str]:
    """One line per pool whose forecast decision and growth replay disagree within the horizon."""
    horizon = max((m.month for m in growth.months), default=0)
    lines = []
    for pool in pools:
        decision = pool.get("decision") or {}
        name = str(pool["name"])
        added = _first_add(growth, name)
        by_date = decision.get("by_date")
        forecast_adds = decision.get("action") == "add" and by_date and last_day
        month = _month_of(str(by_date), last_day) if forecast_adds and last_day else None
        if month is not None and month <= horizon and added is None:
            lines.append(
                f"{name}: the forecast adds {decision.get('nodes')} nodes by {by_date} "
                f"(month {month}), this replay needs none within {horizon} months: the forecast "
                "extends the pool's requested totals, which also move when requests are changed "
                "(right-sizing, new defaults); this replay grows replicas at today's requests."
            )
        elif added is not None and (month is None or month > added[0]):
            when = "adds none" if month is None else f"adds nodes only by {by_date}"
            lines.append(
                f"{name}: this replay needs {added[1]} more node(s) in month {added[0]} while the "
                f"forecast {when}: the replay places the grown pods (their shapes, constraints "
                "and spread), the forecast compares the pool's totals with its capacity."
            )
    return lines

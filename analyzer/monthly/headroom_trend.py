"""Headroom per pod shape over the review's trend window, from the history's daily series.

Input: ``history.headroom.read_headroom`` rows of the trend window (one per shape and day). Per
shape, for the reviewed month: the copies at its last day with a row ("now", the nightly's last
point), the fewest copies at any hour of the month (``copies_min`` over its days) and the day it
happened, and the same fewest in the month before (None when that month has no row of the shape).
The daily rows of the window go to ``report.json`` for the chart (a line per shape).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analyzer.monthly.months import Month


def headroom_trend(rows: pd.DataFrame, month: Month) -> dict[str, Any]:
    """``{"shapes": [...], "days": [...]}`` (both empty when the history holds no headroom)."""
    if rows.empty:
        return {"shapes": [], "days": []}
    frame = rows.assign(day=pd.to_datetime(rows["day"], utc=True).dt.date)
    before = month.shift(-1)
    shapes = []
    for shape, group in frame.groupby("shape", sort=True):
        group = group.sort_values("day")
        inside = group[(group["day"] >= month.first) & (group["day"] <= month.last)]
        if inside.empty:
            continue  # a shape counted in earlier months only: not part of this month's review
        previous = group[(group["day"] >= before.first) & (group["day"] <= before.last)]
        tightest = inside.loc[inside["copies_min"].idxmin()]
        last = inside.iloc[-1]
        shapes.append(
            {
                "shape": str(shape),
                "source": str(last["source"]),
                "days": len(inside),
                "copies_last_day": int(last["copies_now"]),
                "last_day": last["day"].isoformat(),
                "copies_min": int(tightest["copies_min"]),
                "min_day": tightest["day"].isoformat(),
                "reason_min": str(tightest["reason_min"]),
                "previous_min": int(previous["copies_min"].min()) if len(previous) else None,
            }
        )
    days = [
        {"day": d.isoformat(), "shape": str(s), "copies_min": int(c), "copies_now": int(n)}
        for d, s, c, n in zip(
            frame["day"], frame["shape"], frame["copies_min"], frame["copies_now"], strict=True
        )
    ]
    return {"shapes": shapes, "days": days}

"""Monthly growth rates per namespace, fitted from the history store's workload rows, for
``analyzer whatif --growth --history DIR`` (docs/whatif.md "Growth replayed").

A namespace's daily series is its requested CPU at today's requests: Σ over its workloads of the
day's ``replicas_mean`` × the workload's ``cpu_request_millicores`` on its last day in the history
(docs/history.md), in cores. Requests are held at today's so that a right-sizing applied during
the history (requests cut, replicas unchanged) is not read as the namespace shrinking: the growth
replayed is more replicas of today's pods. The series goes through the monthly
review's forecast (``analyzer.monthly.forecast``: level shifts found and fitted after the last
one, outlier days left out); its slope per day × 30.4375 days, divided by the fitted level on the
last day, is the namespace's rate: the share of today's replicas it gains each month (linear, as
the forecast's trend). A namespace without a forecast (too little history) or without a
significant trend grows at 0 and the reason is kept.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analyzer.history.capacity import read_workloads
from analyzer.monthly.forecast import forecast

DAYS_PER_MONTH = 30.4375


@dataclass(frozen=True)
class FittedRate:
    """One namespace's monthly rate (0 when none was fitted) and why."""

    namespace: str
    rate: float
    reason: str


def namespace_rates(root: Path) -> list[FittedRate]:
    """The fitted monthly rate of every namespace in the history under ``root``."""
    rows = read_workloads(root)
    if rows.empty:
        return []
    day = pd.to_datetime(rows["day"], utc=True).dt.normalize()
    key = (
        rows["namespace"].astype(str)
        + "\0"
        + rows["owner_kind"].astype(str)
        + "\0"
        + rows["owner_name"].astype(str)
    )
    request = rows["cpu_request_millicores"].astype(float)
    today = request.groupby(key).last() if day.is_monotonic_increasing else None
    if today is None:  # the reader returns days oldest first; sort when it ever does not
        order = day.sort_values(kind="stable").index
        today = request.loc[order].groupby(key.loc[order]).last()
    cores = rows["replicas_mean"].astype(float) * key.map(today).astype(float)
    frame = pd.DataFrame({"namespace": rows["namespace"].astype(str), "day": day, "v": cores / 1e3})
    out = []
    for namespace, mine in frame.groupby("namespace", sort=True):
        series = mine.groupby("day")["v"].sum()
        series.index = pd.DatetimeIndex(series.index).tz_localize(None)
        with warnings.catch_warnings():  # a flat series (a namespace that never changes) makes
            warnings.simplefilter("ignore", RuntimeWarning)  # statsmodels divide 0 by 0: no trend
            fit = forecast(series, 1e15, horizon_days=31, resource="requested_cpu_cores")
        if fit.slope_per_day is None or not fit.points:
            out.append(FittedRate(str(namespace), 0.0, fit.method_reason))
            continue
        level = fit.points[0].mean - fit.slope_per_day  # the fitted value on the last day
        if not fit.significant_trend or level <= 0:
            out.append(FittedRate(str(namespace), 0.0, "no significant trend"))
            continue
        rate = fit.slope_per_day * DAYS_PER_MONTH / level
        out.append(FittedRate(str(namespace), rate, f"fitted from {fit.history_days} days"))
    return out

"""Pool figures of the monthly review: daily series in cores and GiB, month aggregates and N+1.

Which daily column (``docs/history.md``) feeds each number (``docs/monthly.md`` says it for users):

- **allocatable** = mean over the month's days of ``*_allocatable_mean_*`` (what the pool offered,
  time-weighted);
- **requested** = mean over the days of ``*_requested_mean_*`` (the requests held, time-weighted);
- **requested peak** = the largest ``*_requested_peak_*`` of the month;
- **used p95** = the nearest-rank p95 over the days of ``*_used_p95_*`` (a day's p95 of the pool's
  summed usage): the "p95 of daily p95";
- **idle** = allocatable − max(requested, used p95); **slack** = requested − used p95;
- **N+1**, per day: allocatable mean − the day's largest node − requested peak (the margin left if
  the largest node were lost at the day's request peak); the month is N+1-safe when the smallest
  daily margin is ≥ 0 for CPU and for memory.

CPU is in cores, memory in GiB; the two are kept side by side, never added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.monthly.months import Month
from analyzer.usage.percentiles import grouped_stats

GIB = float(2**30)
RESOURCES = ("cpu", "memory")
UNIT_KEYS = {"cpu": "cpu_cores", "memory": "memory_gib"}
_DIVISOR = {"cpu": 1000.0, "memory": GIB}
_RAW_UNIT = {"cpu": "millicores", "memory": "bytes"}
FIGURES = ("allocatable", "requested", "used_p95", "idle", "slack")


def daily_frame(pools: pd.DataFrame) -> pd.DataFrame:
    """One row per pool and day in review units: ``<figure>_<resource>`` in cores / GiB.

    Columns: ``day`` (a ``date``), ``month`` (``YYYY-MM``), ``pool``, ``nodes_mean``,
    ``largest_node``, and per resource ``allocatable``, ``requested``, ``requested_peak``,
    ``used_p95``, ``largest`` (the largest node's allocatable) and ``n1_margin``.
    """
    day = pd.to_datetime(pools["day"], utc=True).dt.date
    out = pd.DataFrame(
        {
            "day": day,
            "month": [f"{d.year:04d}-{d.month:02d}" for d in day],
            "pool": pools["pool"].astype(str),
            "nodes_mean": pools["nodes_mean"].astype(float),
            "largest_node": pools["largest_node"],
        }
    )
    for r in RESOURCES:
        unit, div = _RAW_UNIT[r], _DIVISOR[r]
        out[f"allocatable_{r}"] = pools[f"{r}_allocatable_mean_{unit}"].astype(float) / div
        out[f"requested_{r}"] = pools[f"{r}_requested_mean_{unit}"].astype(float) / div
        out[f"requested_peak_{r}"] = pools[f"{r}_requested_peak_{unit}"].astype(float) / div
        out[f"used_p95_{r}"] = pools[f"{r}_used_p95_{unit}"].astype(float) / div
        out[f"largest_{r}"] = (
            pools[f"largest_node_{r}_allocatable_{unit}"].astype(float).fillna(0.0) / div
        )
        out[f"n1_margin_{r}"] = (
            out[f"allocatable_{r}"] - out[f"largest_{r}"] - out[f"requested_peak_{r}"]
        )
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class MonthFigures:
    """One pool's (or the cluster's) figures for one month: resource → value, or None."""

    pool: str
    month: str
    days: int
    nodes_mean: float
    values: dict[str, dict[str, float | None]]  # figure → {"cpu_cores": .., "memory_gib": ..}
    requested_peak: dict[str, float | None]
    largest: dict[str, float | None]
    largest_node: str | None
    n1_margin: dict[str, float | None]
    n1_worst_day: dict[str, str | None]

    @property
    def n_plus_1_ok(self) -> bool | None:
        margins = [v for v in self.n1_margin.values() if v is not None]
        return None if not margins else all(v >= 0 for v in margins)


def _num(value: Any) -> float | None:
    x = float(value)
    return None if np.isnan(x) else x


def month_figures(daily: pd.DataFrame, method: str = "nearest-rank") -> list[MonthFigures]:
    """Per pool and month: the figures of the module docstring (rows sorted by pool, month)."""
    if daily.empty:
        return []
    groups = daily.groupby(["pool", "month"], sort=True)
    ids = groups.ngroup().to_numpy(dtype=np.int64)
    n = int(ids.max()) + 1
    p95 = {
        r: grouped_stats(ids, daily[f"used_p95_{r}"].to_numpy(float), n, method)["p95"]
        for r in RESOURCES
    }
    out: list[MonthFigures] = []
    for (pool, month), rows in groups:
        gid = int(ids[rows.index[0]])
        values: dict[str, dict[str, float | None]] = {f: {} for f in FIGURES}
        peak: dict[str, float | None] = {}
        largest: dict[str, float | None] = {}
        margin: dict[str, float | None] = {}
        worst: dict[str, str | None] = {}
        for r in RESOURCES:
            key = UNIT_KEYS[r]
            alloc = _num(rows[f"allocatable_{r}"].mean())
            req = _num(rows[f"requested_{r}"].mean())
            used = _num(p95[r][gid])
            values["allocatable"][key] = alloc
            values["requested"][key] = req
            values["used_p95"][key] = used
            busy = None if req is None else (req if used is None else max(req, used))
            values["idle"][key] = None if alloc is None or busy is None else alloc - busy
            values["slack"][key] = None if req is None or used is None else req - used
            peak[key] = _num(rows[f"requested_peak_{r}"].max())
            largest[key] = _num(rows[f"largest_{r}"].max())
            m = rows[f"n1_margin_{r}"]
            margin[key] = _num(m.min())
            worst[key] = None if m.dropna().empty else rows.loc[m.idxmin(), "day"].isoformat()
        last = rows.iloc[-1]
        out.append(
            MonthFigures(
                pool=str(pool),
                month=str(month),
                days=len(rows),
                nodes_mean=float(rows["nodes_mean"].mean()),
                values=values,
                requested_peak=peak,
                largest=largest,
                largest_node=None if pd.isna(last["largest_node"]) else str(last["largest_node"]),
                n1_margin=margin,
                n1_worst_day=worst,
            )
        )
    return out


def cluster_figures(figures: list[MonthFigures], month: Month) -> MonthFigures | None:
    """The cluster's month: each figure summed over the pools with data that month.

    Used p95 summed over pools is an upper bound of the cluster's own p95 (pools peak at
    different times); idle is the sum of the pools' idle. N+1 is a per-pool question: none here.
    """
    rows = [f for f in figures if f.month == str(month)]
    if not rows:
        return None
    values: dict[str, dict[str, float | None]] = {}
    for figure in FIGURES:
        values[figure] = {}
        for key in UNIT_KEYS.values():
            parts = [f.values[figure][key] for f in rows]
            values[figure][key] = (
                None
                if any(p is None for p in parts)
                else float(sum(p for p in parts if p is not None))
            )
    peak = {
        key: float(sum(f.requested_peak[key] or 0.0 for f in rows)) for key in UNIT_KEYS.values()
    }
    none: dict[str, float | None] = dict.fromkeys(UNIT_KEYS.values())
    return MonthFigures(
        pool="(cluster)",
        month=str(month),
        days=max(f.days for f in rows),
        nodes_mean=float(sum(f.nodes_mean for f in rows)),
        values=values,
        requested_peak=dict(peak),
        largest=dict(none),
        largest_node=None,
        n1_margin=dict(none),
        n1_worst_day=dict.fromkeys(UNIT_KEYS.values()),
    )

"""The monthly capacity review of a history folder: the numbers behind ``report.json`` and the page.

``build_review(root, settings)`` reads the pool and workload rollups of the trend window (the
``months`` months ending with the reviewed month), and computes per pool and for the cluster the
month-over-month figures (``aggregate``), N+1, the four forecasts and their exhaustion dates
(``series``, ``forecast``), the decision (``decisions``), the back-test of the forecast stored
last month (``backtest``), money when prices are given (``prices``) and the workloads
(``workloads``). ``docs/monthly.md`` explains every number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer import __version__
from analyzer.core.errors import InputError
from analyzer.core.prices import Prices
from analyzer.history.capacity import read_pools, read_workloads, stored_days
from analyzer.history.forecasts import read_forecast
from analyzer.history.headroom import read_headroom
from analyzer.history.identity import read_identity
from analyzer.history.ledger import read_ledger
from analyzer.monthly.adoption import score_ledger
from analyzer.monthly.aggregate import (
    FIGURES,
    UNIT_KEYS,
    MonthFigures,
    cluster_figures,
    daily_frame,
    month_figures,
)
from analyzer.monthly.backtest import score_forecast
from analyzer.monthly.decisions import decide
from analyzer.monthly.forecast import Forecast, forecast
from analyzer.monthly.headroom_trend import headroom_trend
from analyzer.monthly.months import Month, last_complete_month, trend_months
from analyzer.monthly.read_note import read_note
from analyzer.monthly.series import SERIES
from analyzer.monthly.workloads import workload_months, workload_records, workload_table

MONTHS_RANGE = (1, 36)
HORIZON_RANGE = (90, 180)


@dataclass(frozen=True)
class ReviewSettings:
    """What to review: the month (None = the last complete one), trend length, horizon, etc."""

    month: Month | None = None
    months: int = 6
    horizon_days: int = 180
    thresholds: Mapping[str, int] = field(default_factory=lambda: {"cpu": 65, "memory": 95})
    prices: Prices | None = None
    method: str = "nearest-rank"

    def check(self) -> None:
        lo, hi = MONTHS_RANGE
        if not lo <= self.months <= hi:
            raise InputError(f"--months: {self.months} must be between {lo} and {hi}")
        lo, hi = HORIZON_RANGE
        if not lo <= self.horizon_days <= hi:
            raise InputError(
                f"--horizon-days: {self.horizon_days} must be between {lo} and {hi} (3 to 6 months)"
            )
        for r in ("cpu", "memory"):
            if not 0 < self.thresholds[r] <= 100:
                raise InputError(f"{r} usage threshold: {self.thresholds[r]} must be in 1..100 %")


@dataclass
class Review:
    """The review: ``payload`` is report.json; the rest feeds the page, the CSVs and the store."""

    payload: dict[str, Any]
    month: Month
    daily: pd.DataFrame  # pool × day rows of the trend window (review units)
    forecasts: dict[str, dict[str, Forecast]]  # pool → series name → forecast
    month_rows: pd.DataFrame  # pool × month figures of the trend (month_over_month.csv)
    workloads: pd.DataFrame  # workloads of the month (workloads.csv)
    stored_forecast: dict[str, Any]  # what the history keeps for next month's back-test
    # the reviewed month's workload-day rows (history WORKLOAD_SCHEMA): right-sizing reads them
    workload_days: pd.DataFrame = field(default_factory=pd.DataFrame)


def history_root(path: Path) -> Path:
    """``path`` itself when it holds ``pools/``, else ``path/history`` (a nightly OUT)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"HISTORY_DIR: {path} does not exist; give the nightly OUT or OUT/history")
    for candidate in (path, path / "history"):
        if stored_days(candidate, "pools"):
            return candidate
    raise InputError(
        f"HISTORY_DIR: {path} holds no pool history (pools/*.parquet); give a nightly OUT or "
        "OUT/history written by 'analyzer report nightly' (or backfill the history first)"
    )


def history_days(root: Path) -> list[date]:
    """The days with a pools file under ``root``, oldest first (from the file names: a year of
    history is listed without opening a file; the days read are checked when read)."""
    return stored_days(root, "pools")


def _pair(values: Mapping[str, float | None]) -> dict[str, float | None]:
    return {key: values.get(key) for key in UNIT_KEYS.values()}


def _change(now: MonthFigures, before: MonthFigures | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for figure in FIGURES:
        if before is None:
            out[figure] = None
            continue
        pair: dict[str, float | None] = {}
        for key in UNIT_KEYS.values():
            a, b = now.values[figure][key], before.values[figure][key]
            pair[key] = None if a is None or b is None else a - b
        out[figure] = pair
    return out


def _money(figures: MonthFigures, prices: Prices | None) -> dict[str, Any] | None:
    """Idle and slack in money over the month's days with data (negative amounts count as 0)."""
    if prices is None:
        return None
    price = prices.for_pool(figures.pool)
    if price is None:
        return {"currency": prices.currency, "price": None, "idle": None, "slack": None,
                "note": f"no price for pool {figures.pool} in {prices.source}"}  # fmt: skip
    alloc = figures.values["allocatable"]
    nodes = figures.nodes_mean
    per_node = (
        (alloc["cpu_cores"] or 0.0) / nodes if nodes > 0 else 0.0,
        (alloc["memory_gib"] or 0.0) / nodes if nodes > 0 else 0.0,
    )
    unit = price.per_unit(*per_node)
    if unit is None:
        return {"currency": prices.currency, "price": price.describe(prices.currency),
                "idle": None, "slack": None, "note": "the pool had no allocatable to price"}  # fmt: skip
    hours = 24 * figures.days
    out: dict[str, Any] = {
        "currency": prices.currency,
        "price": price.describe(prices.currency),
        "core_hour": unit[0],
        "gib_hour": unit[1],
        "hours": hours,
    }
    for figure in ("idle", "slack"):
        cpu, mem = figures.values[figure]["cpu_cores"], figures.values[figure]["memory_gib"]
        if cpu is None or mem is None:
            out[figure] = None
            continue
        parts = {"cpu": max(cpu, 0.0) * unit[0] * hours, "memory": max(mem, 0.0) * unit[1] * hours}
        out[figure] = {**parts, "total": parts["cpu"] + parts["memory"]}
    return out


def _figures_dict(f: MonthFigures) -> dict[str, Any]:
    return {figure: _pair(f.values[figure]) for figure in FIGURES}


def build_review(path: Path, settings: ReviewSettings) -> Review:
    """Read the history under ``path`` (OUT or OUT/history) and compute the review."""
    settings.check()
    root = history_root(path)
    all_days = history_days(root)
    if not all_days:
        raise InputError(f"HISTORY_DIR: {root}/pools holds no rows; run the nightly report first")
    month = settings.month or last_complete_month(all_days)
    in_month = [d for d in all_days if month.first <= d <= month.last]
    if not in_month:
        raise InputError(
            f"--month: {month} has no pool history (the history holds {all_days[0]} to "
            f"{all_days[-1]}); pick a month inside it"
        )
    window = trend_months(month, settings.months)
    start, end = window[0].first, month.last
    daily = daily_frame(read_pools(root, start, end))
    figures = month_figures(daily, settings.method)
    by_key = {(f.pool, f.month): f for f in figures}
    pools_now = sorted({f.pool for f in figures if f.month == str(month)})
    previous = str(month.shift(-1))
    notes: list[str] = []
    if len(in_month) < month.days:
        notes.append(
            f"{month} has history for {len(in_month)} of its {month.days} days; the month's "
            "figures are over those days."
        )
    forecasts: dict[str, dict[str, Forecast]] = {}
    pool_entries: list[dict[str, Any]] = []
    stored: dict[str, Any] = {}
    for pool in pools_now:
        now = by_key[(pool, str(month))]
        before = by_key.get((pool, previous))
        rows = daily[daily["pool"] == pool].sort_values("day")
        fc = {
            s.name: forecast(
                s.values(rows),
                s.capacity(rows, settings.thresholds),
                horizon_days=settings.horizon_days,
                resource=s.name,
                basis=s.basis(settings.thresholds),
            )
            for s in SERIES
        }
        forecasts[pool] = fc
        last = rows.iloc[-1]
        decision = decide(
            n1_margin={r: now.n1_margin[UNIT_KEYS[r]] for r in ("cpu", "memory")},
            n1_worst_day={r: now.n1_worst_day[UNIT_KEYS[r]] for r in ("cpu", "memory")},
            forecasts=fc,
            allocatable={r: float(last[f"allocatable_{r}"]) for r in ("cpu", "memory")},
            node_size={r: float(last[f"largest_{r}"]) for r in ("cpu", "memory")},
            largest_node=None if pd.isna(last["largest_node"]) else str(last["largest_node"]),
            nodes=float(last["nodes_mean"]),
            thresholds=settings.thresholds,
            horizon_days=settings.horizon_days,
            history_end=last["day"],
        )
        main = fc["requested_cpu_cores"].to_dict()
        main["exhaustion"] = [f.exhaustion.to_dict() for f in fc.values()]
        pool_entries.append(
            {
                "name": pool,
                "days": now.days,
                "nodes_mean": now.nodes_mean,
                **_figures_dict(now),
                "requested_peak": _pair(now.requested_peak),
                "change": _change(now, before),
                "previous_month": None if before is None else _figures_dict(before),
                "n_plus_1_ok": now.n_plus_1_ok,
                "n_plus_1": {
                    "largest_node": now.largest_node,
                    "largest_node_allocatable": _pair(now.largest),
                    "smallest_margin": _pair(now.n1_margin),
                    "worst_day": dict(now.n1_worst_day),
                    "rule": "every day: allocatable − the largest node − requested peak ≥ 0, "
                    "for CPU and memory",
                },
                "forecast": main,
                "forecasts": {k: v.to_dict() for k, v in fc.items() if k != "requested_cpu_cores"},
                "money": _money(now, settings.prices),
                "decision": decision.to_dict(),
            }
        )
        stored[pool] = {
            name: {
                "method": f.method,
                "unit": next(s.unit for s in SERIES if s.name == name),
                "series": [
                    {
                        "date": p.day.isoformat(),
                        "mean": p.mean,
                        "lo80": p.lo80,
                        "hi80": p.hi80,
                        "lo95": p.lo95,
                        "hi95": p.hi95,
                    }
                    for p in f.points
                ],
            }
            for name, f in fc.items()
            if f.method != "none"
        }
    cluster = cluster_figures(figures, month)
    cluster_before = cluster_figures(figures, month.shift(-1))
    if cluster is None:  # the reader refuses empty and misnamed day files; defence in depth
        raise InputError(
            f"HISTORY_DIR: {root}/pools holds no rows of {month}; re-run `analyzer history "
            "backfill` for its days or delete their files"
        )
    cluster_entry = {
        "name": cluster.pool,
        "pools": len(pools_now),
        "nodes_mean": cluster.nodes_mean,
        **_figures_dict(cluster),
        "change": _change(cluster, cluster_before),
        "money": None,
    }
    if settings.prices is not None:
        totals: dict[str, Any] = {"currency": settings.prices.currency}
        for figure in ("idle", "slack"):
            parts = [p["money"][figure] for p in pool_entries if p["money"] and p["money"][figure]]
            totals[figure] = (
                None
                if len(parts) != len(pool_entries)
                else {k: sum(x[k] for x in parts) for k in ("cpu", "memory", "total")}
            )
        cluster_entry["money"] = totals

    workload_rows = read_workloads(root, start, end)
    if workload_rows.empty:
        month_rows = workload_rows
    else:
        day = pd.to_datetime(workload_rows["day"], utc=True).dt.date
        month_rows = workload_rows[(day >= month.first) & (day <= month.last)]
    per_month = workload_months(workload_rows, settings.method)
    table = workload_table(per_month, str(month))
    stored_month = read_forecast(root, previous)
    identity = read_identity(root)
    history_end = max(d for d in in_month)
    payload: dict[str, Any] = {
        "title": f"Monthly capacity review {month}",
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "analyzer_version": __version__,
        "history": str(root),
        # the history's cluster (history/cluster.json; null for a history written before it)
        "history_cluster": None if identity is None else identity.cluster,
        "month": str(month),
        "month_days": month.days,
        "days_with_history": len(in_month),
        "history_first_day": all_days[0].isoformat(),
        "history_last_day": all_days[-1].isoformat(),
        "trend_months": [str(m) for m in window],
        "horizon_days": settings.horizon_days,
        "thresholds": dict(settings.thresholds),
        "method": settings.method,
        "prices": None
        if settings.prices is None
        else {"currency": settings.prices.currency, "source": settings.prices.source},
        "pools": pool_entries,
        "cluster": cluster_entry,
        "workloads": workload_records(table),
        "notes": notes,
        # what the review read: the history's days of the window, and their Prometheus step
        "read": read_note(root, [d for d in all_days if start <= d <= end]),
        # headroom per pod shape from the nightly runs' daily series (docs/headroom.md)
        "headroom": headroom_trend(read_headroom(root, start, end), month),
    }
    if stored_month is not None:
        payload["backtest"] = score_forecast(stored_month, daily, month)
    # last month's recommendations against what happened since (docs/monthly.md)
    payload["previous_month"] = previous
    ledger = read_ledger(root, previous)
    if ledger is not None:
        payload["ledger"] = score_ledger(ledger, workload_rows, daily, settings.prices)
    return Review(
        payload=payload,
        month=month,
        daily=daily,
        forecasts=forecasts,
        month_rows=_month_rows(figures),
        workloads=table,
        stored_forecast={
            "history_end": history_end.isoformat(),
            "horizon_days": settings.horizon_days,
            "analyzer_version": __version__,
            "thresholds": dict(settings.thresholds),
            "pools": stored,
        },
        workload_days=month_rows.reset_index(drop=True),
    )


def _month_rows(figures: list[MonthFigures]) -> pd.DataFrame:
    rows = []
    for f in figures:
        row: dict[str, Any] = {"pool": f.pool, "month": f.month, "days": f.days,
                               "nodes_mean": f.nodes_mean, "n_plus_1_ok": f.n_plus_1_ok}  # fmt: skip
        for figure in FIGURES:
            for key in UNIT_KEYS.values():
                row[f"{figure}_{key}"] = f.values[figure][key]
        rows.append(row)
    return pd.DataFrame(rows)


def finite(value: Any) -> bool:
    """True for a finite number (tests and the page use it to catch impossible values)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

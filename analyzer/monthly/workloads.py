"""Workloads of the monthly review: requests, usage percentiles and growth over the months.

From the history's workload rows (``docs/history.md``), per workload (namespace, owner kind,
owner name) and month:

- **requests per pod**: mean over the month's days of ``cpu_request_millicores`` /
  ``memory_request_bytes`` (each day already a time-weighted mean over its pods);
- **replicas**: mean of ``replicas_mean``; **requested** (the workload's total) = mean over the
  days of request per pod × ``replicas_mean``;
- **usage per pod**: CPU p50 / p95 = the nearest-rank p50 / p95 over the days of the daily
  ``cpu_used_p50`` / ``cpu_used_p95``; CPU max and memory max = the largest daily max; memory
  p99 = the p95 over days of the daily ``memory_used_p99``;
- **used** (total) = CPU p95 per pod × replicas (memory: max per pod × replicas);
  **slack** = requested − used;
- **growth**: the change of requested CPU from the previous month (cores, %) and from the first
  month of the trend the workload appears in, per month on average.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.monthly.aggregate import GIB
from analyzer.usage.percentiles import grouped_stats

KEYS = ["namespace", "owner_kind", "owner_name"]


def _p(ids: np.ndarray, values: pd.Series, n: int, stat: str, method: str) -> np.ndarray:
    out: np.ndarray = grouped_stats(ids, values.to_numpy(dtype=float), n, method)[stat]
    return out


def workload_months(rows: pd.DataFrame, method: str = "nearest-rank") -> pd.DataFrame:
    """One row per workload and month (cores and GiB), sorted by workload and month."""
    if rows.empty:
        return pd.DataFrame(columns=[*KEYS, "month"])
    day = pd.to_datetime(rows["day"], utc=True)
    frame = rows.assign(
        month=day.dt.strftime("%Y-%m"),
        req_cpu_total=rows["cpu_request_millicores"] * rows["replicas_mean"] / 1000.0,
        req_mem_total=rows["memory_request_bytes"] * rows["replicas_mean"] / GIB,
    )
    groups = frame.groupby([*KEYS, "month"], sort=True)
    ids = groups.ngroup().to_numpy(dtype=np.int64)
    n = int(ids.max()) + 1
    out = groups.agg(
        pool=("pool", "last"),
        days=("day", "size"),
        replicas_mean=("replicas_mean", "mean"),
        replicas_max=("replicas_max", "max"),
        cpu_request_millicores=("cpu_request_millicores", "mean"),
        memory_request_bytes=("memory_request_bytes", "mean"),
        requested_cpu_cores=("req_cpu_total", "mean"),
        requested_memory_gib=("req_mem_total", "mean"),
        cpu_max_millicores=("cpu_used_max_millicores", "max"),
        memory_max_bytes=("memory_used_max_bytes", "max"),
    ).reset_index()
    out["cpu_request_cores"] = out.pop("cpu_request_millicores") / 1000.0
    out["memory_request_gib"] = out.pop("memory_request_bytes") / GIB
    out["cpu_used_p50_cores"] = _p(ids, frame["cpu_used_p50_millicores"], n, "p50", method) / 1000
    out["cpu_used_p95_cores"] = _p(ids, frame["cpu_used_p95_millicores"], n, "p95", method) / 1000
    out["cpu_used_max_cores"] = out.pop("cpu_max_millicores") / 1000.0
    out["memory_used_p99_gib"] = _p(ids, frame["memory_used_p99_bytes"], n, "p95", method) / GIB
    out["memory_used_max_gib"] = out.pop("memory_max_bytes") / GIB
    out["used_cpu_cores"] = out["cpu_used_p95_cores"] * out["replicas_mean"]
    out["used_memory_gib"] = out["memory_used_max_gib"] * out["replicas_mean"]
    out["slack_cpu_cores"] = out["requested_cpu_cores"] - out["used_cpu_cores"]
    out["slack_memory_gib"] = out["requested_memory_gib"] - out["used_memory_gib"]
    return out


def workload_table(months: pd.DataFrame, month: str) -> pd.DataFrame:
    """The workloads present in ``month`` with their growth over the trend (one row each)."""
    if months.empty or "requested_cpu_cores" not in months:
        return pd.DataFrame()
    current = months[months["month"] == month].set_index(KEYS)
    if current.empty:
        return current.reset_index()
    ordered = sorted(months["month"].unique())
    position = {m: i for i, m in enumerate(ordered)}
    earlier = months[months["month"] < month]
    previous_month = ordered[position[month] - 1] if position[month] > 0 else None
    prev = earlier[earlier["month"] == previous_month].set_index(KEYS)["requested_cpu_cores"]
    first_rows = earlier.sort_values("month").groupby(KEYS).head(1).set_index(KEYS)
    out = current.copy()
    out["requested_cpu_cores_previous"] = prev.reindex(out.index)
    out["growth_cpu_cores"] = out["requested_cpu_cores"] - out["requested_cpu_cores_previous"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["growth_cpu_pct"] = np.where(
            out["requested_cpu_cores_previous"] > 0,
            100.0 * out["growth_cpu_cores"] / out["requested_cpu_cores_previous"],
            np.nan,
        )
    first = first_rows.reindex(out.index)
    span = first["month"].map(
        lambda m: position[month] - position[m] if isinstance(m, str) else np.nan
    )
    out["trend_first_month"] = first["month"]
    out["trend_months"] = span
    with np.errstate(divide="ignore", invalid="ignore"):
        out["growth_cpu_cores_per_month"] = np.where(
            span > 0, (out["requested_cpu_cores"] - first["requested_cpu_cores"]) / span, np.nan
        )
    return out.reset_index()


def workload_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """``report.json`` ``workloads[]``: requests, usage percentiles and growth (NaN → null)."""
    records = []
    for row in table.itertuples(index=False):
        r = row._asdict()

        def num(key: str, r: dict[str, Any] = r) -> float | None:
            value = r.get(key)
            return None if value is None or pd.isna(value) else float(value)

        records.append(
            {
                "namespace": r["namespace"],
                "owner_kind": r["owner_kind"],
                "owner_name": r["owner_name"],
                "pool": r["pool"],
                "days": int(r["days"]),
                "replicas_mean": num("replicas_mean"),
                "requests_per_pod": {
                    "cpu_cores": num("cpu_request_cores"),
                    "memory_gib": num("memory_request_gib"),
                },
                "requested": {
                    "cpu_cores": num("requested_cpu_cores"),
                    "memory_gib": num("requested_memory_gib"),
                },
                "usage_per_pod": {
                    "cpu_p50_cores": num("cpu_used_p50_cores"),
                    "cpu_p95_cores": num("cpu_used_p95_cores"),
                    "cpu_max_cores": num("cpu_used_max_cores"),
                    "memory_p99_gib": num("memory_used_p99_gib"),
                    "memory_max_gib": num("memory_used_max_gib"),
                },
                "slack": {
                    "cpu_cores": num("slack_cpu_cores"),
                    "memory_gib": num("slack_memory_gib"),
                },
                "growth": {
                    "cpu_cores_vs_previous_month": num("growth_cpu_cores"),
                    "cpu_pct_vs_previous_month": num("growth_cpu_pct"),
                    "cpu_cores_per_month": num("growth_cpu_cores_per_month"),
                    "since_month": r.get("trend_first_month")
                    if isinstance(r.get("trend_first_month"), str)
                    else None,
                },
            }
        )
    return records

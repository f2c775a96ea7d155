"""Score last month's stored forecast against what happened (the back-test, docs/monthly.md).

For each pool and series of the stored forecast, on the days of the reviewed month that have both
a forecast point and an observed value: the mean error (forecast − observed, in the series' unit),
the mean absolute error, the mean absolute percentage error (over days whose observed value is not
0) and the share of days whose observed value fell inside the 80 % and the 95 % prediction
interval. A well-calibrated forecast has about 80 % and 95 % of days inside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.monthly.months import Month
from analyzer.monthly.series import BY_NAME


def score_forecast(stored: dict[str, Any], daily: pd.DataFrame, month: Month) -> dict[str, Any]:
    """The ``backtest`` object of report.json for ``stored`` (a forecast made before ``month``)."""
    in_month = daily[(daily["day"] >= month.first) & (daily["day"] <= month.last)]
    rows: list[dict[str, Any]] = []
    inside80 = inside95 = total = 0
    pools = stored.get("pools") or {}
    for pool in sorted(pools):
        observed_pool = in_month[in_month["pool"] == pool]
        for name in sorted(pools[pool] or {}):
            spec = BY_NAME.get(name)
            entry = pools[pool][name] or {}
            points = entry.get("series") or []
            if spec is None or not points:
                continue
            forecast = pd.DataFrame(points)
            forecast["day"] = pd.to_datetime(forecast["date"]).dt.date
            observed = observed_pool[["day", spec.column]].rename(columns={spec.column: "actual"})
            both = forecast.merge(observed, on="day").dropna(subset=["actual", "mean"])
            if both.empty:
                continue
            actual = both["actual"].to_numpy(float)
            mean = both["mean"].to_numpy(float)
            in80 = (both["lo80"] <= both["actual"]) & (both["actual"] <= both["hi80"])
            in95 = (both["lo95"] <= both["actual"]) & (both["actual"] <= both["hi95"])
            nonzero = actual != 0
            mape = (
                float(
                    100.0
                    * np.mean(np.abs(mean[nonzero] - actual[nonzero]) / np.abs(actual[nonzero]))
                )
                if nonzero.any()
                else None
            )
            rows.append(
                {
                    "pool": pool,
                    "series": name,
                    "unit": spec.unit,
                    "method": entry.get("method"),
                    "days": len(both),
                    "mean_error": float(np.mean(mean - actual)),
                    "mean_abs_error": float(np.mean(np.abs(mean - actual))),
                    "mape_pct": mape,
                    "inside80_pct": float(100.0 * in80.mean()),
                    "inside95_pct": float(100.0 * in95.mean()),
                }
            )
            inside80 += int(in80.sum())
            inside95 += int(in95.sum())
            total += len(both)
    stored_series = sum(
        1 for entries in pools.values() for entry in (entries or {}).values()
        if (entry or {}).get("series")
    )  # fmt: skip
    return {
        "forecast_month": stored.get("month"),
        # how many (pool, series) forecasts the stored file holds: 0 when its review had too
        # little history to forecast anything, which is why nothing could be scored
        "series_stored": stored_series,
        "forecast_history_end": stored.get("history_end"),
        "scored_month": str(month),
        "rows": rows,
        "days_scored": total,
        "inside80_pct": None if total == 0 else 100.0 * inside80 / total,
        "inside95_pct": None if total == 0 else 100.0 * inside95 / total,
    }

"""The four daily series the review forecasts per pool, and the capacity line each must stay under.

| series | daily value (docs/history.md column) | capacity line |
|---|---|---|
| ``requested_cpu_cores`` | ``cpu_requested_peak_millicores`` / 1000 | allocatable − the largest node (N+1) |
| ``requested_memory_gib`` | ``memory_requested_peak_bytes`` / 2^30 | allocatable − the largest node (N+1) |
| ``used_cpu_cores`` | ``cpu_used_p95_millicores`` / 1000 | allocatable × the CPU usage threshold |
| ``used_memory_gib`` | ``memory_used_p95_bytes`` / 2^30 | allocatable × the memory usage threshold |

Allocatable is the day's ``*_allocatable_mean_*``; the largest node is the day's
``largest_node_*_allocatable_*``. Thresholds are Koordinator's LoadAware usage thresholds (65 %
CPU, 95 % memory by default, as for the nightly violations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class SeriesSpec:
    """One forecast series: its name (and unit), the daily column, and how its capacity is made."""

    name: str
    resource: str  # cpu | memory
    kind: str  # requested | used
    unit: str  # cores | GiB

    @property
    def column(self) -> str:
        return (
            f"requested_peak_{self.resource}"
            if self.kind == "requested"
            else f"used_p95_{self.resource}"
        )

    @property
    def label(self) -> str:
        """``requested CPU (daily peak)`` / ``used memory (daily p95)``."""
        name = "CPU" if self.resource == "cpu" else "memory"
        return f"{self.kind} {name} (daily {'peak' if self.kind == 'requested' else 'p95'})"

    def line_label(self, thresholds: Mapping[str, int]) -> str:
        """The capacity line's name: ``allocatable minus the largest node`` / ``65 % of allocatable``."""
        if self.kind == "requested":
            return "allocatable minus the largest node (N+1)"
        return f"{thresholds[self.resource]} % of allocatable (Koordinator usage threshold)"

    def basis(self, thresholds: Mapping[str, int]) -> str:
        return f"{self.label} vs {self.line_label(thresholds)}"

    def capacity(self, daily: pd.DataFrame, thresholds: Mapping[str, int]) -> pd.Series:
        """The daily capacity line of one pool's rows, indexed by day."""
        alloc = daily[f"allocatable_{self.resource}"]
        if self.kind == "requested":
            line = alloc - daily[f"largest_{self.resource}"]
        else:
            line = alloc * thresholds[self.resource] / 100.0
        return pd.Series(line.to_numpy(float), index=pd.to_datetime(daily["day"]))

    def values(self, daily: pd.DataFrame) -> pd.Series:
        """The daily series of one pool's rows, indexed by day."""
        return pd.Series(daily[self.column].to_numpy(float), index=pd.to_datetime(daily["day"]))


SERIES = (
    SeriesSpec("requested_cpu_cores", "cpu", "requested", "cores"),
    SeriesSpec("requested_memory_gib", "memory", "requested", "GiB"),
    SeriesSpec("used_cpu_cores", "cpu", "used", "cores"),
    SeriesSpec("used_memory_gib", "memory", "used", "GiB"),
)
BY_NAME = {s.name: s for s in SERIES}

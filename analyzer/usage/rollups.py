"""Daily rollups: node × UTC day × resource × stat, with allocatable and requested totals.

The reports and the history store keep these (``analyzer.usage.aggregate.daily_rollups`` is the public
entry point). A day holds the samples in ``(day, day + 1d]`` (a sample stands for the step before
it); a day whose samples cover less than half of it is missing, like any aggregate window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.usage.grid import DAY, RESOURCES, STATS, index_in, missing_mask, snapshot_step
from analyzer.usage.percentiles import check_method, grouped_stats


def _requested_per_day(snapshot: Snapshot, days: pd.DatetimeIndex) -> dict[str, np.ndarray]:
    """Time-averaged Σ requests of the pods on each node per day: ``{resource: nodes × days}``."""
    nodes = pd.Index(snapshot.nodes["node"].astype(str))
    intervals = pod_intervals(snapshot)
    requests = snapshot.pods.set_index("uid").loc[intervals["uid"]]
    node_idx = nodes.get_indexer(intervals["node"].astype(str))
    keep = node_idx >= 0
    start_ns = pd.DatetimeIndex(intervals["start"]).as_unit("ns").asi8
    end_ns = pd.DatetimeIndex(intervals["end"]).as_unit("ns").asi8
    data_start, data_end = snapshot.start.value, snapshot.end.value
    result = {r: np.zeros((len(nodes), len(days))) for r in RESOURCES}
    for j, day in enumerate(days):
        lo = max(day.value, data_start)
        hi = min((day + pd.Timedelta(DAY)).value, data_end)
        if hi <= lo:
            continue
        overlap = np.clip(np.minimum(end_ns, hi) - np.maximum(start_ns, lo), 0, None)
        share = overlap / (hi - lo)
        for resource in RESOURCES:
            weights = requests[f"requests:{resource}"].to_numpy(dtype=np.float64) * share
            result[resource][:, j] = np.bincount(
                node_idx[keep], weights=weights[keep], minlength=len(nodes)
            )
    return result


def node_day_rollups(snapshot: Snapshot, *, method: str = "nearest-rank") -> pd.DataFrame:
    """Node × UTC day × resource × stat rollups for reports and the history store.

    Columns: ``node``, ``pool``, ``day`` (datetime64 UTC midnight), ``resource``, ``stat``,
    ``value`` (stat of the samples in ``(day, day + 1d]``; NaN if they cover < half the day),
    ``allocatable`` (int), ``requested`` (float: time-averaged Σ pod requests on the node over the
    part of the day the snapshot covers), ``samples`` (int), ``missing`` (bool).
    """
    check_method(method)
    usage = snapshot.node_usage
    step = snapshot_step(snapshot)
    nodes = snapshot.nodes.reset_index(drop=True)
    names = pd.Index(nodes["node"].astype(str))
    columns = ["node", "pool", "day", "resource", "stat", "value", "allocatable", "requested"]
    if usage.empty or nodes.empty:
        return pd.DataFrame(columns=[*columns, "samples", "missing"])
    # A sample at t covers (t - step, t]: midnight belongs to the day before.
    shifted = usage["timestamp"] - pd.Timedelta(1, "ns")
    day_of = shifted.dt.floor("D")
    days = pd.DatetimeIndex(sorted(day_of.unique()))
    day_idx = days.get_indexer(day_of)
    node_idx = index_in(usage["node"], list(names))
    keep = node_idx >= 0
    group = (node_idx * len(days) + day_idx)[keep].astype(np.int64)
    requested = _requested_per_day(snapshot, days)
    frames = []
    for resource in RESOURCES:
        values = usage[resource].to_numpy(dtype=np.float64)[keep]
        stats = grouped_stats(group, values, len(names) * len(days), method)
        samples = stats["count"].astype(np.int64)
        missing = missing_mask(samples, step, DAY)
        alloc = nodes[f"allocatable:{resource}"].to_numpy(dtype=np.int64)
        for stat in STATS:
            frames.append(
                pd.DataFrame(
                    {
                        "node": np.repeat(names.to_numpy(dtype=object), len(days)),
                        "pool": np.repeat(nodes["pool"].astype(object).to_numpy(), len(days)),
                        "day": np.tile(days.to_numpy(), len(names)),
                        "resource": resource,
                        "stat": stat,
                        "value": np.where(missing, np.nan, stats[stat]),
                        "allocatable": np.repeat(alloc, len(days)),
                        "requested": requested[resource].ravel(),
                        "samples": samples,
                        "missing": missing,
                    }
                )
            )
    out = pd.concat(frames, ignore_index=True)
    out["day"] = pd.to_datetime(out["day"], utc=True)
    return out.sort_values(["node", "day", "resource"], kind="stable").reset_index(drop=True)

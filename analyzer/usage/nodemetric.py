"""Koordinator ``NodeMetric`` objects from a snapshot and its window aggregates.

Schema: research/koordinator.md §3 (``slo.koordinator.sh/v1alpha1``, cluster-scoped, name = node).
``nodeUsage`` and ``podsMetric[].podUsage`` are koordlet's 5-minute averages; each
``aggregatedNodeUsages`` entry carries avg/p50/p90/p95/p99 for one window; a window koordlet would
leave empty (cold start) has its resources left out. Quantities: cpu ``"<millicores>m"``, memory
bytes as a plain integer string.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.durations import go_duration
from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.usage.grid import NODE_USAGE_WINDOW, RESOURCES, STATS
from analyzer.usage.koord import koord_priority_class, koord_qos

# Floating-point noise: a value this close to an integer is that integer. Cores × 1000 and sums
# of such floats land a few ulps off (1.005 × 1000 = 1004.9999999999999), and the truncation below
# would then drop a whole millicore. The real fractional part of an aggregate of n samples is a
# multiple of 1/n (≫ 1e-6), so nothing real is rounded away; large memory values get a
# relative tolerance (float64 carries ~16 digits).
NOISE_ABS = 1e-6
NOISE_REL = 1e-12


def truncate_toward_zero(value: float) -> int:
    """Go's ``int64(value)`` after removing floating-point noise around integers."""
    nearest = round(value)
    if abs(value - nearest) <= max(NOISE_ABS, abs(value) * NOISE_REL):
        return int(nearest)
    return int(value)


def _cpu_quantity(millicores: float) -> str:
    # koordlet builds MilliQuantity from int64(cores*1000): truncation toward zero.
    return f"{truncate_toward_zero(millicores)}m"


def _memory_quantity(bytes_used: float) -> str:
    return str(truncate_toward_zero(bytes_used))


def _resources(values: dict[str, float]) -> dict[str, str]:
    out: dict[str, str] = {}
    if "cpu" in values and values["cpu"] == values["cpu"]:  # NaN (missing) != itself
        out["cpu"] = _cpu_quantity(values["cpu"])
    if "memory" in values and values["memory"] == values["memory"]:
        out["memory"] = _memory_quantity(values["memory"])
    return out


def _five_minute_avg(usage: pd.DataFrame, key: str, at: pd.Timestamp) -> pd.DataFrame:
    """Per-key mean over ``(at - 5m, at]`` (nodeUsage / podUsage: no cold-start filter)."""
    times = usage["timestamp"]
    inside = (times > at - pd.Timedelta(NODE_USAGE_WINDOW)) & (times <= at)
    result: pd.DataFrame = usage.loc[inside.to_numpy()].groupby(key)[list(RESOURCES)].mean()
    return result


def _pods_metric(
    snapshot: Snapshot, pod_avg: pd.DataFrame, at: pd.Timestamp
) -> dict[str, list[dict[str, Any]]]:
    """``podsMetric`` entries per node: pods bound at ``at`` that have usage samples."""
    intervals = pod_intervals(snapshot)
    running = intervals[(intervals["start"] <= at) & (intervals["end"] > at)]
    pods = snapshot.pods.assign(
        priority_band=koord_priority_class(snapshot.pods).to_numpy(),
        koord_qos=koord_qos(snapshot.pods).to_numpy(),
    )[["uid", "name", "namespace", "priority_band", "koord_qos"]]
    joined = (
        running[["uid", "node"]]
        .merge(pods, on="uid")
        .merge(pod_avg.reset_index(), on="uid", how="inner")
    )
    by_node: dict[str, list[dict[str, Any]]] = {}
    for row in joined.itertuples(index=False):
        by_node.setdefault(str(row.node), []).append(
            {
                "name": str(row.name),
                "namespace": str(row.namespace),
                "podUsage": {"resources": _resources({"cpu": row.cpu, "memory": row.memory})},
                "priority": str(row.priority_band) or None,
                "qos": str(row.koord_qos) or None,
            }
        )
    return by_node


def nodemetric_objects(
    snapshot: Snapshot, aggregates: pd.DataFrame, *, at: pd.Timestamp
) -> list[dict[str, Any]]:
    """Koordinator ``NodeMetric`` objects (``slo.koordinator.sh/v1alpha1``), one per node.

    ``aggregates`` is ``window_aggregates`` output for the same ``at``. ``nodeUsage`` and each
    ``podsMetric[].podUsage`` are 5-minute averages ending at ``at`` (koordlet's report), pods
    being those bound to the node at ``at``. A missing aggregate leaves that resource out of
    ``resources`` (koordlet's cold-start rule). cpu quantities are ``"<millicores>m"``, memory bytes.
    """
    at = pd.Timestamp(at)
    update_time = at.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    durations = sorted(aggregates["duration"].unique()) if not aggregates.empty else []
    node_avg = _five_minute_avg(snapshot.node_usage, "node", at)
    pod_avg = _five_minute_avg(snapshot.pod_usage, "uid", at)
    by_node = _pods_metric(snapshot, pod_avg, at)
    # One pass over the aggregates: node → duration → stat → resource → value.
    table: dict[str, dict[Any, dict[str, dict[str, float]]]] = {}
    durations_ns = pd.to_timedelta(aggregates["duration"]).to_numpy().astype("timedelta64[ns]")
    for node, duration, stat, resource, value in zip(
        aggregates["node"].to_numpy(dtype=object).tolist(),
        durations_ns.astype(np.int64).tolist(),
        aggregates["stat"].to_numpy(dtype=object).tolist(),
        aggregates["resource"].to_numpy(dtype=object).tolist(),
        aggregates["value"].to_numpy(dtype=np.float64).tolist(),
        strict=True,
    ):
        table.setdefault(node, {}).setdefault(duration, {}).setdefault(stat, {})[resource] = value
    labels = [go_duration(pd.Timedelta(d).to_pytimedelta()) for d in durations]
    keys = [pd.Timedelta(d).value for d in durations]
    node_usage_of: dict[str, dict[str, float]] = node_avg.to_dict("index")
    objects: list[dict[str, Any]] = []
    for node in snapshot.nodes["node"].astype(str):
        aggregated = []
        node_table = table.get(node, {})
        for key, label in zip(keys, labels, strict=True):
            stats = node_table.get(key, {})
            usage = {stat: {"resources": _resources(stats.get(stat, {}))} for stat in STATS}
            aggregated.append({"duration": label, "usage": usage})
        node_usage = node_usage_of.get(node, {})
        objects.append(
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": node},
                "spec": {
                    "metricCollectPolicy": {
                        "aggregateDurationSeconds": int(NODE_USAGE_WINDOW.total_seconds()),
                        "reportIntervalSeconds": 60,
                        "nodeAggregatePolicy": {"durations": labels},
                    }
                },
                "status": {
                    "updateTime": update_time,
                    "nodeMetric": {
                        "nodeUsage": {"resources": _resources(node_usage)},
                        "aggregatedNodeUsages": aggregated,
                    },
                    "podsMetric": by_node.get(node, []),
                },
            }
        )
    return objects

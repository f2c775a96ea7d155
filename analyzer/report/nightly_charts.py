"""The nightly report's charts: which rows and numbers each chart shows, drawn by ``charts``.

Big clusters are bucketed before drawing (the heatmap shows the hottest nodes plus one mean row
per pool; the timeline the nodes with the most breach minutes), so chart size does not grow with
the node count. The numbers each chart draws are returned too, for ``report.json``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.nightly.run import NightlyResult
from analyzer.report import charts
from analyzer.report.charts import Chart
from analyzer.report.views import json_value

HEATMAP_TOP = 30
TIMELINE_TOP = 40


def heatmap_rows(
    hourly: pd.DataFrame, nodes: pd.DataFrame, resource: str, top: int = HEATMAP_TOP
) -> tuple[np.ndarray, list[str], list[str]]:
    """Hours × (top-N hottest nodes by p95, then each pool's mean): the heatmap's matrix.

    Bucketing keeps the chart readable and small for 5,000 nodes; every node's hourly numbers
    are in ``hourly_usage.csv``.
    """
    hours = sorted(hourly["hour"].unique())
    if not hours:
        return np.zeros((0, 0)), [], []
    hour_labels = [pd.Timestamp(h).strftime("%H:00") for h in hours]
    ranked = nodes.sort_values([f"{resource}_p95_pct", "node"], ascending=[False, True])
    hottest = list(ranked["node"].head(top))
    wide = hourly.pivot_table(index="node", columns="hour", values=resource, aggfunc="first")
    wide = wide.reindex(index=hottest, columns=hours)
    pools = hourly.groupby(["pool", "hour"])[resource].mean().unstack().reindex(columns=hours)
    matrix = np.vstack([wide.to_numpy(dtype=float), pools.to_numpy(dtype=float)])
    labels = hottest + [f"pool {p} (mean)" for p in pools.index]
    return matrix, labels, hour_labels


STATS = ("avg", "p50", "p90", "p95", "p99")
RESOURCE_NAMES = {"cpu": "CPU", "memory": "memory"}
TREND_SERIES = {
    "cpu_used_p95_pct": "CPU used p95, hottest pool",
    "cpu_requested_pct": "CPU requested",
    "fragmentation_pct": "free CPU fragmented (FGD)",
    "coverage_pct": "data coverage",
}
FLAT = 0.05  # a share series within ±0.05 % of zero all day is said in words, not drawn


def _resource_name(resource: str) -> str:
    return RESOURCE_NAMES.get(resource, resource)


def fragmentation_series(
    over: pd.DataFrame,
) -> tuple[list[str], dict[str, list[float]], list[str]]:
    """The fragmentation chart's x labels and series (in % of free), and the flat-zero series.

    One FGD series per resource with capacity and a stranded-share series for the resources
    that have a stranded rule; series that stay at zero all day are returned by name instead
    of drawn (a flat line at 0 tells less than the words "0 % all day").
    """
    seen = over[(over["nodes"] > 0) & (over["allocatable"] > 0)]
    times = sorted(seen["time"].unique())
    labels = [pd.Timestamp(t).strftime("%H:%M") for t in times]
    if len(labels) > 1 and labels[-1] == "00:00":
        labels[-1] = "24:00"  # the day's end, not its start
    series: dict[str, list[float]] = {}
    flat: list[str] = []
    for resource, group in seen.groupby("resource", sort=False):
        name = _resource_name(str(resource))
        by_time = group.set_index("time").reindex(times)
        candidates = {f"{name}: unusable by common shapes (FGD)": by_time["frag_ratio"]}
        if resource in ("cpu", "memory") or "/" in str(resource):
            candidates[f"{name}: stranded"] = by_time["stranded_share"]
        for label, values in candidates.items():
            pct = (pd.to_numeric(values, errors="coerce") * 100.0).to_numpy(dtype=float)
            if np.all(np.isnan(pct) | (np.abs(pct) < FLAT)):
                flat.append(label)
            else:
                series[label] = [float(v) for v in pct]
    return labels, series, flat


def build_charts(
    result: NightlyResult, data: dict[str, Any], notes: dict[str, str] | None = None
) -> dict[str, Chart]:
    """All charts; ``data`` receives the numbers each chart draws (for report.json), ``notes``
    the sentences that replace what is not drawn (flat series)."""
    out: dict[str, Chart] = {}
    notes = notes if notes is not None else {}
    pools = result.pools
    if len(pools):
        names = [str(p) for p in pools["pool"]]
        for resource in ("cpu", "memory"):
            series = {stat: [float(v) for v in pools[f"{resource}_{stat}_pct"]] for stat in STATS}
            top = max([100.0, *(v for vs in series.values() for v in vs if v == v)])
            out[f"pool_percentiles_{resource}"] = charts.grouped_bars(
                names, series, ylim=(0, top * 1.08),
                title=f"{_resource_name(resource)} usage per pool: percentiles of the pool total",
                ylabel=f"{_resource_name(resource)} used, % of pool allocatable",
            )  # fmt: skip
            data[f"pool_percentiles_{resource}"] = {
                "pools": names,
                **{k: [json_value(x) for x in v] for k, v in series.items()},
            }
    for resource in ("cpu", "memory"):
        matrix, labels, hours = heatmap_rows(result.hourly, result.nodes, resource)
        if matrix.size:
            name = _resource_name(resource)
            out[f"heatmap_{resource}"] = charts.heatmap(
                matrix,
                labels,
                hours,
                # within charts.TITLE_LIMIT: a longer title is cut in its middle on the image
                title=f"{name}: hourly MEAN usage (not a percentile), the {HEATMAP_TOP} nodes of "
                "highest p95 + a mean row per pool",
                alt=f"heatmap of hourly mean {name} usage per node",
                xlabel="hour starting (UTC)",
                colorbar_label=f"{name} used, mean % of allocatable",
            )
            data[f"heatmap_{resource}"] = {
                "rows": labels,
                "hours": hours,
                "values": [[json_value(x) for x in row] for row in matrix],
            }
    breaches = result.violations.breaches
    if len(breaches):
        per_node = result.violations.per_node
        nodes = list(per_node[per_node["breaches"] > 0]["node"].head(TIMELINE_TOP))
        shown = breaches[breaches["node"].isin(nodes)]
        out["timeline"] = charts.breach_timeline(
            shown, nodes, start=result.start, end=result.end,
            title=f"Breaches per node (top {len(nodes)} by time over threshold)",
        )  # fmt: skip
        data["timeline"] = {"nodes": nodes}
    nodes = result.nodes
    if len(nodes):
        out["requested_vs_used"] = charts.scatter(
            nodes, x="cpu_requested_pct", y="cpu_p95_pct", group="pool",
            title="CPU: requested vs used p95 per node (dashed: used = requested)",
            xlabel="CPU requested, % of node allocatable",
            ylabel="CPU used p95, % of node allocatable",
        )  # fmt: skip
    over = result.fragmentation.over_time
    if len(over):
        times, series, flat = fragmentation_series(over)
        if flat:
            notes["fragmentation"] = (
                "At 0 % all day (not drawn): " + "; ".join(flat) + "."
                if series
                else "Every fragmentation and stranded share was 0 % all day: "
                + "; ".join(flat)
                + "."
            )
        if series:
            out["fragmentation"] = charts.lines(
                times, series, title="Free capacity the common pod shapes cannot use, over the day",
                ylabel="% of the free amount", xlabel="UTC", ylim=(0, 105), end_labels=6,
            )  # fmt: skip
        data["fragmentation"] = {"times": times, **{k: [json_value(x) for x in v] for k, v in series.items()}, "flat": flat}  # fmt: skip
    return out


def trend_chart(history: pd.DataFrame) -> Chart | None:
    """Key numbers over the stored days (from the history store)."""
    if len(history) < 2:
        return None
    days = [str(d) for d in history["day"]]
    series: dict[str, list[float]] = {
        name: [float(x) for x in pd.to_numeric(history[key], errors="coerce")]
        for key, name in TREND_SERIES.items()
        if key in history
    }
    return charts.lines(
        days, series, title="Trend over the stored days", ylabel="% (each series' own base)",
        xlabel="day (UTC)",
        ylim=(0, 105), end_labels=6,
    )  # fmt: skip


def daily_heatmap(
    rollups: pd.DataFrame, data: dict[str, Any], resource: str = "cpu", stat: str = "p95"
) -> Chart | None:
    """Nodes × stored days of a daily stat (% of allocatable): hottest nodes + pool means.

    ``rollups`` are daily rollups of several days (the history store plus today); ``None`` when
    they hold fewer than two days.
    """
    part = rollups[(rollups["resource"] == resource) & (rollups["stat"] == stat)]
    if part.empty or part["day"].nunique() < 2:
        return None
    allocatable = part["allocatable"].astype("float64").where(part["allocatable"] > 0)
    part = part.assign(pct=part["value"] / allocatable * 100.0)
    days = sorted(part["day"].unique())
    wide = part.pivot_table(index="node", columns="day", values="pct", aggfunc="first")
    wide = wide.reindex(columns=days)
    ranked = wide.mean(axis=1, skipna=True).sort_values(ascending=False, kind="stable")
    hottest = list(ranked.index[:HEATMAP_TOP])
    pools = part.groupby(["pool", "day"])["pct"].mean().unstack().reindex(columns=days)
    matrix = np.vstack([wide.reindex(hottest).to_numpy(dtype=float), pools.to_numpy(dtype=float)])
    labels = [str(n) for n in hottest] + [f"pool {p} (mean)" for p in pools.index]
    day_labels = [pd.Timestamp(d).strftime("%m-%d") for d in days]
    data[f"heatmap_days_{resource}"] = {
        "stat": stat,
        "rows": labels,
        "days": [pd.Timestamp(d).strftime("%Y-%m-%d") for d in days],
        "values": [[json_value(x) for x in row] for row in matrix],
    }
    name = _resource_name(resource)
    return charts.heatmap(
        matrix,
        labels,
        day_labels,
        title=f"{name} {stat} per day: the {HEATMAP_TOP} hottest nodes over the stored days + "
        "a mean row per pool",
        alt=f"heatmap of daily {name} {stat} per node",
        xlabel="day (UTC, month-day)",
        colorbar_label=f"{name} used {stat}, % of allocatable",
    )

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


def build_charts(result: NightlyResult, data: dict[str, Any]) -> dict[str, Chart]:
    """All charts; ``data`` receives the numbers each chart draws (for report.json)."""
    out: dict[str, Chart] = {}
    for resource in ("cpu", "memory"):
        matrix, labels, hours = heatmap_rows(result.hourly, result.nodes, resource)
        if matrix.size:
            out[f"heatmap_{resource}"] = charts.heatmap(
                matrix,
                labels,
                hours,
                title=f"{resource}: hourly mean usage, {HEATMAP_TOP} hottest nodes by p95 + pool means",
                alt=f"heatmap of {resource} usage per node and hour",
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
            title=f"Breaches per node (top {len(nodes)} by breach minutes)",
        )  # fmt: skip
        data["timeline"] = {"nodes": nodes}
    nodes = result.nodes
    if len(nodes):
        out["requested_vs_used"] = charts.scatter(
            nodes, x="cpu_requested_pct", y="cpu_p95_pct", group="pool",
            title="CPU: requested vs used p95 per node", xlabel="requested % of allocatable",
            ylabel="used p95 % of allocatable",
        )  # fmt: skip
    over = result.fragmentation.over_time
    if len(over):
        cpu = over[over["resource"] == "cpu"]
        mem = over[over["resource"] == "memory"]
        times = [pd.Timestamp(t).strftime("%H:%M") for t in cpu["time"]]
        series: dict[str, list[float]] = {
            "CPU FGD %": list(cpu["frag_ratio"].to_numpy(dtype=float) * 100),
            "CPU stranded % of free": list(cpu["stranded_share"].to_numpy(dtype=float) * 100),
        }
        if len(mem) == len(cpu):
            series["memory stranded % of free"] = list(
                mem["stranded_share"].to_numpy(dtype=float) * 100
            )
        out["fragmentation"] = charts.lines(
            times, series, title="Fragmentation over the day", ylabel="% of free", xlabel="UTC"
        )
    return out


def trend_chart(history: pd.DataFrame) -> Chart | None:
    """Key numbers over the stored days (from the history store)."""
    if len(history) < 2:
        return None
    days = [str(d) for d in history["day"]]
    series: dict[str, list[float]] = {
        key: [float(x) for x in pd.to_numeric(history[key], errors="coerce")]
        for key in ("cpu_used_p95_pct", "cpu_requested_pct", "fragmentation_pct", "coverage_pct")
        if key in history
    }
    return charts.lines(days, series, title="Trend over the stored days", ylabel="%")


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
    return charts.heatmap(
        matrix,
        labels,
        day_labels,
        title=f"{resource} {stat} per day: {HEATMAP_TOP} hottest nodes over the stored days + pool means",
        alt=f"heatmap of daily {resource} {stat} per node",
    )

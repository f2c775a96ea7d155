"""The nightly report's context: cards, answers, tables and charts built from a ``NightlyResult``.

The same views feed the HTML (through jinja), ``report.json`` (every number shown) and one CSV per
table, so the three can never disagree. Big tables keep all rows for CSV/JSON; the HTML shows the
most relevant rows and says where the rest is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from analyzer import __version__
from analyzer.nightly.run import NightlyResult
from analyzer.report.charts import Chart
from analyzer.report.nightly_charts import build_charts, daily_heatmap, trend_chart
from analyzer.report.views import HTML_ROW_LIMIT, Card, Column, TableView, json_value

USAGE_DEFINITIONS = [
    (
        "Node CPU",
        "busy cores from node-exporter: rate of node_cpu_seconds_total with mode not idle, "
        "iowait or steal (millicores)",
    ),
    ("Node memory", "MemTotal − MemAvailable from node-exporter (koordlet's definition)"),
    (
        "Pod usage",
        'cAdvisor app containers only (container!="", container!="POD", image!=""), '
        "never the pod cgroup, so nothing is counted twice",
    ),
    (
        "Requested",
        "Σ effective pod requests (max(app containers + sidecars, largest init container) "
        "+ overhead) of the pods bound to the node, time-averaged over the day",
    ),
    ("Idle requests", "requested − average used, clipped at 0 (reserved but unused)"),
    ("Over-committed node", "its p95 usage is above what its pods requested"),
    (
        "Usage % (thresholds)",
        "Koordinator LoadAwareScheduling: round half away from zero of used / allocatable × 100; "
        "a breach is strictly above the threshold",
    ),
    (
        "Fragmentation (FGD)",
        "share of free capacity that the common pod shapes (covering 95 % of pods, weighted by "
        "popularity) cannot use",
    ),
    (
        "Stranded",
        "free CPU on nodes whose free memory cannot hold the median pod, and the reverse",
    ),
    ("Day", "UTC; a usage sample at t covers the step ending at t, so a day is (00:00, 24:00]"),
]
METHOD_TEXT = {
    "nearest-rank": "nearest-rank (koordlet's rule: sorted samples, index int(n·p) − 1)",
    "linear": "linear interpolation (Prometheus quantile_over_time, numpy default)",
}


@dataclass
class NightlyContext:
    """What the nightly template receives (besides ``version``)."""

    title: str
    day: str
    generated_at: str
    source: str
    method: str
    method_text: str
    cards: list[Card]
    answers: dict[str, str]
    tables: dict[str, TableView]
    charts: dict[str, Chart]
    quality: dict[str, Any]
    thresholds: dict[str, Any]
    definitions: list[tuple[str, str]]
    previous_day: str | None
    chart_data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``report.json``: every number the HTML shows, tables with all their rows."""
        return {
            "schema": "analyzer.nightly/v1",
            "analyzer_version": __version__,
            "day": self.day,
            "generated_at": self.generated_at,
            "source": self.source,
            "percentile_method": self.method,
            "previous_day": self.previous_day,
            "summary": {
                c.key: {
                    "label": c.label,
                    "value": c.value,
                    "unit": c.unit,
                    "previous": c.previous,
                    "delta": c.delta,
                }
                for c in self.cards
            },
            "answers": self.answers,
            "thresholds": self.thresholds,
            "quality": self.quality,
            "tables": {n: t.records() for n, t in self.tables.items() if t.in_json},
            "charts": self.chart_data,
            "definitions": dict(self.definitions),
        }


def _num(value: Any) -> float | None:
    raw = json_value(value)
    return None if raw is None else float(raw)


def build_cards(result: NightlyResult, previous: dict[str, Any] | None) -> list[Card]:
    """Summary cards with deltas vs the previous run's stored summary."""
    s = result.summary.to_dict()
    prev = previous or {}
    cpu_limit = float(result.settings.thresholds.usage.get("cpu", 0) or 0)

    def card(key: str, label: str, unit: str = "", digits: int = 1, **kw: Any) -> Card:
        return Card(key, label, _num(s.get(key)), unit, digits, _num(prev.get(key)), **kw)

    breach_state = "bad" if s["breaches"] else "good"
    coverage_state = "bad" if result.quality.partial else "good"
    cpu_state = "warn" if cpu_limit and (s["cpu_used_p95_pct"] or 0) > cpu_limit else ""
    return [
        card("nodes_with_breaches", "Nodes over threshold", digits=0, state=breach_state),
        card("breach_minutes", "Breach node-minutes", "min", digits=0, state=breach_state),
        card("breaches", "Breaches", digits=0),
        card("cpu_used_p95_pct", "CPU used p95 (hottest pool)", "%", state=cpu_state),
        card("memory_used_p95_pct", "Memory used p95 (hottest pool)", "%"),
        card("cpu_requested_pct", "CPU requested", "%", higher_is_worse=False),
        card("cpu_used_avg_pct", "CPU used (avg)", "%", higher_is_worse=False),
        card("memory_requested_pct", "Memory requested", "%", higher_is_worse=False),
        card("cpu_idle_requested_cores", "Idle CPU requests", "cores"),
        card("memory_idle_requested_gib", "Idle memory requests", "GiB"),
        card("fragmentation_pct", "Free CPU fragmented (FGD)", "%"),
        card("stranded_cpu_cores", "Stranded CPU", "cores"),
        card("stranded_memory_gib", "Stranded memory", "GiB"),
        card("coverage_pct", "Data coverage", "%", 2, higher_is_worse=False, state=coverage_state),
        card("nodes", "Nodes", digits=0, higher_is_worse=False),
        card("pods", "Pods placed", digits=0, higher_is_worse=False),
    ]


def _fmt(value: float, digits: int = 1) -> str:
    return "–" if value != value else f"{value:,.{digits}f}"


def build_answers(result: NightlyResult) -> dict[str, str]:
    """One sentence each: which nodes ran hot, how fragmented, was the data complete."""
    s = result.summary
    per_node = result.violations.per_node
    limits = ", ".join(f"{r} {v} %" for r, v in result.settings.thresholds.usage.items() if v)
    if s.breaches:
        top = ", ".join(
            f"{row.node} ({row.breach_minutes:,.0f} min, peak {row.worst_pct:.0f} % {row.worst_resource})"
            for row in per_node[per_node["breaches"] > 0].head(3).itertuples(index=False)
        )
        hot = (
            f"{s.nodes_with_breaches} of {s.nodes} nodes went over their thresholds (cluster: "
            f"{limits}) for {s.breach_minutes:,.0f} node-minutes in {s.breaches} breaches. "
            f"Hottest: {top}."
        )
    else:
        hot = f"No node went over its thresholds (cluster: {limits})."
    frag = (
        f"{_fmt(s.fragmentation_pct)} % of free CPU could not be used by the common pod shapes "
        f"(FGD, mean over the day); stranded: {_fmt(s.stranded_cpu_cores)} CPU cores and "
        f"{_fmt(s.stranded_memory_gib)} GiB of memory."
    )
    headroom = _last_headroom(result)
    if len(headroom):
        first = headroom.iloc[0]
        frag += (
            f" Headroom at the end of the day: {int(first['fit']):,} more pods of the most common "
            f"shape ({first['label']})."
        )
    q = result.quality
    data = (
        f"{'Yes' if not q.partial else 'No'}: {q.coverage * 100:.2f} % of the expected usage "
        f"samples are present; {q.incomplete_nodes} node(s) below "
        f"{result.settings.min_coverage * 100:.0f} %; {len(q.warnings)} source warning(s)."
    )
    return {"hot": hot, "fragmentation": frag, "data": data}


def _last_headroom(result: NightlyResult) -> pd.DataFrame:
    head = result.fragmentation.headroom
    if head.empty:
        return head
    last = head[head["time"] == head["time"].max()]
    return last.sort_values(["share", "shape"], ascending=[False, True]).reset_index(drop=True)


def _pct_columns(resource: str, stats: tuple[str, ...]) -> list[Column]:
    return [Column(f"{resource}_{s}_pct", f"{resource} {s}", "pct") for s in stats]


def build_tables(result: NightlyResult) -> dict[str, TableView]:
    """Every table of the report (name = CSV file stem and HTML id)."""
    v = result.violations
    breaches = v.breaches.sort_values(["start", "node", "resource"]).reset_index(drop=True)
    per_node = v.per_node[v.per_node["breaches"] > 0] if len(v.per_node) else v.per_node
    nodes = result.nodes.sort_values(["cpu_p95_pct", "node"], ascending=[False, True])
    nodes = nodes.assign(hot=nodes["breach_minutes"] > 0).reset_index(drop=True)
    stats = ("avg", "p50", "p90", "p95", "p99")
    frag = result.fragmentation
    shapes = frag.shapes.copy()
    over = frag.over_time
    coverage = result.quality.per_node.sort_values(["coverage", "node"]).reset_index(drop=True)
    tables = {
        "breaches": TableView(
            "breaches",
            "Threshold breaches",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("resource", "Resource"),
                Column("kind", "Kind"), Column("stat", "Stat"), Column("window", "Window"),
                Column("start", "Start (UTC)", "time"), Column("end", "End (UTC)", "time"),
                Column("minutes", "Minutes", "num", 0), Column("peak_pct", "Peak %", "int"),
                Column("threshold", "Threshold %", "int"), Column("source", "Threshold from"),
            ],
            breaches,
            limit=200,
        ),
        "breach_nodes": TableView(
            "breach_nodes",
            "Nodes over threshold",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("breaches", "Breaches", "int"),
                Column("breach_minutes", "Breach minutes", "num", 0),
                Column("worst_pct", "Worst %", "int"), Column("worst_resource", "Resource"),
                Column("worst_kind", "Kind"), Column("source", "Thresholds from"),
            ],
            per_node.reset_index(drop=True),
        ),
        "pools": TableView(
            "pools",
            "Usage and requests per pool",
            [
                Column("pool", "Pool"), Column("nodes", "Nodes", "int"),
                Column("cpu_requested_pct", "cpu requested", "pct"),
                *_pct_columns("cpu", stats),
                Column("cpu_idle_requested", "cpu idle req. (m)", "num", 0),
                Column("memory_requested_pct", "memory requested", "pct"),
                *_pct_columns("memory", stats),
                Column("overcommitted_nodes", "Over-committed nodes", "int"),
            ],
            result.pools,
            limit=None,
        ),
        "nodes": TableView(
            "nodes",
            "Usage and requests per node",
            [
                Column("node", "Node"), Column("pool", "Pool"),
                Column("cpu_requested_pct", "cpu req.", "pct"),
                *_pct_columns("cpu", ("avg", "p95", "p99")),
                Column("cpu_idle_requested", "cpu idle req. (m)", "num", 0),
                Column("memory_requested_pct", "mem req.", "pct"),
                *_pct_columns("memory", ("avg", "p95", "p99")),
                Column("cpu_overcommitted", "cpu over-committed", "bool"),
                Column("memory_overcommitted", "mem over-committed", "bool"),
                Column("breach_minutes", "Breach min", "num", 0),
            ],
            nodes,
            note="hottest first by CPU p95",
            hot="hot",
        ),
        "shapes": TableView(
            "shapes",
            "Common pod shapes (target workload)",
            [
                Column("label", "Shape"), Column("pods", "Pods", "int"),
                Column("share", "Share", "num", 3),
            ],
            shapes,
            limit=None,
        ),
        "headroom": TableView(
            "headroom",
            "Headroom at the end of the day",
            [
                Column("label", "Shape"), Column("share", "Share", "num", 3),
                Column("fit", "More pods that fit", "int"),
            ],
            _last_headroom(result),
            limit=None,
        ),
        "fragmentation": TableView(
            "fragmentation",
            "Free capacity, stranded and fragmented, over the day",
            [
                Column("time", "Time (UTC)", "time"), Column("resource", "Resource"),
                Column("allocatable", "Allocatable", "num", 0), Column("requested", "Requested", "num", 0),
                Column("free", "Free", "num", 0), Column("stranded", "Stranded", "num", 0),
                Column("frag_ratio", "FGD ratio", "num", 3),
            ],
            over.reset_index(drop=True) if len(over) else pd.DataFrame(
                columns=["time", "resource", "allocatable", "requested", "free", "stranded", "frag_ratio"]
            ),
            limit=None,
        ),
        "coverage": TableView(
            "coverage",
            "Nodes with incomplete usage data",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("expected", "Expected samples", "int"),
                Column("observed", "Observed", "int"), Column("coverage", "Coverage", "num", 3),
            ],
            coverage,
            limit=min(int((coverage["coverage"] < 1.0).sum()), HTML_ROW_LIMIT),
            note="nodes below full coverage, least complete first",
        ),
        "hourly_usage": TableView(
            "hourly_usage",
            "Hourly mean usage per node (% of allocatable)",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("hour", "Hour (UTC)", "time"),
                Column("cpu", "cpu %", "num"), Column("memory", "memory %", "num"),
            ],
            result.hourly,
            limit=0,  # CSV only: the heatmap shows its hottest rows (numbers in "charts")
            in_json=False,
        ),
    }  # fmt: skip
    return tables


def build_context(
    result: NightlyResult,
    *,
    previous: dict[str, Any] | None,
    history: pd.DataFrame,
    history_rollups: pd.DataFrame | None = None,
    title: str = "Nightly cluster report",
) -> NightlyContext:
    """Everything the nightly template and the side files need.

    ``history`` holds the stored daily summaries (oldest first, today last), ``history_rollups``
    the stored daily rollups plus today's (for the nodes × days heatmap).
    """
    chart_data: dict[str, Any] = {}
    built = build_charts(result, chart_data)
    if history_rollups is not None and len(history_rollups):
        days_chart = daily_heatmap(history_rollups, chart_data)
        if days_chart is not None:
            built["heatmap_days_cpu"] = days_chart
    trend = trend_chart(history)
    if trend is not None:
        built["trend"] = trend
        chart_data["trend"] = {
            "days": list(history["day"]),
            **{k: [json_value(x) for x in history[k]] for k in history.columns if k != "day"},
        }
    q = result.quality
    quality = {
        "coverage": q.coverage,
        "expected_samples": q.expected_samples,
        "observed_samples": q.observed_samples,
        "incomplete_nodes": q.incomplete_nodes,
        "min_coverage": result.settings.min_coverage,
        "partial": q.partial,
        "warnings": list(q.warnings) + list(result.violations.warnings),
        "step_seconds": q.step_seconds,
        "percentile_method": result.settings.method,
        "exit_code": result.exit_code,
    }
    return NightlyContext(
        title=title,
        day=result.day.isoformat(),
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        source=result.meta.source,
        method=result.settings.method,
        method_text=METHOD_TEXT.get(result.settings.method, result.settings.method),
        cards=build_cards(result, previous),
        answers=build_answers(result),
        tables=build_tables(result),
        charts=built,
        quality=quality,
        thresholds=result.settings.thresholds.to_dict(),
        definitions=USAGE_DEFINITIONS,
        previous_day=str(previous["day"]) if previous else None,
        chart_data=chart_data,
    )

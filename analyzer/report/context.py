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
from analyzer.report import format as fmt
from analyzer.report.charts import Chart
from analyzer.report.headroom_view import (
    NAME,
    headroom_table,
    hourly_table,
    shape_headroom_sentence,
)
from analyzer.report.nightly_answers import build_answers
from analyzer.report.nightly_charts import build_charts, daily_heatmap, trend_chart
from analyzer.report.views import HTML_ROW_LIMIT, Card, Column, TableView, json_value

USAGE_DEFINITIONS = [
    (
        "Node CPU",
        "busy cores from node-exporter: rate of node_cpu_seconds_total with mode not idle, "
        "iowait or steal (shown in cores; % of allocatable)",
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
        "popularity) cannot use: on nodes where a shape does not fit, or of a resource the shape "
        "does not request (FGD's rule: a CPU-only pod cannot use a free GPU). 100 % for GPUs "
        "therefore means no common shape can use the free GPUs; 0 % means every shape fits "
        "wherever capacity is free",
    ),
    (
        "Stranded",
        "free CPU on nodes whose free memory cannot hold the median pod, and the reverse; free "
        "GPUs on nodes whose free CPU or memory cannot hold the median GPU pod",
    ),
    (
        "Headroom",
        "more pods of each common shape that would fit on the free capacity, each shape alone, "
        "at the last instant of the day that has data (named beside the table)",
    ),
    (
        "Units",
        "CPU in cores, memory and storage in GiB (2^30 bytes), shares in %, changes of a share "
        "in percentage points (pp), durations in hours and minutes; the CSV and JSON files keep "
        "seconds and the unit in the column name",
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
    chart_notes: dict[str, str] = field(default_factory=dict)  # words for what is not drawn
    headroom_at: str | None = None  # the instant the headroom was taken (RFC 3339)

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
                    "kind": c.kind,
                    "previous": c.previous,
                    "delta": c.delta,
                }
                for c in self.cards
            },
            "answers": self.answers,
            "headroom_at": self.headroom_at,
            "thresholds": self.thresholds,
            "quality": self.quality,
            "tables": {n: t.records() for n, t in self.tables.items() if t.in_json},
            "charts": self.chart_data,
            "definitions": dict(self.definitions),
        }


def _num(value: Any) -> float | None:
    raw = json_value(value)
    return None if raw is None else float(raw)


def _previous(prev: dict[str, Any], key: str) -> float | None:
    """A stored summary's value; days stored before ``breach_node_seconds`` kept minutes."""
    if (
        key == "breach_node_seconds"
        and prev.get(key) is None
        and prev.get("breach_minutes") is not None
    ):
        return float(prev["breach_minutes"]) * 60.0
    return _num(prev.get(key))


def build_cards(result: NightlyResult, previous: dict[str, Any] | None) -> list[Card]:
    """Summary cards with deltas vs the previous run's stored summary.

    ``higher_is_worse`` colours a change red or green; None leaves it grey (more requested CPU or
    more nodes is neither good nor bad by itself).
    """
    s = result.summary.to_dict()
    prev = previous or {}
    cpu_limit = float(result.settings.thresholds.usage.get("cpu", 0) or 0)

    def card(key: str, label: str, unit: str = "", digits: int = 1, **kw: Any) -> Card:
        value = _num(s.get(key))
        if kw.get("kind") == "count" and value is not None:
            value = round(value)  # a count is an integer in report.json too
        before = _previous(prev, key)
        if kw.get("kind") == "count" and before is not None:
            before = round(before)
        return Card(key, label, value, unit, digits, before, **kw)

    breach_state = "bad" if s["breaches"] else "good"
    coverage_state = "bad" if result.quality.partial else "good"
    cpu_state = "warn" if cpu_limit and (s["cpu_used_p95_pct"] or 0) > cpu_limit else ""
    return [
        card("nodes_with_breaches", "Nodes over threshold", kind="count", state=breach_state),
        card("breach_node_seconds", "Node-time over threshold", "s", kind="duration", state=breach_state),
        card("breaches", "Breaches", kind="count"),
        card("cpu_used_p95_pct", "CPU used p95 (hottest pool)", "%", kind="pct", state=cpu_state),
        card("memory_used_p95_pct", "Memory used p95 (hottest pool)", "%", kind="pct"),
        card("cpu_requested_pct", "CPU requested", "%", kind="pct", higher_is_worse=None),
        card("cpu_used_avg_pct", "CPU used (avg)", "%", kind="pct", higher_is_worse=None),
        card("memory_requested_pct", "Memory requested", "%", kind="pct", higher_is_worse=None),
        card("cpu_idle_requested_cores", "Idle CPU requests", "cores"),
        card("memory_idle_requested_gib", "Idle memory requests", "GiB"),
        card("fragmentation_pct", "Free CPU fragmented (FGD)", "%", kind="pct"),
        card("stranded_cpu_cores", "Stranded CPU", "cores"),
        card("stranded_memory_gib", "Stranded memory", "GiB"),
        card("coverage_pct", "Data coverage", "%", 2, kind="pct", higher_is_worse=False,
             state=coverage_state),
        card("nodes", "Nodes", kind="count", higher_is_worse=None),
        card("pods", "Pods placed", kind="count", higher_is_worse=None),
    ]  # fmt: skip


def free_table(result: NightlyResult) -> pd.DataFrame:
    """``result.free_capacity`` in the page's units (cores, GiB, devices) with a ``unit`` column."""
    return _in_units(result.free_capacity, "resource", ["allocatable", "free", "stranded"])


_SOURCE_NAMES = {"node-exporter": "node-exporter", "cadvisor": "cAdvisor"}


def scrape_sentence(scrape: dict[str, dict[str, Any]], step_seconds: int) -> str:
    """The data-quality line on scrape intervals and CPU rate windows (``meta.extra.scrape``)."""
    if not scrape:
        return (
            "Scrape interval: not recorded in this snapshot (analyzer measures it when it "
            "collects from Prometheus)."
        )
    parts, coarse = [], []
    for source, item in scrape.items():
        name = _SOURCE_NAMES.get(source, source)
        seconds, window = item.get("interval_seconds"), item.get("rate_window_seconds")
        if seconds:
            parts.append(
                f"{name} every {fmt.duration(seconds)} (CPU rate window {fmt.duration(window)})"
            )
            if seconds > step_seconds:
                coarse.append(int(seconds))
        else:
            parts.append(
                f"{name} not measured, no samples (CPU rate window {fmt.duration(window)})"
            )
    methods = {str(item.get("method", "")) for item in scrape.values()}
    how = (
        "given by --scrape-interval"
        if methods == {"--scrape-interval"}
        else "measured from the samples"
    )
    text = (
        f"Scrape interval ({how}): {'; '.join(parts)}. CPU usage at each step is the rate between "
        "the last two samples before it (PromQL irate), the average over the last scrape interval."
    )
    if coarse:
        text += (
            f" The {fmt.duration(step_seconds)} step is finer than the scrape interval: each "
            f"value repeats for about {max(coarse) / step_seconds:.3g} steps."
        )
    return text


def _pct_columns(resource: str, stats: tuple[str, ...]) -> list[Column]:
    return [Column(f"{resource}_{s}_pct", f"{resource} {s}", "pct") for s in stats]


def _in_units(frame: pd.DataFrame, resource_column: str, columns: list[str]) -> pd.DataFrame:
    """Raw amounts (millicores, bytes, devices) → cores / GiB / devices, with a ``unit`` column."""
    out = frame.copy()
    resources = out[resource_column].astype(str)
    divisor = resources.map(lambda r: fmt.resource_unit(r).divisor).astype("float64")
    for column in columns:
        out[column] = pd.to_numeric(out[column], errors="coerce") / divisor
    out.insert(out.columns.get_loc(resource_column) + 1, "unit", resources.map(fmt.unit_label))
    return out


def _fragmentation_frame(result: NightlyResult) -> pd.DataFrame:
    over = result.fragmentation.over_time
    columns = ["time", "resource", "allocatable", "requested", "free", "stranded", "frag_ratio",
               "stranded_share", "nodes"]  # fmt: skip
    if over.empty:
        return pd.DataFrame(columns=[*columns, "unit", "frag_pct", "stranded_pct"])
    frame = _in_units(
        over[columns].reset_index(drop=True),
        "resource",
        ["allocatable", "requested", "free", "stranded"],
    )
    frame["frag_pct"] = frame["frag_ratio"] * 100.0
    frame["stranded_pct"] = frame["stranded_share"] * 100.0
    return frame


def _shapes_frame(result: NightlyResult) -> pd.DataFrame:
    shapes = result.fragmentation.shapes.copy()
    shapes["share_pct"] = shapes["share"] * 100.0
    considered = result.fragmentation.pods_considered
    shapes["pods_pct"] = shapes["pods"] / considered * 100.0 if considered else float("nan")
    if "cpu" in shapes:
        shapes["cpu_cores"] = shapes["cpu"] / 1000.0
    if "memory" in shapes:
        shapes["memory_gib"] = shapes["memory"] / fmt.GIB
    return shapes


def build_tables(result: NightlyResult) -> dict[str, TableView]:
    """Every table of the report (name = CSV file stem and HTML id)."""
    v = result.violations
    breaches = v.breaches.sort_values(["start", "node", "resource"]).reset_index(drop=True)
    breaches = breaches.assign(duration_seconds=breaches["minutes"] * 60.0)
    per_node = v.per_node[v.per_node["breaches"] > 0] if len(v.per_node) else v.per_node
    per_node = per_node.assign(breach_seconds=per_node["breach_minutes"] * 60.0)
    nodes = result.nodes.sort_values(["cpu_p95_pct", "node"], ascending=[False, True])
    nodes = nodes.assign(
        hot=nodes["breach_minutes"] > 0,
        breach_seconds=nodes["breach_minutes"] * 60.0,
        cpu_idle_requested_cores=nodes["cpu_idle_requested"] / 1000.0,
        memory_idle_requested_gib=nodes["memory_idle_requested"] / fmt.GIB,
    ).reset_index(drop=True)
    pools = result.pools.assign(
        cpu_idle_requested_cores=result.pools["cpu_idle_requested"] / 1000.0
    )
    stats = ("avg", "p50", "p90", "p95", "p99")
    shapes = _shapes_frame(result)
    coverage = result.quality.per_node.sort_values(["coverage", "node"]).reset_index(drop=True)
    coverage = coverage.assign(coverage_pct=coverage["coverage"] * 100.0)
    head = result.headroom
    head_title = "Headroom: more pods of each common shape that fit"
    if head.at is not None:
        at = "24:00" if head.at == result.end else f"{head.at:%H:%M}"
        head_title += f", at {at} UTC"
        head_title += " (end of the day)" if head.at == result.end else " (last instant with data)"
    free = free_table(result)
    tables = {
        "free_capacity": TableView(
            "free_capacity",
            "Free capacity per resource (mean over the day)",
            [
                Column("resource", "Resource"), Column("unit", "Unit"),
                Column("allocatable", "Allocatable", "num"), Column("free", "Free", "num"),
                Column("frag_pct", "Unusable by common shapes (FGD)", "pct"),
                Column("asking_pct", "Pods of common shapes requesting it", "pct"),
                Column("stranded", "Stranded (amount)", "num"),
                Column("stranded_pct", "Stranded (% of free)", "pct"),
                Column("reason", "What the FGD share means"),
            ],
            free,
            limit=None,
        ),
        "breaches": TableView(
            "breaches",
            "Threshold breaches",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("resource", "Resource"),
                Column("kind", "Kind"), Column("stat", "Stat"), Column("window", "Window"),
                Column("start", "Start (UTC)", "time"), Column("end", "End (UTC)", "time"),
                Column("duration_seconds", "Duration", "duration"),
                Column("peak_pct", "Peak", "pct", 0),
                Column("threshold", "Threshold", "pct", 0), Column("source", "Threshold from"),
            ],
            breaches,
            limit=200,
        ),
        "breach_nodes": TableView(
            "breach_nodes",
            "Nodes over threshold",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("breaches", "Breaches", "int"),
                Column("breach_seconds", "Time over threshold", "duration"),
                Column("worst_pct", "Worst", "pct", 0), Column("worst_resource", "Resource"),
                Column("worst_kind", "Kind"), Column("source", "Thresholds from"),
            ],
            per_node.reset_index(drop=True),
        ),
        "pools": TableView(
            "pools",
            "Usage percentiles and requests per pool (% of the pool's allocatable)",
            [
                Column("pool", "Pool"), Column("nodes", "Nodes", "int"),
                Column("cpu_requested_pct", "cpu requested", "pct"),
                *_pct_columns("cpu", stats),
                Column("cpu_idle_requested_cores", "cpu idle req. (cores)", "num"),
                Column("memory_requested_pct", "memory requested", "pct"),
                *_pct_columns("memory", stats),
                Column("overcommitted_nodes", "Over-committed nodes", "int"),
            ],
            pools,
            limit=None,
        ),
        "nodes": TableView(
            "nodes",
            "Usage and requests per node (% of the node's allocatable)",
            [
                Column("node", "Node"), Column("pool", "Pool"),
                Column("cpu_requested_pct", "cpu req.", "pct"),
                *_pct_columns("cpu", ("avg", "p95", "p99")),
                Column("cpu_idle_requested_cores", "cpu idle req. (cores)", "num", 2),
                Column("memory_requested_pct", "mem req.", "pct"),
                *_pct_columns("memory", ("avg", "p95", "p99")),
                Column("memory_idle_requested_gib", "mem idle req. (GiB)", "num", 2),
                Column("cpu_overcommitted", "cpu over-committed", "bool"),
                Column("memory_overcommitted", "mem over-committed", "bool"),
                Column("breach_seconds", "Time over threshold", "duration"),
            ],
            nodes,
            note="hottest first by CPU p95",
            hot="hot",
        ),
        "shapes": TableView(
            "shapes",
            "Common pod shapes (target workload)",
            [
                Column("label", "Shape (requests)"), Column("pods", "Pods", "int"),
                Column("pods_pct", "Of pods considered", "pct"),
                Column("share_pct", "Weight in FGD", "pct"),
                *([Column("cpu_cores", "cpu (cores)", "num", 3)] if "cpu_cores" in shapes else []),
                *([Column("memory_gib", "memory (GiB)", "num", 2)] if "memory_gib" in shapes else []),
            ],
            shapes,
            limit=None,
            note=f"of {fmt.count(result.fragmentation.pods_considered)} pods considered "
            "(DaemonSet, static and request-less pods left out)",
        ),
        "headroom": TableView(
            "headroom",
            head_title,
            [
                Column("label", "Shape (requests)"), Column("share_pct", "Weight in FGD", "pct"),
                Column("fit", "More pods that fit", "int"),
            ],
            head.table.assign(share_pct=head.table["share"] * 100.0),
            limit=None,
            note="each shape alone, summed over nodes; – = no data",
        ),
        "fragmentation": TableView(
            "fragmentation",
            "Free capacity, stranded and fragmented, hour by hour",
            [
                Column("time", "Time (UTC)", "time"), Column("resource", "Resource"),
                Column("unit", "Unit"),
                Column("allocatable", "Allocatable", "num"), Column("requested", "Requested", "num"),
                Column("free", "Free", "num"), Column("stranded", "Stranded", "num"),
                Column("frag_pct", "FGD (of free)", "pct"),
                Column("nodes", "Nodes", "int"),
            ],
            _fragmentation_frame(result),
            limit=None,
        ),
        "coverage": TableView(
            "coverage",
            "Nodes with incomplete usage data",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("expected", "Expected samples", "int"),
                Column("observed", "Observed", "int"), Column("coverage_pct", "Coverage", "pct", 1),
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
                Column("cpu_pct", "cpu", "pct"), Column("memory_pct", "memory", "pct"),
            ],
            result.hourly.rename(columns={"cpu": "cpu_pct", "memory": "memory_pct"}),
            limit=0,  # CSV only: the heatmap shows its hottest rows (numbers in "charts")
            in_json=False,
        ),
    }  # fmt: skip
    tables[NAME] = headroom_table(result.shape_headroom)
    tables["shape_headroom_hourly"] = hourly_table(result.shape_headroom)
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
    chart_notes: dict[str, str] = {}
    built = build_charts(result, chart_data, chart_notes)
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
        "scrape_sentence": scrape_sentence(q.scrape, q.step_seconds),
        # the collect's query budget (--max-points-per-request, --max-in-flight); null when the
        # day was read from a snapshot that does not record it
        "query_budget": q.query_budget or None,
        "percentile_method": result.settings.method,
        "exit_code": result.exit_code,
    }
    cards = build_cards(result, previous)
    return NightlyContext(
        title=title,
        day=result.day.isoformat(),
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        source=result.meta.source,
        method=result.settings.method,
        method_text=METHOD_TEXT.get(result.settings.method, result.settings.method),
        cards=cards,
        answers={
            **build_answers(result, free_table(result), cards),
            NAME: shape_headroom_sentence(result.shape_headroom, result.end),
        },
        tables=build_tables(result),
        charts=built,
        quality=quality,
        thresholds=result.settings.thresholds.to_dict(),
        definitions=USAGE_DEFINITIONS,
        previous_day=str(previous["day"]) if previous else None,
        chart_data=chart_data,
        chart_notes=chart_notes,
        headroom_at=json_value(result.headroom.at),
    )

"""The nightly report's context: cards, answers, tables and charts built from a ``NightlyResult``
(the tables in ``analyzer.report.nightly_tables``).

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
    shape_headroom_sentence,
)
from analyzer.report.nightly_answers import build_answers
from analyzer.report.nightly_charts import build_charts, daily_heatmap, trend_chart
from analyzer.report.nightly_tables import build_tables, free_table
from analyzer.report.views import Card, TableView, json_value

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

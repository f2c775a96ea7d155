"""The announcement of a written report (``--notify``): its first answers, read back from the
JSON side file the run just wrote (so the message says what the page says), and one small chart
drawn with the report's own chart code.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from analyzer.deliver.message import Message
from analyzer.report.charts import Chart, grouped_bars, short_label

_MAX_CHART_GROUPS = 6  # pools drawn; more do not read at the chart's size (560 × 320 px)
_LABEL_CHARS = 10  # a pool's name under its bars
# A chart of a few flat colours and text needs no more: 64 colours keep it readable and cut a
# 12-pool chart from 33 kB to under 10 kB, so it fits a 40 kB webhook body in base64.
_CHART_COLOURS = 64


def _png(chart: Chart) -> bytes:
    """The chart's PNG, reduced to a palette (Pillow comes with matplotlib)."""
    raw = base64.b64decode(chart.data_uri.split(",", 1)[1])
    small = io.BytesIO()
    Image.open(io.BytesIO(raw)).convert("RGB").quantize(_CHART_COLOURS).save(
        small, format="PNG", optimize=True
    )
    return small.getvalue()


def _value(summary: dict[str, Any], key: str) -> Any:
    card = summary.get(key) or {}
    return card.get("value")


def nightly_message(run_dir: Path, report_url: str | None = None) -> Message:
    """The nightly report of ``run_dir`` (``OUT/<day>/``): three answers, the headline numbers,
    per-pool CPU and memory p95 against their requests."""
    payload = json.loads((Path(run_dir) / "report.json").read_text(encoding="utf-8"))
    summary = payload.get("summary", {})
    answers = payload.get("answers", {})
    day = str(payload["day"])
    over = _value(summary, "nodes_with_breaches")
    nodes = _value(summary, "nodes")
    coverage = _value(summary, "coverage_pct")
    partial = bool((payload.get("quality") or {}).get("partial"))
    title = f"analyzer nightly report {day}: {over} of {nodes} node(s) over threshold" + (
        ", data PARTIAL" if partial else ""
    )
    lines = tuple(
        f"{label}: {answers[key]}"
        for key, label in (
            ("hot", "Hot nodes"),
            ("fragmentation", "Fragmentation"),
            ("data", "Complete data"),
        )
        if answers.get(key)
    )
    numbers = {
        key: _value(summary, key)
        for key in (
            "nodes",
            "nodes_with_breaches",
            "breaches",
            "breach_node_seconds",
            "fragmentation_pct",
            "coverage_pct",
        )
        if key in summary
    }
    pools = (payload.get("tables") or {}).get("pools") or []
    chart = _nightly_chart(pools)
    return Message(
        kind="nightly",
        key=day,
        title=title,
        lines=lines,
        summary={"day": day, "partial": partial, "coverage_pct": coverage, **numbers},
        chart_png=None if chart is None else _png(chart),
        chart_alt="" if chart is None else chart.alt,
        report_url=report_url,
        report_html=Path(run_dir) / "report.html",
    )


def _busiest(pools: list[dict[str, Any]], load: Any) -> tuple[list[dict[str, Any]], str]:
    """The pools the chart shows (the busiest ``_MAX_CHART_GROUPS``) and the title's words."""
    if len(pools) <= _MAX_CHART_GROUPS:
        return pools, "per pool"
    # A pool without the number sorts last (NaN would make the order arbitrary).
    chosen = sorted(
        pools, key=lambda pool: load(pool) if load(pool) == load(pool) else -1.0, reverse=True
    )[:_MAX_CHART_GROUPS]
    return chosen, f"{len(chosen)} busiest of {len(pools)} pools"


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _nightly_chart(all_pools: list[dict[str, Any]]) -> Chart | None:
    if not all_pools:
        return None
    pools, which = _busiest(
        all_pools,
        lambda row: max(
            (_number(row.get(f"{r}_p95_pct")) for r in ("cpu", "memory")),
            key=lambda v: v if v == v else -1.0,
        ),
    )
    series: dict[str, list[float]] = {}
    for label, column in (
        ("CPU requested", "cpu_requested_pct"),
        ("CPU used p95", "cpu_p95_pct"),
        ("memory requested", "memory_requested_pct"),
        ("memory used p95", "memory_p95_pct"),
    ):
        values = [row.get(column) for row in pools]
        if any(v is not None for v in values):
            series[label] = [float("nan") if v is None else float(v) for v in values]
    if not series:
        return None
    return grouped_bars(
        [short_label(str(row.get("pool")), _LABEL_CHARS) for row in pools],
        series,
        title=f"Requested, used p95: {which} (%)",
        ylabel="%",
    )


def monthly_message(out: Path, report_url: str | None = None) -> Message:
    """The monthly review in ``out``: each pool's decision, CPU per pool as a chart."""
    payload = json.loads((Path(out) / "report.json").read_text(encoding="utf-8"))
    month = str(payload["month"])
    pools = payload.get("pools") or []
    decisions = [(str(p.get("name")), p.get("decision") or {}) for p in pools]
    acting = sum(1 for _, d in decisions if d.get("action") in ("add", "release"))
    title = f"analyzer monthly review {month}: {len(pools)} pool(s), {acting} to act on"
    lines = tuple(f"{name}: {d.get('sentence', '')}" for name, d in decisions)
    summary = {
        "month": month,
        "pools": [
            {
                "name": name,
                "action": d.get("action"),
                "nodes": d.get("nodes"),
                "by_date": d.get("by_date"),
            }
            for name, d in decisions
        ],
    }
    chart = _monthly_chart(pools)
    return Message(
        kind="monthly",
        key=month,
        title=title,
        lines=lines,
        summary=summary,
        chart_png=None if chart is None else _png(chart),
        chart_alt="" if chart is None else chart.alt,
        report_url=report_url,
        report_html=Path(out) / "report.html",
    )


def _monthly_chart(all_pools: list[dict[str, Any]]) -> Chart | None:
    if not all_pools:
        return None

    def cores(pool: dict[str, Any], key: str) -> float:
        return _number((pool.get(key) or {}).get("cpu_cores"))

    pools, which = _busiest(all_pools, lambda pool: cores(pool, "allocatable"))

    series = {
        label: [cores(p, key) for p in pools]
        for label, key in (
            ("allocatable", "allocatable"),
            ("requested", "requested"),
            ("used p95", "used_p95"),
        )
    }
    return grouped_bars(
        [short_label(str(p.get("name")), _LABEL_CHARS) for p in pools],
        series,
        title=f"CPU this month: {which}",
        ylabel="cores",
    )

"""The what-if report: strategies compared on one snapshot, one self-contained HTML file.

``write_whatif_report(result, out)`` writes ``OUT/whatif/`` atomically: ``report.html`` (the
comparison table with ``observed`` first, charts over time — active nodes, pending pods, nodes in
violation, fragmentation —, per-strategy detail and the spread over seeds), ``report.json`` with
every number shown, and one CSV per table. The first screen answers the issue's question: which
strategy would have needed the fewest nodes without more violations or waiting pods.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyzer import __version__
from analyzer.core.atomic import atomic_directory
from analyzer.core.csvsafe import write_csv
from analyzer.core.snapshot import Snapshot
from analyzer.report.charts import STYLE, Chart, encode_png
from analyzer.report.output import WHATIF_FILES, make_readable
from analyzer.report.render import render
from analyzer.report.views import Card, Column, TableView, json_value
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.compare import COMPARED, WhatIfResult, WhatIfSettings, run_whatif

FOLDER = "whatif"
CHART_POINTS = 300
DEFINITIONS = {
    "active node": "a node running at least one pod that is not a DaemonSet or static pod",
    "node-hours released": "observed active node-hours minus the strategy's (positive = fewer)",
    "waited": "pods that spent any time in the pending queue (FIFO by arrival, retried whenever "
    "capacity frees)",
    "never placed": "still pending at the end, or their real lifetime ended while pending",
    "violations": "breaches of the thresholds on projected usage, with the semantics of "
    "'analyzer violations' (Koordinator: usage % rounded half away from zero, breach when above)",
    "projected usage": "node overhead (observed node usage minus its pods' usage) plus the usage "
    "of the pods the strategy put there",
    "allocation": "requests of running non-DaemonSet pods / allocatable of active nodes",
    "fragmentation": "FGD ratio: free capacity a pod of the common shapes cannot use / free "
    "capacity (hourly mean)",
    "imbalance": "standard deviation of projected usage % across active nodes (mean over time)",
    "moved": "share of pods that really ran placed on another node",
    "ties": "broken uniformly at random with a seeded generator, like kube-scheduler; the spread "
    "over seeds shows how much that matters",
}


@dataclass
class WhatIfContext:
    """Everything the template shows."""

    title: str
    source: str
    period: str
    generated_at: str
    recommendation: str
    best: str | None
    cards: list[Card]
    tables: dict[str, TableView]
    charts: dict[str, Chart]
    notes: list[str] = field(default_factory=list)
    definitions: Mapping[str, str] = field(default_factory=lambda: dict(DEFINITIONS))

    def to_json(self, result: WhatIfResult) -> dict[str, Any]:
        """Every number shown (tables as records) plus the full comparison."""
        return {
            "title": self.title,
            "recommendation": self.recommendation,
            "best": self.best,
            "cards": [{"key": c.key, "label": c.label, "value": c.value} for c in self.cards],
            "tables": {n: t.records() for n, t in self.tables.items() if t.in_json},
            "comparison": result.to_dict(),
            "notes": self.notes,
            "definitions": dict(self.definitions),
        }


def _comparison_table(result: WhatIfResult) -> TableView:
    rows = []
    for c in result.strategies:
        row: dict[str, Any] = {"strategy": c.name, "seeds": len(c.outcomes)}
        for key in COMPARED:
            stat = c.stat(key)
            row[key] = stat["mean"]
            row[f"{key}_spread"] = stat["max"] - stat["min"]
        for key in ("allocation_cpu", "allocation_memory", "imbalance_cpu", "frag_ratio_cpu"):
            values = [o.summary().get(key, np.nan) for o in c.outcomes]
            row[key] = float(np.nanmean(values)) if not np.all(np.isnan(values)) else np.nan
        row["best"] = c.name == result.best
        rows.append(row)
    columns = [
        Column("strategy", "Strategy"),
        Column("seeds", "Seeds", "int"),
        Column("active_nodes_peak", "Peak active nodes", "num"),
        Column("active_nodes_peak_spread", "± over seeds", "num"),
        Column("active_nodes_mean", "Mean active nodes", "num"),
        Column("node_hours_released", "Node-hours released", "num"),
        Column("waited", "Pods waited", "num"),
        Column("never_placed", "Never placed", "num"),
        Column("violations", "Violations", "num"),
        Column("nodes_with_violations", "Nodes in violation", "num"),
        Column("allocation_cpu", "CPU allocation", "num", 3),
        Column("allocation_memory", "Memory allocation", "num", 3),
        Column("frag_ratio_cpu", "FGD ratio cpu", "num", 3),
        Column("imbalance_cpu", "CPU imbalance (pp)", "num"),
        Column("moved_share", "Moved", "num", 3),
    ]
    return TableView(
        "comparison",
        "Comparison (mean over seeds; observed first)",
        columns,
        pd.DataFrame(rows),
        limit=None,
        hot="best",
    )


def _seeds_table(result: WhatIfResult) -> TableView:
    rows = [o.summary() for c in result.strategies for o in c.outcomes]
    frame = pd.DataFrame(rows)
    keys = [
        ("strategy", "Strategy", "text"),
        ("seed", "Seed", "int"),
        ("placed", "Placed", "int"),
        ("waited", "Waited", "int"),
        ("never_placed", "Never placed", "int"),
        ("pending_at_end", "Pending at end", "int"),
        ("evicted", "Evicted (node left)", "int"),
        ("wait_p50_s", "Wait p50 (s)", "num"),
        ("wait_p99_s", "Wait p99 (s)", "num"),
        ("wait_max_s", "Wait max (s)", "num"),
        ("active_nodes_peak", "Peak active", "int"),
        ("active_nodes_mean", "Mean active", "num"),
        ("active_node_hours", "Active node-hours", "num"),
        ("violations", "Violations", "int"),
        ("violation_minutes", "Breach minutes", "num"),
        ("moved_share", "Moved", "num"),
    ]
    columns = [Column(k, label, kind, 3 if k == "moved_share" else 1) for k, label, kind in keys]
    return TableView("seeds", "Per strategy and seed", columns, frame, limit=None)


def _headroom_table(result: WhatIfResult) -> TableView:
    """More pods of each common shape that would still fit (mean over time, first seed)."""
    rows = [
        {"strategy": c.name, "shape": shape, "fit": fit, "stranded_cpu": c.outcomes[0].fragmentation.get("stranded_cpu")}
        for c in result.strategies
        for shape, fit in c.outcomes[0].headroom.items()
    ]  # fmt: skip
    columns = [
        Column("strategy", "Strategy"),
        Column("shape", "Pod shape"),
        Column("fit", "More pods that fit (mean)", "num"),
        Column("stranded_cpu", "Stranded share of free cpu", "num", 3),
    ]
    frame = pd.DataFrame(rows, columns=[c.key for c in columns])
    return TableView("headroom", "Headroom per common pod shape", columns, frame, limit=None)


def _series(result: WhatIfResult, column: str) -> dict[str, tuple[pd.Series, pd.Series]]:
    """Strategy → (time, value) of the first seed's series (observed has one)."""
    out: dict[str, tuple[pd.Series, pd.Series]] = {}
    for c in result.strategies:
        series = c.outcomes[0].series
        stride = max(1, int(np.ceil(len(series) / CHART_POINTS)))
        thin = series.iloc[::stride]
        out[c.name] = (pd.to_datetime(thin["time"], utc=True), thin[column])
    return out


def time_lines(
    series: Mapping[str, tuple[Sequence[Any], Sequence[float]]], *, title: str, ylabel: str
) -> Chart:
    """One line per strategy over real time (dates on the x axis)."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.0), layout="constrained")
        ax = fig.add_subplot()
        for name, (x, y) in series.items():
            times = pd.to_datetime(pd.Series(x), utc=True).dt.tz_localize(None)
            ax.plot(times.to_numpy(), np.asarray(y, dtype=float), linewidth=1.2, label=name)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if series:
            ax.legend(fontsize=7)
        return Chart(title=title, alt=f"{title} ({', '.join(series)})", data_uri=encode_png(fig))


def _frag_series(result: WhatIfResult) -> dict[str, tuple[pd.Series, pd.Series]]:
    out: dict[str, tuple[pd.Series, pd.Series]] = {}
    for c in result.strategies:
        frame = c.outcomes[0].fragmentation_series
        if len(frame) == 0:
            continue
        cpu = frame[frame["resource"] == "cpu"]
        out[c.name] = (pd.to_datetime(cpu["time"], utc=True), cpu["frag_ratio"].astype(float))
    return out


def build_whatif_context(result: WhatIfResult) -> WhatIfContext:
    """Tables, charts and cards of the what-if report."""
    observed = result.strategies[0]
    best = next((c for c in result.strategies if c.name == result.best), None)
    cards = [
        Card("observed_peak", "Observed peak active nodes", observed.stat("active_nodes_peak")["mean"], digits=0),
        Card(
            "best_peak",
            f"Peak with {best.name}" if best else "No better strategy",
            best.stat("active_nodes_peak")["mean"] if best else None,
            digits=0,
            higher_is_worse=True,
            state="good" if best else "",
        ),
        Card(
            "released",
            "Node-hours released",
            best.stat("node_hours_released")["mean"] if best else 0.0,
            digits=0,
            higher_is_worse=False,
        ),
        Card("observed_violations", "Observed violations", observed.stat("violations")["mean"], digits=0),
    ]  # fmt: skip
    charts = {
        "active": time_lines(_series(result, "active_nodes"), title="Active nodes", ylabel="nodes"),
        "pending": time_lines(_series(result, "pending_pods"), title="Pending pods", ylabel="pods"),
        "violations": time_lines(
            _series(result, "nodes_in_violation"), title="Nodes in violation", ylabel="nodes"
        ),
    }
    frag = _frag_series(result)
    if frag:
        charts["fragmentation"] = time_lines(
            frag, title="Fragmentation (FGD ratio, cpu)", ylabel="ratio"
        )
    notes = [
        *result.notes,
        *sorted({n for c in result.strategies for o in c.outcomes for n in o.notes}),
    ]
    start = pd.Timestamp(result.start).strftime("%Y-%m-%d %H:%M")
    end = pd.Timestamp(result.end).strftime("%Y-%m-%d %H:%M")
    return WhatIfContext(
        title="What-if: scheduling strategies compared",
        source=result.source,
        period=f"{start} – {end} UTC",
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        recommendation=result.recommendation,
        best=result.best,
        cards=cards,
        tables={
            "comparison": _comparison_table(result),
            "seeds": _seeds_table(result),
            "headroom": _headroom_table(result),
        },
        charts=charts,
        notes=notes,
    )


@dataclass(frozen=True)
class WhatIfPaths:
    """Where the what-if report went."""

    folder: Path
    html: Path
    json: Path
    html_bytes: int


def write_whatif_report(
    result: WhatIfResult, out: Path, *, templates_dir: Path | None = None
) -> WhatIfPaths:
    """Write ``OUT/whatif/`` (HTML, JSON, CSVs) atomically: all files or none."""
    context = build_whatif_context(result)
    target = Path(out) / FOLDER
    html = render(
        "whatif.html.j2", {"ctx": context, "version": __version__}, user_dir=templates_dir
    ).encode("utf-8")
    payload = json.dumps(_clean(context.to_json(result)), indent=1, sort_keys=True, allow_nan=False)
    with atomic_directory(target, WHATIF_FILES) as tmp:
        for name, table in context.tables.items():
            write_csv(table.csv_frame(), tmp / f"{name}.csv")
        series = pd.concat(
            [
                o.series.assign(strategy=c.name, seed=o.seed)
                for c in result.strategies
                for o in c.outcomes
            ],
            ignore_index=True,
        )
        write_csv(series, tmp / "series.csv")
        (tmp / "report.json").write_text(payload + "\n")
        (tmp / "report.html").write_bytes(html)
        for path in [tmp, *tmp.iterdir()]:
            make_readable(path)
    return WhatIfPaths(target, target / "report.html", target / "report.json", len(html))


DEMO_STRATEGIES = ("kube-default", "most-allocated", "rtcr-binpack", "koord-loadaware")


def demo_whatif(
    snapshot: Snapshot, out: Path, *, thresholds: ThresholdConfig | None = None
) -> tuple[WhatIfResult, WhatIfPaths]:
    """What ``analyzer demo`` adds: every preset compared on the demo snapshot, in ``OUT/whatif/``."""
    settings = WhatIfSettings(
        strategies=DEMO_STRATEGIES, seeds=1, thresholds=thresholds or ThresholdConfig()
    )
    result = run_whatif(snapshot, settings)
    return result, write_whatif_report(result, out)


def _clean(value: Any) -> Any:
    """Recursively make ``value`` strict-JSON (NaN → null, numpy → Python)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return json_value(value)

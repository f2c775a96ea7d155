"""The search page: every searched configuration, the Pareto front and the recommended YAML.

``write_search_report(result, out)`` writes, beside the what-if report in ``OUT/whatif/``:
``search.html`` (one self-contained file: the answer, a chart of peak nodes vs violations, the
table of every configuration with the front marked and the recommended row highlighted, the
KubeSchedulerConfiguration to apply), ``search.json`` (every number shown), ``search.csv`` (the
table) and ``search-scheduler.yaml`` (the recommended configuration, when there is one). All
four are rendered in memory first and then written one by one with atomic replaces, so a failed
render writes nothing; a file the previous run wrote but this one does not (the YAML) is removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure

from analyzer import __version__
from analyzer.core.atomic import atomic_write_text
from analyzer.core.csvsafe import csv_text
from analyzer.core.yamltext import comment
from analyzer.report import format as fmt
from analyzer.report.charts import STYLE, Chart, encode_png
from analyzer.report.output import make_readable
from analyzer.report.render import render
from analyzer.report.views import Card, Column, TableView, json_value
from analyzer.whatif.search import FRONT_RULE, RULE, SearchResult

HTML, JSON, CSV, YAML = "search.html", "search.json", "search.csv", "search-scheduler.yaml"
DEFINITIONS = {
    "peak nodes": "the most nodes running at least one pod that is not a DaemonSet or static "
    "pod at any point of the usage grid (mean over seeds)",
    "violations": "threshold breaches on projected usage, with the semantics of 'analyzer "
    "violations' (worst seed)",
    "waited": "pods that spent any time in the pending queue (worst seed)",
    "never placed": "pods still pending at the end, or whose real lifetime ended while pending "
    "(worst seed)",
    "LoadAware thresholds": "LoadAwareSchedulingArgs.usageThresholds: a node whose reported usage "
    "% is above one of them is filtered out ('–' = LoadAwareScheduling not in the profile)",
    "LoadAware weight": "the LoadAwareScheduling score plugin's weight (it prefers less loaded "
    "nodes)",
    "resource weights": "NodeResourcesFitArgs.scoringStrategy.resources weights",
}


@dataclass
class SearchContext:
    """Everything the search template shows."""

    title: str
    source: str
    period: str
    generated_at: str
    sentence: str
    rule: str
    front_rule: str
    recommended: str | None
    cards: list[Card]
    table: TableView
    chart: Chart
    scheduler_yaml: str | None
    grid_yaml: str
    notes: list[str] = field(default_factory=list)
    definitions: dict[str, str] = field(default_factory=lambda: dict(DEFINITIONS))
    kubernetes: str = ""  # which version's scheduler arithmetic the replays used, and why

    def to_json(self, result: SearchResult) -> dict[str, Any]:
        """Every number shown (the table as records) plus the whole search."""
        return {
            "title": self.title,
            "sentence": self.sentence,
            "recommended": self.recommended,
            "cards": [{"key": c.key, "label": c.label, "value": c.value} for c in self.cards],
            "table": self.table.records(),
            "search": result.to_dict(),
            "first_screen": result.first_screen(),
            "definitions": dict(self.definitions),
        }


_SHORT = {"memory": "mem"}


def _text(mapping: Any) -> str:
    if not mapping:
        return "–"
    return " · ".join(f"{_SHORT.get(k, k)} {v}" for k, v in dict(mapping).items())


def _table(result: SearchResult) -> TableView:
    rows = []
    for row in result.rows:
        p = row.parameters
        rows.append(
            {
                "name": row.name,
                "kind": row.kind,
                "scoring": p.get("scoring"),
                "resource_weights": _text(p.get("resource_weights")),
                "loadaware_thresholds": _text(p.get("loadaware_thresholds")),
                "loadaware_weight": p.get("loadaware_weight") or None,
                "peak_nodes": row.peak_nodes,
                "mean_nodes": row.mean_nodes,
                "violations": row.violations,
                "waited": row.waited,
                "never_placed": row.never_placed,
                "front": "★" if row.on_front else "",
                "eligible": row.eligible if row.kind != "observed" else None,
                "recommended": row.recommended,
            }
        )
    columns = [
        Column("name", "Configuration"),
        Column("kind", "Kind"),
        Column("scoring", "Fit scoring"),
        Column("resource_weights", "Fit weights"),
        Column("loadaware_thresholds", "LoadAware thresholds (%)"),
        Column("loadaware_weight", "LoadAware weight", "int"),
        Column("peak_nodes", "Peak nodes", "num", 0),
        Column("mean_nodes", "Mean nodes", "num", 1),
        Column("violations", "Violations", "int"),
        Column("waited", "Pods waited", "int"),
        Column("never_placed", "Never placed", "int"),
        Column("front", "Front"),
        Column("eligible", "≤ observed", "bool"),
    ]
    return TableView(
        "search",
        "Every configuration (observed first)",
        columns,
        pd.DataFrame(rows),
        limit=None,
        hot="recommended",
    )


def front_chart(result: SearchResult) -> Chart:
    """Peak nodes vs violations: one point per configuration, front and recommendation marked."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.6), layout="constrained")
        ax = fig.add_subplot()
        rows = result.rows[1:]
        other = [r for r in rows if not r.on_front]
        front = sorted((r for r in rows if r.on_front), key=lambda r: r.peak_nodes)
        ax.scatter(
            [r.peak_nodes for r in other],
            [r.violations for r in other],
            s=22,
            color="#9aa5b1",
            label="configuration",
        )
        ax.scatter(
            [r.peak_nodes for r in front],
            [r.violations for r in front],
            s=34,
            color="#00798c",
            marker="D",
            label="Pareto front",
        )
        observed = result.observed
        ax.scatter(
            [observed.peak_nodes],
            [observed.violations],
            s=60,
            color="#d1495b",
            marker="x",
            label="observed",
        )
        best = result.best()
        if best is not None:
            ax.scatter(
                [best.peak_nodes],
                [best.violations],
                s=140,
                facecolors="none",
                edgecolors="#2e7d32",
                linewidths=2,
                label="recommended",
            )
        ax.set_xlabel("peak active nodes")
        ax.set_ylabel("threshold violations")
        ax.set_title("Peak nodes vs violations (fewer is better on both)")
        # beside the plot, never over a point
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        alt = (
            f"Peak nodes vs violations for {len(rows)} configurations; observed "
            f"{observed.peak_nodes:.0f} nodes, {observed.violations:.0f} violations"
        )
        return Chart(title="Peak nodes vs violations", alt=alt, data_uri=encode_png(fig))


def build_search_context(result: SearchResult) -> SearchContext:
    """Cards, table, chart and YAML of the search page."""
    observed = result.observed
    best = result.best()
    searched = [r for r in result.rows if r.kind == "searched"]
    cards = [
        Card("configurations", "Configurations replayed", float(len(result.rows) - 1), digits=0),
        Card("front", "On the Pareto front", float(sum(r.on_front for r in result.rows)), digits=0),
        Card("observed_peak", "Observed peak nodes", observed.peak_nodes, digits=0),
        Card(
            "best_peak",
            "Recommended peak nodes",
            best.peak_nodes if best else None,
            digits=0,
            state="good" if best else "",
        ),
        Card(
            "saved",
            "Nodes saved at peak",
            observed.peak_nodes - best.peak_nodes if best else 0.0,
            digits=0,
            higher_is_worse=False,
        ),
    ]
    return SearchContext(
        title="What-if search: scheduler configurations explored",
        source=result.source,
        kubernetes=result.version.sentence if result.version else "",
        period=fmt.period(result.start, result.end),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        sentence=result.sentence,
        rule=RULE,
        front_rule=FRONT_RULE,
        recommended=result.recommended,
        cards=cards,
        table=_table(result),
        chart=front_chart(result),
        scheduler_yaml=result.recommended_yaml(),
        grid_yaml=_grid_yaml(result, len(searched)),
        notes=list(dict.fromkeys(result.notes)),  # the what-if order: related notes together
    )


def _grid_yaml(result: SearchResult, count: int) -> str:
    import yaml

    body = yaml.safe_dump(result.grid.to_dict(), sort_keys=False, default_flow_style=None)
    return f"{comment(f'{count} searched configurations, {result.seeds} seed(s) each')}\n{body}"


@dataclass(frozen=True)
class SearchPaths:
    """Where the search page went."""

    folder: Path
    html: Path
    json: Path
    yaml: Path | None


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return json_value(value)


def write_search_report(
    result: SearchResult, out: Path, *, templates_dir: Path | None = None
) -> SearchPaths:
    """Write ``OUT/search.{html,json,csv}`` and the recommended YAML (see the docstring)."""
    context = build_search_context(result)
    html = render(
        "search.html.j2", {"ctx": context, "version": __version__}, user_dir=templates_dir
    )
    payload = json.dumps(_clean(context.to_json(result)), indent=1, sort_keys=True, allow_nan=False)
    table_csv = csv_text(context.table.csv_frame())  # names come from user files: formula-safe
    folder = Path(out)
    files = {CSV: table_csv, JSON: payload + "\n"}
    if context.scheduler_yaml is not None:
        files[YAML] = context.scheduler_yaml
    files[HTML] = html  # last: the page appears once everything it links to is there
    for name, text in files.items():
        atomic_write_text(folder / name, text)
        make_readable(folder / name)
    if context.scheduler_yaml is None:
        (folder / YAML).unlink(missing_ok=True)
    return SearchPaths(
        folder,
        folder / HTML,
        folder / JSON,
        folder / YAML if context.scheduler_yaml is not None else None,
    )

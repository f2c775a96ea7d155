"""The search page: every searched configuration, the Pareto front and the recommended YAML.

``write_search_report(result, out)`` writes, beside the what-if report in ``OUT/whatif/``:
``search.html`` (one self-contained file: the answer, a chart of capacity released vs violations, the
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

import pandas as pd

from analyzer import __version__
from analyzer.core.atomic import atomic_write_text
from analyzer.core.csvsafe import csv_text
from analyzer.core.yamltext import comment
from analyzer.report import format as fmt
from analyzer.report.charts import Chart
from analyzer.report.output import make_readable
from analyzer.report.render import render
from analyzer.report.search_chart import front_chart, priced_currency
from analyzer.report.views import Card, Column, TableView, json_tree
from analyzer.whatif.capacity import UNIT_LINE
from analyzer.whatif.search import SearchResult
from analyzer.whatif.search_autoscaled import rule as autoscaled_rule
from analyzer.whatif.search_rule import FRONT_RULE, RULE, SearchRow

HTML, JSON, CSV, YAML = "search.html", "search.json", "search.csv", "search-scheduler.yaml"
DEFINITIONS = {
    "core-hours / GiB-hours released": "observed allocatable CPU cores (memory GiB) of active "
    "nodes × hours minus the configuration's over the window (mean over seeds; positive = "
    "freed); % of observed's",
    "capacity released (chart)": "money released with --prices, else the mean of the core-hour "
    "and GiB-hour shares released",
    "pool-mix shift": "peak nodes down 2 % or more while less than 1 % of core-hours and of "
    "GiB-hours is released: pods moved onto fewer, bigger nodes; never recommended",
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
    unit_line: str = UNIT_LINE  # what "capacity released" counts, under the answer
    released_what: str = "capacity of active nodes"  # the question's, under an autoscaler too

    def to_json(self, result: SearchResult) -> dict[str, Any]:
        """Every number shown (the table as records) plus the whole search."""
        return {
            "title": self.title,
            "sentence": self.sentence,
            "unit_line": self.unit_line,
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
    currency = priced_currency(result)
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
                "core_hours_released": row.core_hours_released,
                "core_hours_released_pct": row.core_hours_released_pct,
                "gib_hours_released": row.gib_hours_released,
                "gib_hours_released_pct": row.gib_hours_released_pct,
                "cost_released": row.cost_released,
                "peak_nodes": row.peak_nodes,
                "pool_mix": "pool-mix shift" if row.pool_mix else "",
                "mean_nodes": row.mean_nodes,
                "violations": row.violations,
                "waited": row.waited,
                "never_placed": row.never_placed,
                **_autoscaled_cells(row),
                "front": "★" if row.on_front else "",
                # none for observed, and for a row the autoscaler's ranking left out (finalists)
                "eligible": None
                if row.kind == "observed" or (result.autoscaler != "none" and not row.autoscaled)
                else row.eligible,
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
        Column("core_hours_released", "Core-hours released", "num", 0),
        Column("core_hours_released_pct", "Core-hours released %", "num", 1),
        Column("gib_hours_released", "GiB-hours released", "num", 0),
        Column("gib_hours_released_pct", "GiB-hours released %", "num", 1),
        *([Column("cost_released", f"Money released, {currency}", "num", 2)] if currency else []),
        Column("peak_nodes", "Peak nodes", "num", 0),
        Column("pool_mix", "Pool-mix shift"),
        Column("mean_nodes", "Mean nodes", "num", 1),
        Column("violations", "Violations", "int"),
        Column("waited", "Pods waited", "int"),
        Column("never_placed", "Never placed", "int"),
        *_autoscaled_columns(result.autoscaler, currency),
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


def _autoscaled_cells(row: SearchRow) -> dict[str, Any]:
    """The row's figures under the autoscaler (none without ``--autoscaler``)."""
    a = row.autoscaled
    if a is None:
        return {}
    return {
        "ca_node_hours": a["node_hours"],
        "ca_core_hours_released_pct": a["core_hours_released_pct"],
        "ca_gib_hours_released_pct": a["gib_hours_released_pct"],
        "ca_cost_released": a["cost_released"],
        "ca_peak_nodes": a["peak_nodes"],
        "ca_nodes_removed": a["nodes_removed"],
        "ca_pods_evicted": a["pods_evicted"],
        "ca_pending_at_end": a["pending_pods_at_end"],
    }


def _autoscaled_columns(autoscaler: str, currency: str | None) -> list[Column]:
    """The table's columns under the autoscaler (the ranking reads them: docs/whatif.md)."""
    if autoscaler == "none":
        return []
    short = "CA" if autoscaler == "cluster-autoscaler" else autoscaler
    return [
        Column("ca_node_hours", f"Node-hours under {autoscaler}", "num", 1),
        Column("ca_core_hours_released_pct", f"Core-hours released under {short} %", "num", 1),
        Column("ca_gib_hours_released_pct", f"GiB-hours released under {short} %", "num", 1),
        *(
            [Column("ca_cost_released", f"Money released under {short}, {currency}", "num", 2)]
            if currency
            else []
        ),
        Column("ca_peak_nodes", f"Peak nodes under {short}", "num", 0),
        Column("ca_nodes_removed", f"Nodes removed by {short}", "num", 1),
        Column("ca_pods_evicted", f"Pods evicted by {short}", "num", 1),
        Column("ca_pending_at_end", f"Pods pending at end under {short}", "int"),
    ]


def _released_figures(row: SearchRow | None) -> tuple[float, float, float | None]:
    """Core-hours, GiB-hours and money the row releases, under the autoscaler when replayed
    with one (the figures the ranking read)."""
    if row is None:
        return 0.0, 0.0, None
    a = row.autoscaled
    if a is not None:
        return a["core_hours_released"], a["gib_hours_released"], a["cost_released"]
    return row.core_hours_released, row.gib_hours_released, row.cost_released


def build_search_context(result: SearchResult) -> SearchContext:
    """Cards, table, chart and YAML of the search page."""
    observed = result.observed
    best = result.best()
    searched = [r for r in result.rows if r.kind == "searched"]
    currency = priced_currency(result)
    core, gib, money = _released_figures(best)
    under = "" if result.autoscaler == "none" else f" under {result.autoscaler}"
    cards = [
        Card(
            "released_core_hours",
            f"Core-hours released{under}",
            core,
            digits=0,
            unit="core-hours",
            state="good" if best else "",
            higher_is_worse=False,
        ),
        Card(
            "released_gib_hours",
            f"GiB-hours released{under}",
            gib,
            digits=0,
            unit="GiB-hours",
            state="good" if best else "",
            higher_is_worse=False,
        ),
        *(
            [
                Card(
                    "released_cost",
                    f"Money released{under}",
                    money,
                    digits=2,
                    unit=currency,
                    state="good",
                    higher_is_worse=False,
                )
            ]
            if best and currency and money is not None
            else []
        ),
        Card("configurations", "Configurations replayed", float(len(result.rows) - 1), digits=0),
        Card("front", "On the Pareto front", float(sum(r.on_front for r in result.rows)), digits=0),
        Card("observed_peak", "Observed peak nodes", observed.peak_nodes, digits=0),
        Card(
            "best_peak",
            "Recommended peak nodes",
            best.peak_nodes if best else None,
            digits=0,
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
        rule=RULE if result.autoscaler == "none" else autoscaled_rule(result.autoscaler),
        unit_line=UNIT_LINE
        if result.autoscaler == "none"
        else (
            f"Capacity released under {result.autoscaler}: allocatable CPU (core-hours) and "
            "memory (GiB-hours) of the nodes that existed — in the data as they came and went, "
            f"in each replay as {result.autoscaler} kept, added and removed them — observed "
            "minus the configuration's, over the window."
        ),
        released_what=(
            "capacity of active nodes"
            if result.autoscaler == "none"
            else f"node capacity under {result.autoscaler}"
        ),
        front_rule=FRONT_RULE,
        recommended=result.recommended,
        cards=cards,
        table=_table(result),
        chart=front_chart(result),
        scheduler_yaml=result.recommended_yaml(),
        grid_yaml=_grid_yaml(result, len(searched)),
        # the what-if order: related notes together; ``--autoscaler auto``'s choice first
        notes=list(
            dict.fromkeys(
                ([result.autoscaler_choice["why"]] if result.autoscaler_choice else [])
                + result.notes
            )
        ),
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


def write_search_report(
    result: SearchResult, out: Path, *, templates_dir: Path | None = None
) -> SearchPaths:
    """Write ``OUT/search.{html,json,csv}`` and the recommended YAML (see the docstring)."""
    context = build_search_context(result)
    html = render(
        "search.html.j2", {"ctx": context, "version": __version__}, user_dir=templates_dir
    )
    payload = json.dumps(
        json_tree(context.to_json(result)), indent=1, sort_keys=True, allow_nan=False
    )
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

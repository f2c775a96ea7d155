"""The what-if report: strategies compared on one snapshot, one self-contained HTML file.

``write_whatif_report(result, out)`` writes the folder ``out`` atomically: ``report.html`` (the
comparison table with ``observed`` first, charts over time — active nodes, pending pods, nodes in
violation, fragmentation —, why pods waited and where pods moved, per-strategy detail),
``report.json`` with every number shown, one CSV per table, ``series.csv`` and the per-pod
listings ``waiting_pods.csv`` and ``moved_pods.csv``. The first screen answers the issue's
question: which strategy would have released the most allocatable capacity of active nodes
(core-hours and GiB-hours, money with ``--prices``) without more violations or waiting pods; peak
node counts stand beside. Units follow ``analyzer.report.whatif_tables``.
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
from matplotlib.ticker import MaxNLocator

from analyzer import __version__
from analyzer.core.atomic import atomic_directory
from analyzer.core.csvsafe import write_csv
from analyzer.core.errors import InputError
from analyzer.report import format as fmt
from analyzer.report.chart_layout import (
    DATE_TICK,
    EDGE,
    LINE,
    TICK,
    Margins,
    peak_ticks_width,
    place_axes,
    rotated_height,
    text_width,
)
from analyzer.report.charts import STYLE, Chart, encode_png
from analyzer.report.output import WHATIF_FILES, make_readable
from analyzer.report.render import render
from analyzer.report.views import TableView, json_tree
from analyzer.report.whatif_autoscaled import (
    autoscaled_parts,
    autoscaled_sentence,
    autoscaled_table,
    node_count_series,
    reasons_table,
)
from analyzer.report.whatif_growth import carry_growth, growth_beside
from analyzer.report.whatif_tables import (
    WhatIfTable,
    comparison_table,
    headroom_table,
    human_duration,
    listings,
    moves_table,
    seeds_table,
    wait_reasons_table,
)
from analyzer.whatif.capacity import UNIT_LINE, money_text, pct_text
from analyzer.whatif.compare import WhatIfResult
from analyzer.whatif.explain import why_sentence
from analyzer.whatif.verdict import rank_key

FOLDER = "whatif"  # where ``analyzer demo`` puts the what-if report inside its output folder
CHART_POINTS = 300
DEFINITIONS = {
    "active node": "a node running at least one pod that is not a DaemonSet or static pod",
    "core-hours / GiB-hours released": "observed allocatable CPU cores (memory GiB) of active "
    "nodes × hours minus the strategy's over the window (positive = capacity freed); % of "
    "observed's",
    "pool-mix shift": "peak active nodes down 2 % or more while less than 1 % of core-hours and of "
    "GiB-hours is released: pods moved onto fewer, bigger nodes; never recommended",
    "node-hours released": "observed active node-hours minus the strategy's (positive = fewer)",
    "waited": "pods that spent any time in the pending queue inside the report's window (ordered by "
    "priority then arrival, retried whenever capacity frees); a pod created before the window counts its wait "
    "from the window's start",
    "wait": "time spent pending inside the window (p50/p99/max over the pods that waited); never "
    "longer than the window",
    "never placed": "still pending at the end, or their real lifetime ended while pending",
    "refusal reason": "why no node took a waiting pod at its last attempt, counted over nodes as "
    "kube-scheduler reports it ('0/200 nodes are available: 40 Insufficient cpu, …'): each "
    "node counts for the first filter that refused it",
    "violations": "breaches of the thresholds on projected usage, with the semantics of "
    "'analyzer violations' (Koordinator: usage % rounded half away from zero, breach when above)",
    "projected usage": "node overhead (observed node usage minus its pods' usage) plus the usage "
    "of the pods the strategy put there",
    "allocated": "requests of running non-DaemonSet pods / allocatable of active nodes, % (mean "
    "over time)",
    "free CPU fragmented (FGD)": "free CPU that a pod of the common shapes cannot use / free CPU, "
    "% (hourly, mean over time)",
    "imbalance": "standard deviation of projected CPU usage % across active nodes, in percentage "
    "points (mean over time)",
    "moved": "share of pods that really ran placed on another node, %",
    "ties": "broken uniformly at random with a seeded generator, like kube-scheduler; with "
    "several seeds every compared figure is the worst seed's",
}


@dataclass(frozen=True)
class WhatIfCard:
    """A first-screen card: a number with its unit, or (no number to show) a sentence."""

    key: str
    label: str
    value: float | None = None
    unit: str = ""
    digits: int = 0
    text: str = ""  # shown instead of a number; never a bare dash
    detail: str = ""  # one explaining line under the value
    state: str = ""  # "" | good | warn | bad


@dataclass
class WhatIfContext:
    """Everything the template shows."""

    title: str
    source: str
    period: str
    generated_at: str
    recommendation: str
    rule: str
    best: str | None
    cards: list[WhatIfCard]
    tables: dict[str, TableView]
    charts: dict[str, Chart]
    seeds: int
    why: list[str] = field(default_factory=list)  # one sentence per strategy (first seed)
    notes: list[str] = field(default_factory=list)
    definitions: Mapping[str, str] = field(default_factory=lambda: dict(DEFINITIONS))
    search: dict[str, Any] | None = None
    compared: int = 0  # strategies compared besides observed (the verdict's question)
    kubernetes: str = ""  # which version's scheduler arithmetic the replays used, and why
    unit_line: str = UNIT_LINE  # what "capacity released" counts, under the verdict
    autoscaled: str = ""  # the node autoscaler's sentence ("": no --autoscaler)
    # its table as the page shows it, in parts (``whatif_autoscaled.autoscaled_parts``)
    autoscaled_parts: list[WhatIfTable] = field(default_factory=list)
    autoscaler_notes: list[str] = field(default_factory=list)  # its node groups' bounds
    autoscaler_choice: str = ""  # ``--autoscaler auto``: which autoscaler and why, in one line
    autoscaler: str = "none"  # which autoscaler (the page's explanation differs)
    arrivals_created: bool = False  # every autoscaled row's pods arrived when created
    # a growth replay written into the same folder: {"sentence", "href"} (``growth_beside``)
    growth: dict[str, str] | None = None

    def to_json(self, result: WhatIfResult) -> dict[str, Any]:
        """Every number shown (tables as records) plus the full comparison."""
        return {
            "title": self.title,
            "recommendation": self.recommendation,
            "unit_line": self.unit_line,
            "rule": self.rule,
            "best": self.best,
            "search": self.search,
            "cards": [
                {"key": c.key, "label": c.label, "value": c.value, "unit": c.unit, "text": c.text}
                for c in self.cards
            ],
            "tables": {n: t.records() for n, t in self.tables.items() if t.in_json},
            "comparison": result.to_dict(),
            "why": self.why,
            "notes": self.notes,
            **({"autoscaler_choice": self.autoscaler_choice} if self.autoscaler_choice else {}),
            **({"growth": self.growth} if self.growth else {}),
            "definitions": dict(self.definitions),
        }


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
    series: Mapping[str, tuple[Sequence[Any], Sequence[float]]],
    *,
    title: str,
    ylabel: str,
    counts: bool = False,
) -> Chart:
    """One line per strategy over real time (dates on the x axis); ``counts``: the values count
    whole things (nodes, pods), so the y axis ticks whole numbers only (matplotlib's default
    locator puts 8.5 nodes between 8 and 11)."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.0))
        drawn = []
        peak = 0.0
        for x, y in series.values():
            times = pd.to_datetime(pd.Series(x), utc=True).dt.tz_localize(None)
            values = np.asarray(y, dtype=float)
            drawn.append((times.to_numpy(), values))
            if np.isfinite(values).any():
                peak = max(peak, float(np.nanmax(np.abs(values))))
        # fixed margins sized from the labels (chart_layout), not constrained layout's two
        # measuring passes; the legend sits inside the plot, the title above it
        size = float(STYLE["font.size"])
        top = EDGE + float(STYLE["axes.titlesize"]) * LINE + 6.0
        left = EDGE + size * LINE + 4 + peak_ticks_width(peak * 1.05, size) + TICK
        half_tick = text_width([DATE_TICK], 7) * 0.87 / 2  # a rotated label overhangs its tick
        bottom = EDGE + rotated_height([DATE_TICK], 7, 30) + TICK
        ax = fig.add_axes(place_axes(fig, Margins(left, EDGE + half_tick, bottom, top)))
        for name, (times_x, values) in zip(series, drawn, strict=True):
            ax.plot(times_x, values, linewidth=1.2, label=name)
        if peak == 0:
            ax.set_ylim(0, 1)  # all zero (e.g. no pod ever pending): no negative counts on the axis
        if counts:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if series:
            ax.legend(fontsize=7)
        return Chart(title=title, alt=f"{title} ({', '.join(series)})", data_uri=encode_png(fig))


def _frag_series(result: WhatIfResult) -> dict[str, tuple[pd.Series, pd.Series]]:
    """Strategy → (time, % of free CPU fragmented) of the first seed."""
    out: dict[str, tuple[pd.Series, pd.Series]] = {}
    for c in result.strategies:
        frame = c.outcomes[0].fragmentation_series
        if len(frame) == 0:
            continue
        cpu = frame[frame["resource"] == "cpu"]
        out[c.name] = (
            pd.to_datetime(cpu["time"], utc=True),
            cpu["frag_ratio"].astype(float) * 100.0,
        )
    return out


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _cards(result: WhatIfResult) -> list[WhatIfCard]:
    """The first screen's cards: observed, the recommendation (or why there is none), the cost."""
    observed = result.strategies[0]
    best = next((c for c in result.strategies if c.name == result.best), None)
    base_peak = observed.worst("active_nodes_peak")
    observed_peak = WhatIfCard(
        "observed_peak", "Observed peak active nodes", base_peak, "nodes",
        detail="nodes running at least one non-DaemonSet pod at the busiest grid point",
    )  # fmt: skip
    cards: list[WhatIfCard] = []
    currency = result.prices["currency"] if result.prices else None
    if best is not None:
        cards += [
            WhatIfCard(
                "released_core_hours", f"Core-hours released by {best.name}",
                best.worst("core_hours_released"), "core-hours", state="good",
                detail=f"{pct_text(best.worst('core_hours_released_pct'))} of observed's "
                f"{_count(observed.worst('active_core_hours'))} core-hours of active nodes",
            ),
            WhatIfCard(
                "released_gib_hours", f"GiB-hours released by {best.name}",
                best.worst("gib_hours_released"), "GiB-hours", state="good",
                detail=f"{pct_text(best.worst('gib_hours_released_pct'))} of observed's "
                f"{_count(observed.worst('active_gib_hours'))} GiB-hours of active nodes",
            ),
            *([WhatIfCard(
                "released_cost", f"Money released by {best.name}", best.worst("cost_released"),
                currency or "", digits=2, state="good",
                detail=f"observed's active capacity cost {money_text(observed.worst('active_cost'), currency)}",
            )] if best.priced and currency else []),
            WhatIfCard(
                "best_peak", f"Peak active nodes with {best.name}", best.worst("active_nodes_peak"),
                "nodes",
                detail=f"{_count(base_peak - best.worst('active_nodes_peak'))} fewer than observed",
            ),
            observed_peak,  # node counts beside the capacity, never on top
        ]  # fmt: skip
    else:
        others = result.strategies[1:]
        freeing = [c for c in others if rank_key(c) > 0 and not c.pool_mix(observed)]
        if not others:
            why = "No strategy was compared with observed."
        elif not freeing:
            why = "No strategy released capacity of active nodes (core-hours, GiB-hours)."
        else:
            why = (
                f"{len(freeing)} of {len(others)} strategies released capacity, but each "
                "had more violations, waiting pods or unplaced pods than observed (see the table)."
            )
        cards += [
            observed_peak,
            WhatIfCard(
                "best_peak", "Recommendation", text="none qualifies", detail=why, state="warn"
            ),
        ]
    cards.append(
        WhatIfCard(
            "observed_violations", "Observed threshold violations", observed.worst("violations"),
            "breaches", detail="of the thresholds on observed usage, as 'analyzer violations'",
        )
    )  # fmt: skip
    return cards


def _check_search(search: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The optional configuration-search block: ``{"sentence": str, "href": str}`` and
    optionally ``question`` (str) and ``searched`` (the configurations' names, list of str)."""
    if search is None:
        return None
    if not isinstance(search, Mapping) or not all(
        isinstance(search.get(k), str) and search.get(k) for k in ("sentence", "href")
    ):
        raise InputError(
            "what-if report: the search block must be a dict with non-empty strings "
            "'sentence' and 'href'"
        )
    question, searched = search.get("question", ""), search.get("searched", [])
    recommended = search.get("recommended")
    if not isinstance(question, str) or not (
        isinstance(searched, list) and all(isinstance(n, str) for n in searched)
    ):
        raise InputError(
            "what-if report: the search block's 'question' must be a string and 'searched' a "
            "list of configuration names"
        )
    if recommended is not None and not isinstance(recommended, str):
        raise InputError(
            "what-if report: the search block's 'recommended' must be a configuration name or null"
        )
    return {
        "sentence": str(search["sentence"]),
        "href": str(search["href"]),
        "question": question,
        "searched": list(searched),
        "recommended": recommended,
    }


def build_whatif_context(
    result: WhatIfResult, *, search: Mapping[str, Any] | None = None
) -> WhatIfContext:
    """Tables, charts and cards of the what-if report.

    ``search`` (optional) is the configuration search's result for this page: a dict with
    ``sentence`` (str, e.g. "most-allocated + LoadAware (weights …) would have needed 12 fewer
    nodes at peak with no more violations or waiting pods") and ``href`` (str, a relative link to
    the search page). When given, it is the first card of the first screen (and ``search`` in
    ``report.json``); when ``None``, nothing is shown. Anything else raises ``InputError``.
    """
    charts = {
        "active": time_lines(
            _series(result, "active_nodes"), title="Active nodes", ylabel="nodes", counts=True
        ),
        "pending": time_lines(
            _series(result, "pending_pods"), title="Pending pods", ylabel="pods", counts=True
        ),
        "violations": time_lines(
            _series(result, "nodes_in_violation"),
            title="Nodes in violation",
            ylabel="nodes",
            counts=True,
        ),
    }
    node_counts = node_count_series(result)
    if node_counts:
        charts["nodes"] = time_lines(
            node_counts,
            title="Nodes over time: autoscaler vs observed",
            ylabel="nodes",
            counts=True,
        )
    frag = _frag_series(result)
    if frag:
        charts["fragmentation"] = time_lines(
            frag, title="Free CPU fragmented (FGD)", ylabel="% of free CPU"
        )
    notes = [
        *result.notes,
        *sorted({n for c in result.strategies for o in c.outcomes for n in o.notes}),
    ]
    window = (pd.Timestamp(result.end) - pd.Timestamp(result.start)).total_seconds()
    return WhatIfContext(
        title="What-if: scheduling strategies compared"
        + (
            f" (requests right-sized by recipe {result.rightsized['recipe']})"
            if result.rightsized
            else ""
        ),
        source=result.source,
        kubernetes=result.version.sentence if result.version else "",
        period=f"{fmt.period(result.start, result.end)} ({human_duration(window)})",
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        recommendation=result.recommendation,
        rule=result.rule,
        best=result.best,
        cards=_cards(result),
        tables={
            "comparison": comparison_table(result),
            "seeds": seeds_table(result),
            "headroom": headroom_table(result),
            "wait_reasons": wait_reasons_table(result),
            "moves": moves_table(result),
            **{t.name: t for t in (autoscaled_table(result), reasons_table(result)) if t},
        },
        charts=charts,
        seeds=max(len(c.outcomes) for c in result.strategies),
        why=[
            line
            for c in result.strategies
            if (line := why_sentence(c.name, c.outcomes[0].waiting_pods, c.outcomes[0].moves))
        ],
        notes=notes,
        search=_with_scope(_check_search(search), result.best),
        compared=len(result.strategies) - 1,
        autoscaled=autoscaled_sentence(table, result)
        if (table := autoscaled_table(result))
        else "",
        autoscaled_parts=autoscaled_parts(table) if table else [],
        autoscaler_notes=sorted({n for o in result.autoscaled for n in o.notes}),
        autoscaler_choice=(result.autoscaler_choice or {}).get("why", ""),
        autoscaler=result.autoscaler,
        # the rows' pods arrive when created (``whatif.autoscaled.for_autoscaler``): said only
        # when every row was replayed so
        arrivals_created=bool(result.autoscaled)
        and all(o.arrivals == "created" for o in result.autoscaled),
    )


def _with_scope(search: dict[str, Any] | None, best: str | None) -> dict[str, Any] | None:
    """The search block with ``scope``: a sentence when the verdict below names a strategy the
    search did not compare (the two answers then differ by what they compared, not by a figure)."""
    if search is None:
        return None
    scope = ""
    if best is not None and search["searched"] and best not in search["searched"]:
        scope = (
            f"The verdict names {best}, which this search did not compare: it answers "
            "for the strategies in the comparison table, the search for its own configurations."
        )
    return {**search, "scope": scope, "agreement": _agreement(search, best)}


def _agreement(search: Mapping[str, Any], best: str | None) -> str:
    """One line under the verdict: whether the configuration search names the same strategy
    (its own answer, figures and rule are folded beneath)."""
    if "recommended" not in search or not search["searched"]:
        return ""  # an older search block: it says nothing about its recommendation
    n, rec = len(search["searched"]), search["recommended"]
    searched = f"The configuration search over {n} configurations"
    if rec is None:
        return f"{searched} recommends none: none released capacity without more violations."
    if rec == best:
        return f"{searched} recommends the same: {rec}."
    return f"{searched} recommends {rec}: its question and figures are folded below."


@dataclass(frozen=True)
class WhatIfPaths:
    """Where the what-if report went."""

    folder: Path
    html: Path
    json: Path
    html_bytes: int


def write_whatif_report(
    result: WhatIfResult,
    out: Path,
    *,
    templates_dir: Path | None = None,
    search: Mapping[str, Any] | None = None,
) -> WhatIfPaths:
    """Write the report into the folder ``out`` (HTML, JSON, CSVs) atomically: all files or none.

    ``out`` must be new, empty, or an earlier what-if report (``InputError`` otherwise: the
    folder is replaced as a whole). ``search``: see ``build_whatif_context``.
    """
    target = Path(out)
    context = build_whatif_context(result, search=search)
    context.growth = growth_beside(target)  # linked and kept: the folder is replaced as a whole
    html = render(
        "whatif.html.j2", {"ctx": context, "version": __version__}, user_dir=templates_dir
    ).encode("utf-8")
    payload = json.dumps(
        json_tree(context.to_json(result)), indent=1, sort_keys=True, allow_nan=False
    )
    with atomic_directory(target, WHATIF_FILES) as tmp:
        for name, table in context.tables.items():
            write_csv(table.csv_frame(), tmp / f"{name}.csv")
        for name, frame in listings(result).items():
            write_csv(frame, tmp / f"{name}.csv")
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
        if context.growth is not None:
            carry_growth(target, tmp)
        (tmp / "report.html").write_bytes(html)
        for path in [tmp, *tmp.iterdir()]:
            make_readable(path)
    return WhatIfPaths(target, target / "report.html", target / "report.json", len(html))


DEMO_STRATEGIES = ("kube-default", "most-allocated", "rtcr-binpack", "koord-loadaware")

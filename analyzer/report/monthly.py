"""The monthly capacity review page: one self-contained HTML file, report.json and CSVs.

``write_monthly_report(review, out)`` writes the folder ``out`` atomically (all files or none;
``out`` must be new, empty or an earlier monthly review), then stores the review's forecasts in
the history (``OUT/history/forecasts/<YYYY-MM>.json``) for next month's back-test — in that order,
so a failed render stores nothing. Sections: decisions first, the four scenarios per pool and the
right-sizing (``monthly_scenarios``, ``monthly_rightsize``: ``recipe``, ``snapshot``), month over
month, N+1, forecasts (charts with bands and the exhaustion table), back-test, workloads, method
notes. Every sentence
is built from the same values as report.json and the tables; units follow ``report.format``.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer import __version__
from analyzer.core.atomic import atomic_directory
from analyzer.core.csvsafe import write_csv
from analyzer.core.errors import InputError
from analyzer.core.executor import ExecutorSpec
from analyzer.core.outdir import check_output_folder, names_matching
from analyzer.core.prices import Prices
from analyzer.core.snapshot import Snapshot
from analyzer.core.text import escaped
from analyzer.history.forecasts import write_forecast
from analyzer.history.ledger import write_ledger
from analyzer.monthly.decisions import RULES
from analyzer.monthly.ledger_entries import ledger_payload
from analyzer.monthly.review import Review
from analyzer.monthly.rightsize_patches import patches_yaml, recommendations_csv
from analyzer.monthly.series import BY_NAME
from analyzer.report import format as fmt
from analyzer.report import monthly_headroom as mhr
from analyzer.report import monthly_ledger as mlg
from analyzer.report import monthly_rightsize as mrs
from analyzer.report import monthly_scenarios as msc
from analyzer.report.charts import Chart
from analyzer.report.monthly_charts import forecast_chart
from analyzer.report.monthly_decision import pool_decision
from analyzer.report.monthly_growth_check import growth_against_forecast
from analyzer.report.monthly_tables import previous_month
from analyzer.report.monthly_tables import tables as monthly_tables
from analyzer.report.output import make_readable
from analyzer.report.refusal_groups import blocked_groups
from analyzer.report.render import render
from analyzer.report.views import TableView, json_value
from analyzer.report.whatif_growth import growth_view
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.busiest import busiest_words
from analyzer.whatif.capacity import UNIT_LINE
from analyzer.whatif.growth_result import GrowthResult
from analyzer.whatif.joint import JointSettings

# ``deliveries``: --notify's records (analyzer/deliver/record.py), carried into every re-write;
# ``report.pdf``: --pdf's default, printed after the folder is in place.
MONTHLY_FILES = names_matching(
    ("report.html", "report.json", "*.csv", "rightsizing-patches.yaml", "deliveries", "report.pdf")
)
PATCHES = "rightsizing-patches.yaml"


def check_monthly_out(folder: Path, option: str = "--out") -> None:
    """Before any work: the folder can be written and is new, empty or a monthly review (exit 2)."""
    check_output_folder(folder, MONTHLY_FILES, option, what="a monthly review")


def _n(value: Any, digits: int = 1) -> str:
    return fmt.number(value, digits)


def _both(pair: dict[str, Any] | None) -> str:
    """``{cpu_cores, memory_gib}`` → "12.0 cores and 48.0 GiB" (never added together)."""
    if not pair:
        return fmt.MISSING
    return f"{_n(pair['cpu_cores'])} cores and {_n(pair['memory_gib'])} GiB"


@dataclass
class MonthlyContext:
    """Everything the template shows."""

    title: str
    month: str
    period: str
    generated_at: str
    history: str
    read_sentence: str  # what the review read, and the step its days' usage was read at
    headline: list[str]
    decisions: list[dict[str, Any]]
    n1_sentence: str
    backtest_sentence: str
    tables: dict[str, TableView]
    charts: list[Chart]
    notes: list[str]
    method_notes: list[str]
    currency: str | None
    thresholds: dict[str, int]
    horizon_days: int
    rightsizing_sentence: str = ""
    rightsizing_why: str = ""
    scenarios_sentence: str = ""
    scenarios_capacity: str = ""  # the capacity each scenario releases vs today: the headline
    unit_line: str = UNIT_LINE  # what "capacity released" counts
    scenarios_available: bool = False
    scenario_notes: list[str] = field(default_factory=list)
    drain_lines: list[dict[str, str]] = field(default_factory=list)
    blocked_groups: list[dict[str, Any]] = field(default_factory=list)  # refusal_groups
    rules: dict[str, str] = field(default_factory=lambda: dict(RULES))
    ledger_lines: list[str] = field(default_factory=list)  # last month's decisions → what happened
    ledger_pools: list[dict[str, str]] = field(default_factory=list)
    headroom_sentence: str = ""  # headroom per pod shape (``monthly_headroom``)
    headroom_chart: Chart | None = None


def _headline(p: dict[str, Any]) -> list[str]:
    c = p["cluster"]
    lines = [
        f"In {p['month']} ({p['days_with_history']} of {p['month_days']} days with history) the "
        f"cluster's {c['pools']} pool{'s' if c['pools'] != 1 else ''} "
        f"({_n(c['nodes_mean'])} nodes on average) offered {_both(c['allocatable'])} "
        f"allocatable; requests held {_both(c['requested'])} and usage (p95 of daily p95) was "
        f"{_both(c['used_p95'])}.",
        f"Idle (allocatable − max(requested, used)): {_both(c['idle'])}. Slack (requested − "
        f"used): {_both(c['slack'])}. Idle is the platform's to reclaim by packing, slack the "
        "teams' by right-sizing: they overlap and are never added.",
    ]
    change = c["change"]
    if change["requested"] is not None:
        lines.append(
            f"Against the previous month: allocatable "
            f"{fmt.signed(change['allocatable']['cpu_cores'], 1, 'cores')} and "
            f"{fmt.signed(change['allocatable']['memory_gib'], 1, 'GiB')}; requested "
            f"{fmt.signed(change['requested']['cpu_cores'], 1, 'cores')} and "
            f"{fmt.signed(change['requested']['memory_gib'], 1, 'GiB')}; used "
            f"{fmt.signed(change['used_p95']['cpu_cores'], 1, 'cores')} and "
            f"{fmt.signed(change['used_p95']['memory_gib'], 1, 'GiB')}."
        )
    else:
        lines.append("No previous month in the history to compare with.")
    money = c.get("money")
    if money and money.get("idle") and money.get("slack"):
        cur = money["currency"]
        lines.append(
            f"In money over the month: idle {_n(money['idle']['total'], 0)} {cur}, slack "
            f"{_n(money['slack']['total'], 0)} {cur} (the same capacity can be in both)."
        )
    return lines


def add_pool_decisions(p: dict[str, Any]) -> None:
    """``pools[].pool_decision``: the one decision per pool (``report.monthly_decision``) from
    the forecast decision and, when a snapshot was replayed, the simulated one."""
    currency = (p.get("prices") or {}).get("currency")
    replayed = p.get("simulation") or {}
    # "the busiest week" / "the busiest 2 days": the replayed window the decisions speak of
    window = busiest_words(replayed["start"], replayed["end"]) if "start" in replayed else None
    for pool in p["pools"]:
        sim = pool.get("simulated_decision")
        best = next(
            (r for r in pool.get("scenarios") or [] if sim and r["name"] == sim["scenario"]), None
        )
        pool["pool_decision"] = pool_decision(pool["decision"], sim, best, currency, window)


def _decisions(p: dict[str, Any]) -> list[dict[str, Any]]:
    """Per pool: the one decision and, folded beneath it, the forecast rule's and the
    simulation's own sentences (``forecast``, ``simulated``)."""
    if any("pool_decision" not in pool for pool in p["pools"]):
        add_pool_decisions(p)
    return [
        {
            "pool": pool["name"],
            **pool["pool_decision"],
            "forecast": pool["decision"],
            "simulated": pool.get("simulated_decision"),
        }
        for pool in p["pools"]
    ]


def _n1_sentence(p: dict[str, Any]) -> str:
    pools = p["pools"]
    broken = [x["name"] for x in pools if x["n_plus_1_ok"] is False]
    if not broken:
        return (
            f"All {len(pools)} pools could lose their largest node at their request peak "
            f"in {p['month']}."
        )
    return (
        f"{len(broken)} of {len(pools)} pools could not lose their largest node at their request "
        f"peak in {p['month']}: {', '.join(broken)}."
    )


def _backtest_sentence(p: dict[str, Any]) -> str:
    b = p.get("backtest")
    if b is None:
        return (
            f"No previous forecast: the history holds no forecast stored for "
            f"{previous_month(p['month'])} (a monthly review of that month stores one), so there is "
            "nothing to score yet. This run stores its own for next month."
        )
    if not b["days_scored"] and b.get("series_stored") == 0:
        return (
            f"The forecast stored for {b['forecast_month']} holds no forecast series (that "
            "review had too little history to forecast), so nothing of "
            f"{b['scored_month']} could be scored."
        )
    if not b["days_scored"]:
        return (
            f"The forecast stored for {b['forecast_month']} has no day in common with "
            f"{b['scored_month']}'s history: nothing to score."
        )
    return (
        f"The forecast made from the history up to {b['forecast_history_end']} was scored on "
        f"{fmt.count(b['days_scored'])} pool-days of {b['scored_month']}: "
        f"{fmt.pct(b['inside80_pct'])} of the observed values fell inside its 80 % interval and "
        f"{fmt.pct(b['inside95_pct'])} inside its 95 % interval (a calibrated forecast: about 80 % "
        "and 95 %)."
    )


METHOD_NOTES = [
    "Allocatable and requested are the month's means of the daily time-weighted means; used is "
    "the p95 over the month's days of each day's p95 of the pool's summed usage (nearest rank).",
    "Idle = allocatable − max(requested, used p95); slack = requested − used p95 (negative: the "
    "pool used more than it requested). CPU in cores and memory in GiB, side by side, never summed.",
    "The cluster row sums the pools: its used p95 is an upper bound of the cluster's own p95, "
    "because pools do not peak at the same time.",
    "N+1: every day, allocatable − the day's largest node − the day's requested peak must be ≥ 0 "
    "for CPU and memory; the table shows the smallest margin and its day.",
    "Forecasts: level shifts are searched first (a robust Huber fit and a score test, each level "
    "held at least 7 days at the ends and 14 between shifts) and outlier days (residual over "
    "3.5 robust σ) are left out; the trend is then a straight line on the day number fitted on "
    "the days since the last shift, with a day-of-week component when an F-test finds the "
    "weekly cycle significant (p < 0.05); 80 % and 95 % prediction intervals; no forecast under "
    "21 days of history (since the last shift); no expected date when the slope's 95 % interval "
    "includes 0. The daily cycle is inside each day's peak or p95.",
    "Requested is forecast at its daily peak against allocatable − the largest node (N+1); used "
    "(daily p95) against the Koordinator usage thresholds times allocatable.",
    "Expected date: the mean forecast reaches the line; earliest plausible: the upper 95 % band does.",
    "Back-test: each review stores its forecasts in the history (history/forecasts/YYYY-MM.json); "
    "the next month's review scores them against what happened.",
    "Prices (optional): a node-hour price is split half to CPU and half to memory over the "
    "pool's mean node size; money counts only positive idle and slack.",
]


def _found_notes(review: Review) -> list[str]:
    """One note per forecast in which the search found a level shift or outlier days, naming
    them (the method note says what was searched; this says what was found)."""
    notes = []
    for pool, series in review.forecasts.items():
        for name, f in series.items():
            found = f.findings()
            if found:
                since = (
                    ""
                    if not f.level_shifts
                    else f" — trend fitted from {f.fit_start}"
                    if f.method != "none"
                    else " — too little history since it to forecast"
                )
                where = f"{escaped(pool)} {BY_NAME[name].label}"  # a pool name is data
                notes.append(f"Found in {where}: {found}{since}.")
    return notes or ["Found: no level shift and no outlier day in any forecast series."]


def build_monthly_context(
    review: Review, rightsizing: mrs.Rightsizing | None = None
) -> MonthlyContext:
    """The page's sentences, tables and charts, all from ``review.payload``."""
    p = review.payload
    charts = [
        forecast_chart(
            pool,
            review.daily[review.daily["pool"] == pool].sort_values("day"),
            review.forecasts[pool],
            dict(p["thresholds"]),
        )
        for pool in review.forecasts
    ]
    return MonthlyContext(
        title=p["title"],
        month=p["month"],
        period=f"{review.month.first} – {review.month.last} UTC; trend "
        f"{p['trend_months'][0]} – {p['trend_months'][-1]}",
        generated_at=p["generated_at"],
        history=p["history"]
        + (f" · cluster {p['history_cluster']}" if p.get("history_cluster") else ""),
        read_sentence=str(p.get("read", {}).get("sentence", "")),
        headline=_headline(p),
        decisions=_decisions(p),
        n1_sentence=_n1_sentence(p),
        backtest_sentence=_backtest_sentence(p),
        tables=monthly_tables(review, rightsizing),
        charts=charts,
        notes=list(p["notes"]),
        method_notes=METHOD_NOTES + _found_notes(review),
        currency=None if p["prices"] is None else p["prices"]["currency"],
        thresholds=dict(p["thresholds"]),
        horizon_days=int(p["horizon_days"]),
        rightsizing_sentence="" if rightsizing is None else mrs.sentence(rightsizing),
        rightsizing_why=p.get("rightsizing", {}).get("why_default", ""),
        scenarios_sentence=msc.sentence(p) if "simulation" in p else "",
        scenarios_capacity=msc.capacity_sentence(p) if "simulation" in p else "",
        scenarios_available=bool(p.get("simulation", {}).get("available")),
        scenario_notes=list(p.get("simulation", {}).get("notes", [])),
        drain_lines=msc.drain_lines(p),
        ledger_lines=mlg.summary(p),
        ledger_pools=mlg.pool_lines(p),
        headroom_sentence=mhr.headroom_sentence(p),
        headroom_chart=mhr.headroom_chart(p),
        blocked_groups=blocked_groups(p),
    )


@dataclass(frozen=True)
class MonthlyPaths:
    folder: Path
    html: Path
    json: Path
    forecast: Path
    html_bytes: int
    ledger: Path | None = None  # history/ledger/<month>.json: what this review recommended


def _clean(value: Any) -> Any:
    """Strict JSON: NaN → null, numpy → Python (plain floats and strings pass straight through)."""
    if type(value) is float:
        return value if value == value and abs(value) != math.inf else None
    if type(value) in (str, int, bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return json_value(value)


def clean_json(value: Any) -> Any:
    """``value`` made fit for the history's JSON files (NaN → null, numpy → Python)."""
    return _clean(value)


def _forecast_frame(review: Review) -> pd.DataFrame:
    rows = [
        {
            "pool": pool,
            "series": name,
            "date": pt.day.isoformat(),
            "mean": pt.mean,
            "lo80": pt.lo80,
            "hi80": pt.hi80,
            "lo95": pt.lo95,
            "hi95": pt.hi95,
        }
        for pool, series in review.forecasts.items()
        for name, f in series.items()
        for pt in f.points
    ]
    return pd.DataFrame(
        rows, columns=["pool", "series", "date", "mean", "lo80", "hi80", "lo95", "hi95"]
    )


def joint_settings(
    review: Review,
    strategies: Sequence[str] = (),
    *,
    thresholds: ThresholdConfig | None = None,
    kubernetes_version: str | None = None,
    workers: int | None = None,
    prices: Prices | None = None,
    executor: ExecutorSpec | None = None,
    days: int | None = None,
) -> JointSettings:
    """The scenarios' settings: ``strategies`` = (baseline[, repack]); thresholds default to the
    review's usage thresholds."""
    if len(strategies) > 2:
        raise InputError(
            "--strategy: name at most two (today's scheduler, then the repack configuration)"
        )
    defaults = JointSettings()
    return JointSettings(
        baseline=strategies[0] if strategies else defaults.baseline,
        repack=strategies[1] if len(strategies) > 1 else defaults.repack,
        kubernetes_version=kubernetes_version,
        thresholds=thresholds or ThresholdConfig(usage=dict(review.payload["thresholds"])),
        workers=workers,
        prices=prices,
        executor=executor or ExecutorSpec(),
        days=days or defaults.days,  # the busiest window's whole days (``--window``)
    )


def write_monthly_report(
    review: Review,
    out: Path,
    *,
    history: Path,
    templates_dir: Path | None = None,
    recipe: str = mrs.DEFAULT_RECIPE,
    snapshot: Snapshot | Path | None = None,
    strategies: Sequence[str] = (),
    joint: JointSettings | None = None,
    autoscaler_choice: dict[str, str] | None = None,
    growth: GrowthResult | Callable[[], GrowthResult | None] | None = None,
) -> MonthlyPaths:
    """Write the review into ``out`` atomically, then store its forecast under ``history``.

    ``growth``: the growth replay of the month's busiest window (``analyzer.whatif.growth``),
    shown as the page's "Growth replayed" section, in ``report.json`` and ``growth.csv``; or a
    function that returns it, called once the scenarios and the page's charts are done (the demo
    replays the growth in another process meanwhile).

    ``recipe``: the right-sizing recipe (``vpa``, ``krr``, ``percentile:...``; default krr).
    ``snapshot`` (a Snapshot or its folder): the month's busiest week, replayed in the four
    scenarios with ``strategies`` (baseline[, repack]; default kube-default and
    most-allocated-loadaware) or ``joint``'s settings; without it the page says how to get one.
    """
    rightsizing = mrs.rightsize_review(review, recipe)
    if snapshot is None:
        msc.no_snapshot(review)
    else:
        settings = joint or joint_settings(review, strategies)
        msc.scenarios_review(review, rightsizing, snapshot, settings, autoscaler_choice)
    add_pool_decisions(review.payload)
    context = build_monthly_context(review, rightsizing)
    if callable(growth):
        growth = growth()
    view = None
    if growth is not None:
        view = growth_view(growth)
        last_day = review.payload.get("history_last_day")
        view.against_forecast = growth_against_forecast(review.payload["pools"], growth, last_day)
        review.payload["growth"] = {**growth.to_dict(), "against_forecast": view.against_forecast}
    html = render(
        "monthly.html.j2",
        {"ctx": context, "version": __version__, "growth": view},
        user_dir=templates_dir,
    ).encode("utf-8")
    # Compact: with an indent, json falls back to its pure-Python encoder (seconds on a big review).
    payload = json.dumps(_clean(review.payload), sort_keys=True, allow_nan=False)
    target = Path(out)
    with atomic_directory(target, MONTHLY_FILES) as tmp:
        for name, table in context.tables.items():
            write_csv(table.csv_frame(), tmp / f"{name}.csv")
        write_csv(review.workloads, tmp / "workloads.csv")
        if view is not None:
            write_csv(view.table.csv_frame(), tmp / "growth.csv")
        write_csv(_forecast_frame(review), tmp / "forecast.csv")
        (tmp / "rightsizing.csv").write_text(recommendations_csv(rightsizing.frame))
        (tmp / PATCHES).write_text(patches_yaml(rightsizing.frame))
        (tmp / "report.json").write_text(payload + "\n")
        (tmp / "report.html").write_bytes(html)
        # The records of deliveries already made go into the new folder before it is swapped
        # in: a re-run never loses them, so it never announces the same month twice.
        if (target / "deliveries").is_dir():
            shutil.copytree(target / "deliveries", tmp / "deliveries")
        for path in [tmp, *tmp.iterdir()]:
            make_readable(path)
    # each pool's one decision kept with the forecast: the fleet page (report fleet) shows it
    decisions = {
        pool["name"]: {k: pool["pool_decision"].get(k) for k in ("action", "nodes", "sentence")}
        for pool in review.payload["pools"]
        if isinstance(pool.get("pool_decision"), dict)
    }
    stored = write_forecast(
        history, str(review.month), _clean({**review.stored_forecast, "decisions": decisions})
    )
    record = ledger_payload(
        review.payload,
        review.daily,
        rightsizing.changed(),
        review.workload_days,
        history_end=str(review.stored_forecast["history_end"]),
        recipe=rightsizing.recipe,
    )
    ledger = write_ledger(history, str(review.month), _clean(record))
    return MonthlyPaths(
        target, target / "report.html", target / "report.json", stored, len(html), ledger
    )

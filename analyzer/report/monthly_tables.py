"""The monthly page's tables (month over month, N+1, forecasts, exhaustion, back-test, last
month's advice, workloads, right-sizing and scenarios): ``tables(review, rightsizing)``, each a
``TableView`` shown on the page and written as its CSV. Split from ``report.monthly`` (the page's
sentences and the folder's writing) to keep each module readable."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analyzer.monthly.review import Review
from analyzer.monthly.series import BY_NAME
from analyzer.report import monthly_headroom as mhr
from analyzer.report import monthly_ledger as mlg
from analyzer.report import monthly_rightsize as mrs
from analyzer.report import monthly_scenarios as msc
from analyzer.report.views import Column, TableView

TOP_WORKLOADS = 15


def previous_month(month: str) -> str:
    """The month before ``month`` (``YYYY-MM``)."""
    year, m = (int(x) for x in month.split("-"))
    index = year * 12 + m - 2
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _mom_table(p: dict[str, Any], key: str, unit: str, title: str) -> TableView:
    rows = []
    for entry in [*p["pools"], p["cluster"]]:
        row: dict[str, Any] = {"pool": entry["name"]}
        for figure in ("allocatable", "requested", "used_p95", "idle", "slack"):
            row[figure] = entry[figure][key]
            change = entry["change"][figure]
            row[f"{figure}_change"] = None if change is None else change[key]
        rows.append(row)
    labels = {"allocatable": "Allocatable", "requested": "Requested", "used_p95": "Used p95",
              "idle": "Idle", "slack": "Slack"}  # fmt: skip
    columns = [Column("pool", "Pool")]
    for figure, label in labels.items():
        columns += [
            Column(figure, f"{label} ({unit})", "num"),
            Column(f"{figure}_change", f"change ({unit})", "num"),
        ]
    return TableView(
        f"month_over_month_{key.split('_')[0]}", title, columns, pd.DataFrame(rows), limit=None
    )


def tables(review: Review, rightsizing: mrs.Rightsizing | None = None) -> dict[str, TableView]:
    p = review.payload
    tables = {
        "decisions": TableView(
            "decisions",
            "Decisions",
            [
                Column("pool", "Pool"),
                Column("action", "Action"),
                Column("nodes", "Nodes", "int"),
                Column("by_date", "By"),
                Column("rule_text", "Rule"),
            ],
            pd.DataFrame([{"pool": x["name"], **x["decision"]} for x in p["pools"]]),
            limit=None,
        ),
        "month_over_month_cpu": _mom_table(p, "cpu_cores", "cores", f"CPU, {p['month']}"),
        "month_over_month_memory": _mom_table(p, "memory_gib", "GiB", f"Memory, {p['month']}"),
    }
    trend = review.month_rows.copy()
    trend_cols = [Column("pool", "Pool"), Column("month", "Month"), Column("days", "Days", "int")]
    for key, unit in (("cpu_cores", "cores"), ("memory_gib", "GiB")):
        for figure, label in (("allocatable", "Alloc."), ("requested", "Req."),
                              ("used_p95", "Used p95"), ("idle", "Idle"), ("slack", "Slack")):  # fmt: skip
            trend_cols.append(Column(f"{figure}_{key}", f"{label} ({unit})", "num"))
    tables["trend"] = TableView(
        "trend", f"Month by month ({len(p['trend_months'])} months)", trend_cols, trend, limit=None
    )
    n1 = []
    for x in p["pools"]:
        n = x["n_plus_1"]
        n1.append({
            "pool": x["name"], "largest_node": n["largest_node"],
            "largest_cpu": n["largest_node_allocatable"]["cpu_cores"],
            "largest_memory": n["largest_node_allocatable"]["memory_gib"],
            "peak_cpu": x["requested_peak"]["cpu_cores"],
            "peak_memory": x["requested_peak"]["memory_gib"],
            "margin_cpu": n["smallest_margin"]["cpu_cores"],
            "margin_memory": n["smallest_margin"]["memory_gib"],
            "worst_day_cpu": n["worst_day"]["cpu_cores"],
            "worst_day_memory": n["worst_day"]["memory_gib"],
            "ok": x["n_plus_1_ok"],
        })  # fmt: skip
    tables["n_plus_1"] = TableView(
        "n_plus_1", "N+1 per pool",
        [Column("pool", "Pool"), Column("largest_node", "Largest node"),
         Column("largest_cpu", "Its CPU (cores)", "num"),
         Column("largest_memory", "Its memory (GiB)", "num"),
         Column("peak_cpu", "Requested peak CPU (cores)", "num"),
         Column("peak_memory", "Requested peak memory (GiB)", "num"),
         Column("margin_cpu", "Smallest margin CPU (cores)", "num"),
         Column("margin_memory", "Smallest margin memory (GiB)", "num"),
         Column("worst_day_cpu", "Tightest day (CPU)"),
         Column("worst_day_memory", "Tightest day (memory)"),
         Column("ok", "N+1 holds", "bool")],
        pd.DataFrame(n1), limit=None,
    )  # fmt: skip
    ex = []
    for pool, series in review.forecasts.items():
        for name, f in series.items():
            spec = BY_NAME[name]
            ex.append({
                "pool": pool, "series": name, "basis": f.exhaustion.basis,
                "method": f.method, "history_days": f.history_days,
                "slope": f.slope_per_day, "unit": f"{spec.unit}/day",
                "expected_date": f.exhaustion.expected_date.isoformat()
                if f.exhaustion.expected_date else "none within the horizon"
                if f.method != "none" else "no forecast",
                "earliest_date": f.exhaustion.earliest_date.isoformat()
                if f.exhaustion.earliest_date else "none within the horizon"
                if f.method != "none" else "no forecast",
                "found": f.findings() or "nothing",
                "reason": f.exhaustion.reason,
            })  # fmt: skip
    tables["exhaustion"] = TableView(
        "exhaustion", "Days until exhaustion",
        [Column("pool", "Pool"), Column("series", "Series"), Column("method", "Method"),
         Column("history_days", "History (days)", "int"),
         Column("slope", "Slope", "num", 3), Column("unit", "Slope unit"),
         Column("expected_date", "Expected date"), Column("earliest_date", "Earliest plausible"),
         Column("found", "Level shifts and outliers found"), Column("reason", "Why")],
        pd.DataFrame(ex), limit=None,
    )  # fmt: skip
    ledger = mlg.ledger_table(p)
    if ledger is not None:
        tables["ledger"] = ledger
    if "backtest" in p:
        tables["backtest"] = TableView(
            "backtest", "Back-test of last month's forecast",
            [Column("pool", "Pool"), Column("series", "Series"), Column("unit", "Unit"),
             Column("days", "Days", "int"), Column("mean_error", "Mean error (forecast − observed)", "num", 2),
             Column("mean_abs_error", "Mean absolute error", "num", 2),
             Column("mape_pct", "Mean absolute % error", "pct"),
             Column("inside80_pct", "Inside 80 % interval", "pct"),
             Column("inside95_pct", "Inside 95 % interval", "pct")],
            pd.DataFrame(p["backtest"]["rows"]), limit=None,
        )  # fmt: skip
    w = review.workloads
    wl_cols = [Column("namespace", "Namespace"), Column("owner_kind", "Kind"),
               Column("owner_name", "Workload"), Column("pool", "Pool"),
               Column("replicas_mean", "Replicas (mean)", "num"),
               Column("cpu_request_cores", "CPU request per pod (cores)", "num", 2),
               Column("cpu_used_p95_cores", "CPU p95 per pod (cores)", "num", 2),
               Column("requested_cpu_cores", "Requested CPU (cores)", "num"),
               Column("slack_cpu_cores", "Slack CPU (cores)", "num"),
               Column("memory_request_gib", "Memory request per pod (GiB)", "num", 2),
               Column("memory_used_max_gib", "Memory max per pod (GiB)", "num", 2),
               Column("slack_memory_gib", "Slack memory (GiB)", "num")]  # fmt: skip
    growth_cols = [Column("namespace", "Namespace"), Column("owner_kind", "Kind"),
                   Column("owner_name", "Workload"), Column("pool", "Pool"),
                   Column("requested_cpu_cores", "Requested CPU (cores)", "num"),
                   Column("growth_cpu_cores", "Change vs previous month (cores)", "num", 2),
                   Column("growth_cpu_pct", "Change vs previous month", "pct"),
                   Column("growth_cpu_cores_per_month", "Average change per month (cores)", "num", 2),
                   Column("trend_first_month", "Since")]  # fmt: skip
    if len(w):
        by_slack = w.sort_values("slack_cpu_cores", ascending=False, na_position="last")
        by_growth = w.sort_values("growth_cpu_cores_per_month", ascending=False, na_position="last")
    else:
        keys = dict.fromkeys(c.key for c in growth_cols + wl_cols)
        by_slack = by_growth = pd.DataFrame(columns=list(keys))
    tables["workloads_slack"] = TableView(
        "workloads_slack", f"Top workloads by CPU slack (of {len(w)})", wl_cols, by_slack,
        limit=TOP_WORKLOADS,
    )  # fmt: skip
    tables["workloads_growth"] = TableView(
        "workloads_growth", f"Top workloads by growth of requested CPU (of {len(w)})",
        growth_cols, by_growth, limit=TOP_WORKLOADS,
    )  # fmt: skip
    if p["prices"] is not None:
        money = []
        for x in p["pools"]:
            m = x["money"] or {}
            idle, slack = m.get("idle") or {}, m.get("slack") or {}
            money.append({
                "pool": x["name"], "price": m.get("price") or m.get("note"),
                "idle_cpu": idle.get("cpu"), "idle_memory": idle.get("memory"),
                "idle_total": idle.get("total"), "slack_cpu": slack.get("cpu"),
                "slack_memory": slack.get("memory"), "slack_total": slack.get("total"),
            })  # fmt: skip
        cur = p["prices"]["currency"]
        tables["money"] = TableView(
            "money", f"Idle and slack in money ({cur} over the month)",
            [Column("pool", "Pool"), Column("price", "Price"),
             Column("idle_cpu", f"Idle CPU ({cur})", "num", 0),
             Column("idle_memory", f"Idle memory ({cur})", "num", 0),
             Column("idle_total", f"Idle ({cur})", "num", 0),
             Column("slack_cpu", f"Slack CPU ({cur})", "num", 0),
             Column("slack_memory", f"Slack memory ({cur})", "num", 0),
             Column("slack_total", f"Slack ({cur})", "num", 0)],
            pd.DataFrame(money), limit=None,
        )  # fmt: skip
    tables[mhr.NAME] = mhr.headroom_table(p)
    if rightsizing is not None:
        tables["rightsizing_changes"] = mrs.changes_table(rightsizing)
    if p.get("simulation", {}).get("available"):
        tables["scenarios"] = msc.scenario_table(p)
        tables["blocked_nodes"] = msc.blocked_table(p)
    for table in tables.values():
        table.frame = _tidy(table.frame, [c.key for c in table.columns if c.kind in ("num", "pct")])
    return tables


NOISE = 1e-9  # floating-point residue of a fit (a flat series' slope of −2e-16 cores/day)


def _tidy(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Floating-point residue to exact 0, so a flat series reads "0.00", never "−0.00"."""
    out = frame.copy()
    for key in columns:
        if key in out:
            values = pd.to_numeric(out[key], errors="coerce")
            out[key] = values.mask(values.abs() < NOISE, 0.0)
    return out

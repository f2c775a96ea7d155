"""The monthly page's opening: last month's decisions → what happened (``payload["ledger"]``).

``analyzer.monthly.adoption`` scores the recommendations the previous review stored; this module
says it in at most three lines (what was recommended, what was adopted, what it freed against what
was promised), one line per pool decision, and a table of every workload recommendation (also
``ledger.csv``). Units are stated on every figure: request-hours freed are core-hours and
GiB-hours over the days observed, node-hours for pools. A month without a stored ledger says how
the next review gets one.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analyzer.core.text import escaped
from analyzer.report import format as fmt
from analyzer.report.views import Column, TableView

_STATUS_WORDS = {
    "applied": "applied",
    "partly": "partly applied",
    "not adopted": "not adopted",
    "not seen": "workload not seen since",
}


def _n(count: int, what: str) -> str:
    return f"{fmt.count(count)} {what}{'' if count == 1 else 's'}"


def _signed_pct(value: Any) -> str:
    return "" if value is None else f", {fmt.signed(value, 0, '%')} against the prediction"


def summary(p: dict[str, Any]) -> list[str]:
    """The section's first lines (≤ 3), or the one line saying why there is nothing to score."""
    led = p.get("ledger")
    if led is None:
        previous = p.get("previous_month", "last month")
        return [
            f"No recommendations were stored for {previous}: this review stores its own "
            "(history/ledger/), and next month's review scores them against what happened."
        ]
    t = led["totals"]
    c = t["workloads"]
    n = t["workloads_recommended"]
    lines = [
        f"{led['ledger_month']}'s review recommended {_n(n, 'request change')} and "
        f"{_n(t['pools_recommended'], 'pool decision')}; over the {led['days_observed']} days "
        f"since ({led['observed_from']} – {led['observed_to']}): {c['applied']} applied, "
        f"{c['partly']} partly, {c['not adopted']} not adopted"
        + (f", {c['not seen']} workloads gone" if c["not seen"] else "")
        + f"; {t['pools_adopted']} of the pool decisions acted on."
    ]
    parts = []
    hours = 24.0 * max(1, int(led["days_observed"]))
    for label, unit in (("core-hours", "cores"), ("GiB-hours", "GiB")):
        figures = t["request_hours"].get(label)
        if figures:
            # negative freed request-hours are requests raised (krr raises memory under its max)
            verb = "freed" if figures["realised"] >= 0 else "added"
            parts.append(
                f"{fmt.number(abs(figures['realised']), 0)} {label} of requests {verb} (≈ "
                f"{fmt.number(abs(figures['realised']) / hours)} {unit} over the period; "
                f"predicted {fmt.number(abs(figures['predicted']), 0)} from each adoption's day"
                f"{_signed_pct(figures.get('error_percent'))})"
            )
    if parts:
        lines.append("The adopted changes: " + "; ".join(parts) + ".")
    return lines


def pool_lines(p: dict[str, Any]) -> list[dict[str, str]]:
    """One line per pool decision of last month: what it said and what happened."""
    led = p.get("ledger")
    out = []
    for pool in [] if led is None else led["pools"]:
        if pool["status"] == "nothing recommended":
            continue
        name = escaped(pool["pool"])
        asked = (
            f"{pool['action']} {fmt.count(pool['nodes'])} node{'s' if pool['nodes'] != 1 else ''}"
        )
        if pool["status"] == "not seen":
            text = f"{asked}: the pool has no history since the review."
        else:
            moved = (
                f"nodes {fmt.number(pool['nodes_at_review'])} → {fmt.number(pool['nodes_now'])} "
                "daily mean"
            )
            if pool["status"] == "not adopted":
                text = f"{asked}: not adopted ({moved})."
            else:
                nh = pool["node_hours"]
                verb = "saved" if pool["action"] == "release" else "added"
                text = (
                    f"{asked}: {_STATUS_WORDS[pool['status']]} on {pool['day']} ({moved}); "
                    f"{fmt.number(nh['realised'], 0)} node-hours {verb} against "
                    f"{fmt.number(nh['predicted'], 0)} predicted from that day"
                    f"{_signed_pct(nh.get('error_percent'))}"
                )
                money = pool.get("money")
                if money:
                    text += (
                        f"; {fmt.number(money['realised'], 0)} {money['currency']} against "
                        f"{fmt.number(money['predicted'], 0)}"
                    )
                text += "."
        out.append({"pool": name, "state": pool["status"], "text": text})
    scheduler = {} if led is None else led["scheduler"]
    if scheduler.get("recommended"):
        out.append(
            {
                "pool": "scheduler",
                "state": "unknown",
                "text": f"change to {escaped(scheduler['recommended'])}: {scheduler['status']}.",
            }
        )
    return out


def ledger_table(p: dict[str, Any]) -> TableView | None:
    """Every workload recommendation of last month and its outcome (also ``ledger.csv``)."""
    led = p.get("ledger")
    if led is None or not led["workloads"]:
        return None
    rows = []
    for w in led["workloads"]:
        res = w.get("resources", {})
        row: dict[str, Any] = {
            "workload": f"{w['namespace']}/{w['owner_name']}",
            "status": w["status"],
            "day": w.get("day") or "",
        }
        for resource, scale, label in (
            ("cpu", 1000.0, "core-hours"),
            ("memory", 2.0**30, "GiB-hours"),
        ):
            r = res.get(resource)
            digits = 3 if resource == "cpu" else 2
            row[f"{resource}_path"] = (
                ""
                if r is None
                else " → ".join(
                    fmt.number(r[k] / scale, digits) for k in ("current", "recommended", "observed")
                )
            )
            realised = w.get("realised", {}).get(label)
            predicted = w.get("predicted", {}).get(label)
            row[f"{resource}_freed"] = (
                ""
                if realised is None
                else f"{fmt.number(realised, 0)} ({fmt.number(predicted, 0)})"
            )
        rows.append(row)
    frame = pd.DataFrame(rows)
    order = {"applied": 0, "partly": 1, "not adopted": 2, "not seen": 3}
    frame = frame.sort_values(
        ["status", "workload"], key=lambda s: s.map(order) if s.name == "status" else s
    )
    return TableView(
        "ledger", "Last month's request recommendations and what happened",
        [Column("workload", "Workload"), Column("status", "Status"), Column("day", "Adopted on"),
         Column("cpu_path", "CPU per pod: at review → recommended → now (cores)"),
         Column("cpu_freed", "Freed core-hours (predicted)"),
         Column("memory_path", "Memory per pod: at review → recommended → now (GiB)"),
         Column("memory_freed", "Freed GiB-hours (predicted)")],
        frame.reset_index(drop=True), limit=None,
        note="Freed request-hours: (request at review − request of the day) × replicas × 24 h, "
        "summed over the days observed; predicted: the recommended change from the adoption day "
        "(for one not adopted: from the first day) at the review's replicas. Negative: requests "
        "were raised. Every figure is in report.json's ledger.",
    )  # fmt: skip

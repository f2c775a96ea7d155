"""The monthly review's four scenarios per pool, on a snapshot of the month's busiest week.

``scenarios_review(review, rightsizing, snapshot, settings)`` runs
``analyzer.whatif.joint.run_joint`` (today / right-size only / repack only / both, each its own
replay of the snapshot's busiest window, then the drain dry run of each pool's best scenario) with
the month's recommendations, and adds to the payload:

- ``pools[].scenarios: [{name, nodes_peak, nodes_removable, violations, pods_waited,
  core_hours_released, gib_hours_released, core_hours_released_pct, gib_hours_released_pct,
  cost_released}]`` (capacity of the pool's active nodes released vs today's row, money only
  with ``--prices``; ``analyzer.whatif.capacity``);
- ``pools[].blocked_nodes: [{node, reasons[], refusals[{workload, pods, reasons[]}]}]`` (the best
  scenario's nodes that cannot go alone; ``refusals`` unjoins ``reasons`` for grouping);
- ``pools[].simulated_decision`` (``analyzer.monthly.decisions.simulated_decision``);
- ``simulation``: the snapshot, window, strategies, each pool's best scenario, each row's
  ``placement`` (``observed``, ``fresh``, or "repack only's, right-sized" for a "both" row that
  keeps repack only's placement, ``analyzer.whatif.kept``; ``kept``: those pools), idle/slack and
  the drain's figures (``available: false`` and how to get a snapshot when none was given).

A review pool the snapshot does not hold gets empty lists and a note; a snapshot pool the history
does not hold is named in a note. ``docs/monthly.md`` "Scenarios" explains every number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.monthly.decisions import simulated_decision
from analyzer.monthly.review import Review
from analyzer.report.monthly_autoscaled import autoscaled_decision
from analyzer.report.monthly_rightsize import Rightsizing
from analyzer.report.views import Column, TableView
from analyzer.whatif.busiest import busiest_words
from analyzer.whatif.capacity import money_text, pct_text, pool_mix_sentence
from analyzer.whatif.compare import UNITS
from analyzer.whatif.joint import BOTH, JointResult, JointSettings, run_joint
from analyzer.whatif.joint_autoscaled import pool_release
from analyzer.whatif.kept import KEPT

ROW_KEYS = (
    "name",
    "nodes_peak",
    "nodes_removable",
    "violations",
    "pods_waited",
    "core_hours_released",
    "gib_hours_released",
    "core_hours_released_pct",
    "gib_hours_released_pct",
    "cost_released",
)
HOW_TO_GET = (
    "The scenarios (today / right-size only / repack only / both) replay a snapshot of the "
    "month's busiest week: collect one with 'analyzer collect --start ... --end ... --out SNAP' "
    "and pass --snapshot SNAP (the nightly OUT keeps no snapshot)."
)


def no_snapshot(review: Review) -> None:
    """The payload without a simulation: empty lists per pool and the reason."""
    for pool in review.payload["pools"]:
        pool["scenarios"], pool["blocked_nodes"], pool["simulated_decision"] = [], [], None
    review.payload["simulation"] = {"available": False, "reason": HOW_TO_GET}


def scenarios_review(
    review: Review,
    rightsizing: Rightsizing,
    snapshot: Snapshot | Path,
    settings: JointSettings,
    autoscaler_choice: dict[str, str] | None = None,
) -> JointResult:
    """Run the four scenarios and add them to ``review.payload`` (module docstring); with
    ``settings.autoscaler`` each also under it (``report.monthly_autoscaled``), and
    ``autoscaler_choice`` (``--autoscaler auto``) says which and why."""
    source = snapshot if isinstance(snapshot, Snapshot) else read_snapshot(Path(snapshot))
    path = None if isinstance(snapshot, Snapshot) else Path(snapshot)  # a Dask worker reads it
    result = run_joint(source, rightsizing.frame, settings, source=path)
    pools = set(result.pools())
    notes = list(result.notes)
    for pool in review.payload["pools"]:
        name = pool["name"]
        if name not in pools:
            pool["scenarios"], pool["blocked_nodes"], pool["simulated_decision"] = [], [], None
            notes.append(f"pool {name}: not in the snapshot, so no scenario")
            continue
        rows = result.pool_rows(name)
        pool["scenarios"] = [{k: r[k] for k in ROW_KEYS} for r in rows]
        for row in pool["scenarios"] if result.autoscaled else []:
            row["autoscaler"] = pool_release(result.autoscaled[row["name"]], name)
        drain = result.drains.get(name)
        pool["blocked_nodes"] = [
            {
                "node": b["node"],
                "reasons": list(b["reasons"]),
                "refusals": [dict(r) for r in b.get("refusals", [])],
            }
            for b in (drain.blocked_nodes if drain else [])
        ]
        pool["simulated_decision"] = simulated_decision(
            pool["scenarios"],
            result.best[name],
            workloads_changed=rightsizing.changed_in_pool(name),
            baseline=result.baseline,
            repack=result.repack,
            forecast_action=pool["decision"]["action"],
            both_worse_because=result.kept_refused,
            window=busiest_words(result.start, result.end),
            cluster={
                run.name: {"violations": run.violations, "pods_waited": run.pods_waited}
                for run in result.scenarios
            },
        )
        if result.autoscaled:
            pool["simulated_decision"] = autoscaled_decision(
                pool["simulated_decision"],
                pool["scenarios"],
                result.autoscaler,
                busiest_words(result.start, result.end),
            )
    reviewed = {p["name"] for p in review.payload["pools"]}
    notes += [
        f"pool {p}: in the snapshot but not in the month's history, so not on this page"
        for p in sorted(pools - reviewed)
    ]
    full = result.to_dict()
    review.payload["simulation"] = {
        "available": True,
        "snapshot": result.source,
        "start": result.start,
        "end": result.end,
        "baseline": result.baseline,
        "repack": result.repack,
        # without an autoscaler (and no auto choice) the payload is today's, key for key
        **({"autoscaler": result.autoscaler} if result.autoscaled or autoscaler_choice else {}),
        **({"autoscaler_choice": autoscaler_choice} if autoscaler_choice else {}),
        "changed_pods": result.changed_pods,
        "recipe": rightsizing.recipe,
        "kubernetes_version": full["kubernetes_version"],
        "cluster": full["cluster"],
        "units": {k: v for k, v in UNITS.items() if k != "active_cost"},
        "kept": sorted(p for p in pools & reviewed if result.run(BOTH).placement_of(p) == KEPT),
        "pools": [
            {
                "pool": p["pool"],
                "best": p["best"],
                "rows": [
                    {
                        "name": r["name"],
                        "strategy": r["strategy"],
                        "placement": r["placement"],
                        "nodes_observed": r["nodes_observed"],
                        "core_hours": r["core_hours"],
                        "gib_hours": r["gib_hours"],
                        "peak_time": r["peak_time"],
                        "idle_pct": r["idle_pct"],
                        "slack_pct": r["slack_pct"],
                    }
                    for r in p["scenarios"]
                ],
                "drain": p["drain"],
            }
            for p in full["pools"]
            if p["pool"] in reviewed
        ],
        "notes": notes,
    }
    return result


def _when(iso: str) -> str:
    """``2026-11-01T00:00:00+00:00`` → ``2026-11-01 00:00`` (the page states UTC once)."""
    return str(iso).replace("T", " ")[:16]


def _names(nodes: list[str], shown: int = 8) -> str:
    """The first ``shown`` node names, then how many more (report.json lists them all)."""
    more = len(nodes) - shown
    head = ", ".join(nodes[:shown])
    return f"{head} and {more} more, all in report.json" if more > 0 else head


def sentence(payload: dict[str, Any]) -> str:
    """The section's first sentence, from ``payload["simulation"]``."""
    s = payload["simulation"]
    if not s["available"]:
        return str(s["reason"])
    version = f" {s['kubernetes_version']['sentence']}" if s.get("kubernetes_version") else ""
    kept = (
        f" In {', '.join(s['kept'])} the 'both' row keeps repack only's placement with the "
        "right-sized requests: replayed afresh one pod at a time, the right-sized requests "
        "needed more nodes."
        if s.get("kept")
        else ""
    )
    return (
        f"Replayed {s['snapshot']} over {busiest_words(s['start'], s['end'])} of it, "
        f"{_when(s['start'])} – "
        f"{_when(s['end'])} UTC with "
        f"today's scheduler {s['baseline']} and the repack configuration {s['repack']}; "
        f"{s['changed_pods']:,} pods got the {s['recipe']} recommendations in the right-sized "
        "rows. Each row is its own replay with the usage as observed: savings are simulated, "
        "never added." + kept + _autoscaled_clause(s) + version
    )


def _autoscaled_clause(s: dict[str, Any]) -> str:
    """Which autoscaler the scenarios were also replayed under, and why when chosen by auto."""
    name = s.get("autoscaler", "none")
    choice = s.get("autoscaler_choice")
    why = f" ({choice['why']})" if choice else ""
    if name == "none":
        return (
            f" No node autoscaler replayed{why}: nodes removable are the nodes left empty."
            if choice
            else ""
        )
    return (
        f" Each scenario was also replayed under {name}{why} ('today' with today's scheduler "
        f"{s['baseline']}): the nodes released are how many fewer nodes the pool ran under "
        f"{name} on average over the window, to the nearest whole node (docs/monthly.md)."
    )


def capacity_sentence(payload: dict[str, Any]) -> str:
    """The section's headline: the capacity each scenario releases vs today in the whole
    cluster (the sum of the pools' rows), money when priced, and any pool-mix shift."""
    s = payload["simulation"]
    if not s["available"]:
        return ""
    currency = (payload.get("prices") or {}).get("currency")
    today = s["cluster"][0]
    parts = []
    for row in s["cluster"][1:]:
        money = money_text(row["cost_released"], currency)
        parts.append(
            f"{row['name']} {row['core_hours_released']:,.0f} core-hours "
            f"({pct_text(row['core_hours_released_pct'])}) and "
            f"{row['gib_hours_released']:,.0f} GiB-hours "
            f"({pct_text(row['gib_hours_released_pct'])})" + (f", {money}" if money else "")
        )
    shifts = [
        " " + pool_mix_sentence(
            r["name"], today["nodes_peak"], r["nodes_peak"], r["core_hours_released_pct"]
        )
        for r in s["cluster"][1:]
        if r["pool_mix_shift"]
    ]  # fmt: skip
    return (
        "Capacity released vs today over the window, all pools: " + "; ".join(parts) + "."
        + "".join(shifts)
    )  # fmt: skip


def scenario_table(payload: dict[str, Any]) -> TableView:
    """Every pool's four rows (report.json's ``pools[].scenarios`` with idle and slack)."""
    rows = []
    currency = (payload.get("prices") or {}).get("currency")
    extra = {p["pool"]: p for p in payload.get("simulation", {}).get("pools", [])}
    for pool in payload["pools"]:
        more = extra.get(pool["name"])
        for i, row in enumerate(pool["scenarios"]):
            detail = more["rows"][i] if more else {}
            rows.append({
                "pool": pool["name"], "scenario": row["name"],
                "strategy": _scheduler(detail),
                "nodes_observed": detail.get("nodes_observed"),
                "nodes_peak": row["nodes_peak"], "nodes_removable": row["nodes_removable"],
                "violations": row["violations"], "pods_waited": row["pods_waited"],
                "core_hours_released": row["core_hours_released"],
                "gib_hours_released": row["gib_hours_released"],
                "cost_released": row["cost_released"],
                "idle_cpu": detail.get("idle_pct", {}).get("cpu"),
                "idle_memory": detail.get("idle_pct", {}).get("memory"),
                "slack_cpu": detail.get("slack_pct", {}).get("cpu"),
                "slack_memory": detail.get("slack_pct", {}).get("memory"),
                "best": bool(more and more["best"] == row["name"]),
                **({} if "autoscaler" not in row else {
                    "nodes_released": row["autoscaler"]["nodes_released"],
                    "as_peak_nodes": row["autoscaler"]["peak_nodes"],
                    "as_node_hours": row["autoscaler"]["node_hours"],
                    "as_pods_evicted": row["autoscaler"]["pods_evicted"],
                }),
            })  # fmt: skip
    columns = [
        Column("pool", "Pool"), Column("scenario", "Scenario"), Column("strategy", "Scheduler"),
        Column("nodes_observed", "Nodes in the pool", "int"),
        Column("core_hours_released", "Core-h freed", "num", 0),
        Column("gib_hours_released", "GiB-h freed", "num", 0),
        *([Column("cost_released", f"{currency} freed", "num", 2)] if currency else []),
        Column("nodes_peak", "Nodes needed at peak", "int"),
        Column("nodes_removable", "Nodes removable", "int"),
        *_autoscaled_columns(payload),
        Column("violations", "Violations", "int"), Column("pods_waited", "Pods waited", "int"),
        Column("idle_cpu", "Idle CPU after", "pct"), Column("idle_memory", "Idle memory after", "pct"),
        Column("slack_cpu", "Slack CPU after", "pct"),
        Column("slack_memory", "Slack memory after", "pct"),
        Column("best", "Best", "bool"),
    ]  # fmt: skip
    keys = [c.key for c in columns]
    return TableView(
        "scenarios", "Four scenarios per pool", columns, pd.DataFrame(rows, columns=keys),
        limit=None,
    )  # fmt: skip


def _autoscaled_columns(payload: dict[str, Any]) -> list[Column]:
    """The scenarios' columns under the node autoscaler (none without one)."""
    name = payload.get("simulation", {}).get("autoscaler", "none")
    if name == "none":
        return []
    return [
        Column("nodes_released", f"Nodes released by {name}", "int"),
        Column("as_peak_nodes", f"Peak nodes under {name}", "int"),
        Column("as_node_hours", f"Node-hours under {name}", "num", 1),
        Column(
            "as_pods_evicted",
            f"Pods evicted by {'consolidation' if name == 'karpenter' else 'scale-down'}",
            "int",
        ),
    ]


def _scheduler(detail: dict[str, Any]) -> str | None:
    """The row's scheduler, and where its placement comes from when it is repack only's."""
    strategy = detail.get("strategy")
    if detail.get("placement") == KEPT:
        return f"{strategy} (repack only's placement, right-sized requests)"
    return strategy


def blocked_table(payload: dict[str, Any]) -> TableView:
    """Every pool's blocked nodes, one row per node, its reasons joined."""
    rows = [
        {"pool": p["name"], "node": b["node"], "reasons": "; ".join(b["reasons"])}
        for p in payload["pools"]
        for b in p["blocked_nodes"]
    ]
    columns = [
        Column("pool", "Pool"),
        Column("node", "Node"),
        Column("reasons", "Why it cannot go"),
    ]
    return TableView(
        "blocked_nodes",
        "Nodes still needed that cannot go alone",
        columns,
        pd.DataFrame(rows, columns=[c.key for c in columns]),
        limit=None,
    )


def drain_lines(payload: dict[str, Any]) -> list[dict[str, str]]:
    """Per pool: the removable nodes and the drain dry run, in one sentence each."""
    out = []
    for p in payload.get("simulation", {}).get("pools", []):
        pool = next(x for x in payload["pools"] if x["name"] == p["pool"])
        best = next(r for r in pool["scenarios"] if r["name"] == p["best"])
        observed = best["nodes_peak"] + best["nodes_removable"]
        text = (
            f"Best scenario '{p['best']}': {best['nodes_peak']} of {observed} nodes needed at the "
            f"pool's peak, {best['nodes_removable']} removable"
        )
        d = p["drain"]
        if d is None:
            text += " (no active node: nothing to drain)."
        elif d["notes"]:
            text += f"; {' '.join(d['notes'])}"
        else:
            text += (
                f". Drain dry run at {_when(d['time'])} UTC: of the {len(d['needed'])} needed nodes, "
                f"{len(d['blocked_nodes'])} cannot go alone and {len(d['drainable_nodes'])} "
                f"could; drained together (least requested first) {d['greedy_count']} more "
                f"could go at that instant"
                + (f" ({_names(d['greedy_drained'])})" if d["greedy_drained"] else "")
                + "."
            )
        out.append({"pool": p["pool"], "text": text})
    return out

"""One decision per pool: add N nodes by a date, release N nodes, or no action — with its rule.

The rules, in order (docs/monthly.md states them for users; node size = the pool's largest node,
which makes "add" and "release" both conservative):

1. **N+1 broken this month** → add nodes now: ``ceil(shortfall / node size)`` (the worse of CPU
   and memory; the shortfall is minus the smallest daily N+1 margin), or more when that many
   would still leave an upper 95 % band over its line within the horizon (rule 2's count).
2. **A line crossed within the horizon** (the upper 95 % band of any of the four series reaches its
   capacity line) → add, by the earliest such date, the fewest nodes that keep every upper 95 %
   band under its line over the whole horizon; "now" when the line is already crossed.
3. **No forecast** (under 21 days of history) → no action, saying so.
4. Otherwise → release the most nodes ``k`` (leaving at least two) such that over the whole horizon
   every upper 95 % band still stays under its line with ``k`` fewer nodes: requested under
   allocatable − (k + 1) nodes, used under (allocatable − k nodes) × threshold; ``k = 0`` is "no
   action". Whether the pods then fit on fewer nodes is the re-packing simulation's question
   (issue 17 adds it beside this rule).

Beside it, when the review replays a snapshot (:func:`simulated_decision`): release the nodes
the pool's **best scenario** left empty at its peak — "after right-sizing K workloads" when that
scenario right-sizes, "change the scheduler configuration to X" when it repacks — only from the
simulated rows, never from savings added up, naming the scenario it comes from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from analyzer.monthly.forecast import Forecast
from analyzer.monthly.series import SERIES

RULES = {
    "n_plus_1": "N+1 broken this month: add enough nodes of the largest size to cover the "
    "shortfall, and to keep every upper 95 % band under its line over the horizon",
    "exhaustion": "the upper 95 % band reaches a capacity line within the horizon: add the fewest "
    "nodes of the largest size that keep every upper band under its line, by the earliest such date",
    "no_forecast": "fewer than 21 days of history (since the last level shift): no forecast, so no "
    "forecast-based action",
    "release": "every upper 95 % band stays under its line over the horizon with k fewer nodes "
    "of the largest size (at least two nodes left): release k",
    "hold": "every upper 95 % band stays under its line over the horizon, but not with one node "
    "fewer: no action",
    "simulation": "replaying the busiest week of a snapshot (or the days --window names): release the nodes the pool's best "
    "scenario (the fewest nodes at peak with no more violations and waiting pods than today, in "
    "the pool and in the whole cluster) "
    "left empty at its peak; each row is its own replay, never a sum of savings",
}
# The joint scenarios' names (analyzer/whatif/joint.py SCENARIOS; a test checks they agree).
TODAY, RIGHTSIZE, REPACK, BOTH = "today", "right-size only", "repack only", "both"


@dataclass(frozen=True)
class Decision:
    action: str  # add | release | none
    nodes: int
    by_date: date | None
    rule: str
    sentence: str
    resource_basis: str | None = None
    # What limits the count, in words: the series whose line the next node would cross
    # ("requested CPU (daily peak)"), "at least two nodes left", or None (no forecast).
    binds: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "nodes": self.nodes,
            "by_date": None if self.by_date is None else self.by_date.isoformat(),
            "rule": self.rule,
            "rule_text": RULES[self.rule],
            "sentence": self.sentence,
            "basis": self.resource_basis,
            "binds": self.binds,
        }


def _unit(resource: str) -> str:
    return "cores" if resource == "cpu" else "GiB"


def _fmt(value: float, resource: str) -> str:
    return f"{value:,.1f} {_unit(resource)}"


def decide(
    *,
    n1_margin: Mapping[str, float | None],
    n1_worst_day: Mapping[str, str | None],
    forecasts: Mapping[str, Forecast],
    allocatable: Mapping[str, float],
    node_size: Mapping[str, float],
    largest_node: str | None,
    nodes: float,
    thresholds: Mapping[str, int],
    horizon_days: int,
    history_end: date | None = None,
) -> Decision:
    """The pool's decision; every argument per resource is keyed ``cpu`` / ``memory``.

    ``history_end`` is the last day of history: a line already crossed on it means "now".
    """
    like = f" like {largest_node}" if largest_node else ""
    size = ", ".join(_fmt(node_size[r], r) for r in ("cpu", "memory"))
    forecast_ok = bool(forecasts) and all(f.method != "none" for f in forecasts.values())
    # Upper 95 % band against each line, with k nodes added (k > 0) or removed (k < 0).
    peaks = (
        {s.name: max(p.hi95 for p in forecasts[s.name].points) for s in SERIES}
        if forecast_ok
        else {}
    )

    def crossing(k: int) -> str | None:
        """The first series whose upper band is over its line with k nodes added (None: none)."""
        for s in SERIES:
            r = s.resource
            alloc = allocatable[r] + k * node_size[r]
            line = alloc - node_size[r] if s.kind == "requested" else alloc * thresholds[r] / 100.0
            if peaks[s.name] > line:
                return s.label
        return None

    def fits(k: int) -> bool:
        return crossing(k) is None

    def fewest(at_least: int) -> int:
        return next((k for k in range(at_least, 10_000) if fits(k)), 10_000)

    horizon = f"every upper band stays under its line for the {horizon_days}-day horizon"
    # 1. N+1 broken this month.
    short = {
        r: -float(m) for r, m in n1_margin.items() if m is not None and m < 0 and node_size[r] > 0
    }
    if short:
        need = {r: math.ceil(v / node_size[r] - 1e-9) for r, v in short.items()}
        worst = max(need, key=lambda r: (need[r], r == "cpu"))
        n = max(need.values())
        tail = ""
        if forecast_ok:
            n = fewest(n)
            tail = f" With {n} more, {horizon}."
        return Decision(
            "add", n, None, "n_plus_1",
            f"Add {n} node{'s' if n != 1 else ''}{like} ({size}) now: on {n1_worst_day[worst]} "
            f"the pool's {'CPU' if worst == 'cpu' else 'memory'} requests at their peak were "
            f"{_fmt(short[worst], worst)} over allocatable minus its largest node (N+1 broken)."
            f"{tail}",
            worst,
            f"requested {'CPU' if worst == 'cpu' else 'memory'} (daily peak)",
        )  # fmt: skip
    if not forecast_ok:
        ranked = sorted(forecasts.values(), key=lambda f: f.history_days)
        fewest_days = ranked[0] if ranked else None
        days = 0 if fewest_days is None else fewest_days.history_days
        # After a level shift the days that count are those since it (monthly/forecast.py).
        since = (
            f" since the level shift on {fewest_days.level_shifts[-1].day.isoformat()}"
            if fewest_days is not None and fewest_days.level_shifts
            else " of history"
        )
        return Decision(
            "none", 0, None, "no_forecast",
            f"No action: N+1 holds, and {days} days{since} are too few to forecast "
            f"(21 are needed).",
        )  # fmt: skip
    crossings = [
        (f.exhaustion.earliest_date, name)
        for name, f in forecasts.items()
        if f.exhaustion.earliest_date is not None
    ]
    if crossings:
        when, first = min(crossings)
        n = fewest(1)
        spec = next(s for s in SERIES if s.name == first)
        if history_end is not None and when <= history_end:
            return Decision(
                "add", n, None, "exhaustion",
                f"Add {n} node{'s' if n != 1 else ''}{like} ({size}) now: {spec.label} is already "
                f"at {spec.line_label(thresholds)}; with {n} more, {horizon}.",
                spec.resource,
                spec.label,
            )  # fmt: skip
        days_left = (
            ""
            if history_end is None
            else f" ({(when - history_end).days} days after the history ends)"
        )
        return Decision(
            "add", n, when, "exhaustion",
            f"Add {n} node{'s' if n != 1 else ''}{like} ({size}) by {when.isoformat()}{days_left}: on that "
            f"day the upper 95 % band of {spec.label} reaches {spec.line_label(thresholds)}; "
            f"with {n} more, {horizon}.",
            spec.resource,
            spec.label,
        )  # fmt: skip
    k = 0
    while k + 1 <= nodes - 2 and fits(-(k + 1)):
        k += 1
    binds = crossing(-(k + 1)) if k + 1 <= nodes - 2 else "at least two nodes left"
    if k:
        return Decision(
            "release", k, None, "release",
            f"Release up to {k} node{'s' if k != 1 else ''}{like} ({size}): over the "
            f"{horizon_days}-day horizon the upper 95 % bands stay under allocatable minus the "
            f"largest node (requests) and under the usage thresholds (usage) with {k} fewer — if "
            f"the pods fit on the rest, which the re-packing simulation checks.",
            None,
            binds,
        )  # fmt: skip
    return Decision(
        "none", 0, None, "hold",
        f"No action: the upper 95 % bands stay under every line for the {horizon_days}-day "
        f"horizon, and would not with one node fewer.",
        None,
        binds,
    )  # fmt: skip


def _nodes(n: int) -> str:
    return f"{n} node{'s' if n != 1 else ''}"


def _workloads(n: int) -> str:
    return f"{n} workload{'s' if n != 1 else ''}"


def _passed_over(
    rows: list[Mapping[str, Any]],
    by: Mapping[str, Mapping[str, Any]],
    best: str,
    cluster: Mapping[str, Mapping[str, int]] | None,
) -> str:
    """Why the row freeing the most nodes of the pool is not the best one: its violations or
    waiting pods in this pool, else the whole cluster's (``cluster``: scenario ->
    ``violations``, ``pods_waited``)."""
    if TODAY not in by:
        return ""
    today = by[TODAY]
    top = max(rows, key=lambda r: int(r["nodes_removable"]))
    if top["name"] == best or int(top["nodes_removable"]) <= int(by[best]["nodes_removable"]):
        return ""
    empty = f" Scenario '{top['name']}' would leave {_nodes(int(top['nodes_removable']))} of this pool empty"
    if top["violations"] > today["violations"] or top["pods_waited"] > today["pods_waited"]:
        return (
            f"{empty}, but with {int(top['violations']):,} violations and "
            f"{int(top['pods_waited']):,} pods waiting in this pool (today: "
            f"{int(today['violations']):,} and {int(today['pods_waited']):,}), so it is not counted."
        )
    if not cluster or TODAY not in cluster:
        return ""
    whole, whole_today = cluster[top["name"]], cluster[TODAY]
    return (
        f"{empty} with no more violations or waiting pods here than today, but in the whole "
        f"cluster it had {whole['violations']:,} violations and {whole['pods_waited']:,} pods "
        f"waiting (today: {whole_today['violations']:,} and {whole_today['pods_waited']:,}), so it "
        "is not counted."
    )


def simulated_decision(
    rows: list[Mapping[str, Any]],
    best: str,
    *,
    workloads_changed: int,
    baseline: str,
    repack: str,
    forecast_action: str = "none",
    both_worse_because: str = "",
    cluster: Mapping[str, Mapping[str, int]] | None = None,
    window: str = "the busiest week",
) -> dict[str, Any]:
    """The pool's decision from its simulated scenario rows (``name``, ``nodes_peak``,
    ``nodes_removable``, ``violations``, ``pods_waited``) and its best scenario's name
    (``window``: the replayed window's name, "the busiest 2 days").

    ``action``: ``release`` (the best scenario keeps today's scheduler), ``change-scheduler``
    (it repacks) or ``none``; ``nodes`` is the best row's ``nodes_removable`` — a simulated
    figure, never a sum of two scenarios' savings.
    """
    by = {r["name"]: r for r in rows}
    row, today = by[best], by[TODAY]
    n = int(row["nodes_removable"])
    observed = int(row["nodes_peak"]) + n
    facts = (
        f"in scenario '{best}' the pool needed {row['nodes_peak']} of its {observed} nodes at its "
        f"peak of {window} (today: {today['nodes_peak']}), with {row['violations']} "
        f"violations and {row['pods_waited']} pods waiting (today: {today['violations']} and "
        f"{today['pods_waited']})"
    )
    rightsized = best in (RIGHTSIZE, BOTH)
    repacked = best in (REPACK, BOTH)
    if n == 0:
        action = "none"
        sentence = (
            f"No release from the simulation: no scenario left a node of the pool empty at its "
            f"peak without more violations or waiting pods than today ({facts})."
        )
    elif best == TODAY:
        action = "release"
        sentence = (
            f"Release {_nodes(n)}: even the observed placement left {'it' if n == 1 else 'them'} "
            f"empty at the pool's peak ({facts})."
        )
    else:
        action = "change-scheduler" if repacked else "release"
        steps = []
        if rightsized:
            steps.append(f"right-sizing {_workloads(workloads_changed)}")
        if repacked:
            steps.append(f"changing the scheduler configuration to {repack}")
        else:
            steps.append(f"with today's scheduler ({baseline})")
        joiner = " and " if rightsized and repacked else " "
        verb = "after " if rightsized else ""
        if repacked and not rightsized:
            sentence = f"Change the scheduler configuration to {repack} and release {_nodes(n)}"
        else:
            sentence = f"Release {_nodes(n)} {verb}{joiner.join(steps)}"
        sentence += f": {facts}."
    if by[BOTH]["nodes_peak"] > by[REPACK]["nodes_peak"]:
        sentence += (
            f" Note: 'both' needed more nodes at peak than 'repack only' ({by[BOTH]['nodes_peak']}"
            f" against {by[REPACK]['nodes_peak']}): "
            + (
                both_worse_because
                or "the right-sized requests, placed one by one as they arrived, packed worse here"
            )
            + " (docs/whatif.md)."
        )
    sentence += _passed_over(rows, by, best, cluster)
    if forecast_action == "add" and n > 0:
        sentence += (
            f" The forecast decision asks to add nodes: the simulation covers {window} "
            "of the snapshot, not the growth ahead."
        )
    return {
        "action": action,
        "nodes": n,
        "workloads": workloads_changed if rightsized else 0,
        "scenario": best,
        "strategy": repack if repacked else (baseline if best != TODAY else "observed"),
        "rule": "simulation",
        "rule_text": RULES["simulation"],
        "sentence": sentence,
    }

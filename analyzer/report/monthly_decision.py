"""One decision per pool: the forecast rule and the simulated scenarios in one sentence.

The monthly review has two answers per pool that a reader must otherwise weigh alone: the
forecast rule (``analyzer.monthly.decisions.decide``: how many nodes the growth over the horizon
allows to release, or asks to add, and which series binds) and the replay of the busiest week
(``simulated_decision``: how many nodes the best scenario left empty at today's demand, and what
change that takes). They answer different questions, so neither overrules the other:

- **forecast releases k, the replay frees n ≥ k** → release k now; the replay's n is what the
  change would allow at today's demand (the forecast keeps the rest for the growth ahead);
- **forecast releases k, the replay frees n < k** → release n: the pods did not fit on fewer
  nodes at the busiest week's peak, whatever the forecast allows (n = 0: no release);
- **forecast adds** → add, by its date; the replay's n is said as today's slack, not netted
  against the addition (the replay is of today's demand, not the growth to that date);
- **forecast holds or has no forecast** → no action from the forecast; the replay's n is named.

Capacity comes from the best scenario's row (core-hours and GiB-hours freed over the window, and
money with ``--prices``) — the figures of the scenarios table under the decisions, never a sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.monthly.series import SERIES
from analyzer.whatif.capacity import money_text

RIGHTSIZE, REPACK, BOTH, TODAY = "right-size only", "repack only", "both", "today"


def nodes_text(n: int) -> str:
    """ "1 node" / "5 nodes"."""
    return f"{n} node{'s' if n != 1 else ''}"


def scenario_change(sim: Mapping[str, Any]) -> str:
    """The change the best scenario makes, as the subject of "would let N go"."""
    scenario, strategy = sim["scenario"], sim["strategy"]
    workloads = int(sim.get("workloads") or 0)
    rightsize = f"right-sizing {workloads} workload{'s' if workloads != 1 else ''}"
    if scenario == REPACK:
        return f"repacking with {strategy}"
    if scenario == RIGHTSIZE:
        return rightsize
    if scenario == BOTH:
        return f"{rightsize} and repacking with {strategy}"
    return "today's scheduler and requests"


def _capacity(row: Mapping[str, Any] | None, currency: str | None, window: str) -> str:
    """ "(93,395 core-hours and 171,314 GiB-hours freed over the busiest week[, 1,234 EUR])"."""
    if not row:
        return ""
    money = money_text(row.get("cost_released"), currency)
    return (
        f" ({row['core_hours_released']:,.0f} core-hours and {row['gib_hours_released']:,.0f} "
        f"GiB-hours freed over {window}{', ' + money if money else ''})"
    )


def _binds(forecast: Mapping[str, Any]) -> str:
    """ " (memory requests bind)": which resource limits the forecast's count, in a few words."""
    binds = forecast.get("binds")
    if not binds:
        return ""
    if binds == "at least two nodes left":
        return " (two nodes stay)"
    spec = next((s for s in SERIES if s.label == binds), None)
    if spec is None:
        return f" ({binds} binds)"
    name = "CPU" if spec.resource == "cpu" else "memory"
    return f" ({name} requests bind)" if spec.kind == "requested" else f" ({name} usage binds)"


def pool_decision(
    forecast: Mapping[str, Any],
    sim: Mapping[str, Any] | None,
    best_row: Mapping[str, Any] | None,
    currency: str | None,
    window: str | None = None,
) -> dict[str, Any]:
    """``{action, nodes, label, state, sentence}`` of one pool (module docstring's rules).

    ``forecast`` is ``Decision.to_dict()``, ``sim`` the pool's ``simulated_decision`` (None when
    no snapshot was replayed) and ``best_row`` its best scenario's row; ``window`` names the
    replayed window ("the busiest 2 days"; default "the busiest week").
    """
    window = window or "the busiest week"
    action, k = forecast["action"], int(forecast["nodes"])
    n = int(sim["nodes"]) if sim else 0
    scaler = sim.get("autoscaler") if sim else None  # the scenarios replayed under it
    # the row's capacity freed is the fixed-node replay's: not said beside the autoscaler's count
    freed = _capacity(best_row, currency, window) if sim and n and not scaler else ""
    at_today = (
        (
            f"{scenario_change(sim)} would let {scaler} release {nodes_text(n)} at today's demand{freed}"
            if scaler
            else f"{scenario_change(sim)} would let {nodes_text(n)} go at today's demand{freed}"
        )
        if sim and n
        else ""
    )
    when = f"by {forecast['by_date']}" if forecast.get("by_date") else "now"
    if action == "add":
        tail = (
            f"; at today's demand {scenario_change(sim)} would "
            + (
                f"let {scaler} release {nodes_text(n)}"
                if scaler
                else f"leave {nodes_text(n)} empty"
            )
            # said short (a first-screen answer is 3 lines); ``freed`` names the window
            + f"{freed}; the replay is of today's demand, not the growth ahead"
            if sim and n
            else ""
        )
        return _out("add", k, f"add {nodes_text(k)} {when}", "bad",
                    f"Add {nodes_text(k)} {when}{_binds(forecast)}{tail}.")  # fmt: skip
    if action == "release" and sim is not None and n < k:
        if n == 0:
            return _out("none", 0, "no release", "",
                        f"No release: the forecast allows {k}{_binds(forecast)}, but "
                        + (f"{scaler} would release no node in the best scenario of {window}"
                           + (": the pool's minSize is its size in the data."
                              if sim.get("held_at_min") else ".")
                           if scaler else
                           f"no scenario left a node empty at the peak of {window} without "
                           "more violations or waiting pods than today."))  # fmt: skip
        change = "" if sim["scenario"] == TODAY else f" after {scenario_change(sim)}"
        return _out("release", n, f"release {nodes_text(n)}{change}", "good",
                    f"Release {nodes_text(n)}{change}{freed}: "
                    + (f"{scaler} would release no more in the replay of {window}"
                       if scaler else f"the replay of {window} left no more empty at its peak")
                    + f", though the forecast allows {k}.")  # fmt: skip
    if action == "release":
        more = f"; {at_today}" if at_today and n > k else ""
        same = f"; the replay of {window} confirms it" if sim and n == k else ""
        return _out("release", k, f"release {nodes_text(k)} now", "good",
                    f"Release {nodes_text(k)} now{_binds(forecast)}{more}{same}.")  # fmt: skip
    why = (
        "no forecast yet (under 21 days of history)"
        if forecast["rule"] == "no_forecast"
        else f"the forecast keeps every node{_binds(forecast)}"
    )
    if at_today:
        return _out("none", 0, "no action now", "",
                    f"No action now: {why}; {at_today}.")  # fmt: skip
    return _out("none", 0, "no action", "", f"No action: {why}.")


def _out(action: str, nodes: int, label: str, state: str, sentence: str) -> dict[str, Any]:
    return {"action": action, "nodes": nodes, "label": label, "state": state, "sentence": sentence}

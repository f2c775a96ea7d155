"""``whatif --search --autoscaler cluster-autoscaler|karpenter``: each searched row's outcome
under the node autoscaler, which the front and the recommendation then rank on (under Karpenter
only the finalists' rows: ``search_finalists``).

With a node autoscaler a team pays for the nodes that exist, not for the active ones: so every
configuration (and baseline) is also replayed with the autoscaler driving the nodes
(``analyzer.whatif.autoscaled``) and its row carries, as the mean over seeds (worst seed for the
pods left pending):

- ``node_hours``, ``core_hours``, ``gib_hours`` (and ``cost`` with ``--prices``) of the nodes that
  existed under the autoscaler, beside the data's own (``observed_*``: its nodes as they came
  and went, what the team paid);
- ``core_hours_released`` / ``gib_hours_released`` (and ``_pct`` of the observed), ``cost_released``:
  observed minus the autoscaled (positive = less paid);
- ``peak_nodes``, ``nodes_added``, ``nodes_removed``, ``pods_evicted`` by scale-down,
  ``pending_pods_at_end`` (pods still waiting when the window ends: none the autoscaler could
  help) and ``pending_pod_seconds_scale_up`` (waits that ended on a node it added).

The observed row carries the data's figures (released 0). ``SearchRow.released`` then reads the
autoscaled capacity released, and a row is eligible only if, besides the fixed-node rule, it
leaves no more pods pending at the end under the autoscaler than observed never placed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from analyzer.whatif.autoscaled import AutoscaledOutcome
from analyzer.whatif.capacity import share
from analyzer.whatif.search_rule import SearchRow

AUTOSCALED_RULE = (
    "Ranked on the replay under {autoscaler}: the capacity of the nodes that existed (what a team "
    "running it pays for) released vs the data's nodes, money when --prices prices every pool, "
    "else the mean of the core-hour and GiB-hour shares; eligible as without it (no more "
    "violations, waiting or never-placed pods than observed on the fixed nodes) and no more pods "
    "left pending at the end under {autoscaler} than observed never placed."
)


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean, or None when any value is None (a pool without a price)."""
    if any(v is None for v in values):
        return None
    return mean(float(v) for v in values if v is not None)


def autoscaled_figures(outcomes: Sequence[AutoscaledOutcome]) -> dict[str, Any]:
    """One row's figures (module docstring) from its seeds' outcomes."""
    totals = [o.total for o in outcomes]
    cost = _mean([t.cost for t in totals])
    observed_cost = _mean([t.observed_cost for t in totals])
    figures: dict[str, Any] = {
        "autoscaler": outcomes[0].autoscaler,
        "seeds": len(outcomes),
        "node_hours": mean(t.node_hours for t in totals),
        "core_hours": mean(t.core_hours for t in totals),
        "gib_hours": mean(t.gib_hours for t in totals),
        "cost": cost,
        "observed_node_hours": totals[0].observed_node_hours,
        "observed_core_hours": totals[0].observed_core_hours,
        "observed_gib_hours": totals[0].observed_gib_hours,
        "observed_cost": totals[0].observed_cost,
        "peak_nodes": mean(t.peak_nodes for t in totals),
        "nodes_added": mean(t.nodes_added for t in totals),
        "nodes_removed": mean(t.nodes_removed for t in totals),
        "pods_evicted": mean(t.pods_evicted for t in totals),
        "pending_pods_at_end": max(o.pending_pods_at_end for o in outcomes),
        "pending_pod_seconds_scale_up": max(o.pending_pod_seconds_scale_up for o in outcomes),
    }
    return _with_released(figures, cost, observed_cost)


def _with_released(
    figures: dict[str, Any], cost: float | None, observed_cost: float | None
) -> dict[str, Any]:
    core = figures["observed_core_hours"] - figures["core_hours"]
    gib = figures["observed_gib_hours"] - figures["gib_hours"]
    figures.update(
        core_hours_released=core,
        gib_hours_released=gib,
        core_hours_released_pct=share(core, figures["observed_core_hours"]),
        gib_hours_released_pct=share(gib, figures["observed_gib_hours"]),
        cost_released=None if cost is None or observed_cost is None else observed_cost - cost,
    )
    return figures


def observed_figures(reference: dict[str, Any]) -> dict[str, Any]:
    """The observed row: the data's nodes as they were (nothing released, nothing pending)."""
    figures = {
        "autoscaler": reference["autoscaler"],
        "seeds": 0,
        "node_hours": reference["observed_node_hours"],
        "core_hours": reference["observed_core_hours"],
        "gib_hours": reference["observed_gib_hours"],
        "cost": reference["observed_cost"],
        **{k: reference[k] for k in reference if k.startswith("observed_")},
        "peak_nodes": None,
        "nodes_added": 0,
        "nodes_removed": 0,
        "pods_evicted": 0,
        "pending_pods_at_end": None,
        "pending_pod_seconds_scale_up": None,
    }
    return _with_released(figures, figures["cost"], figures["observed_cost"])


def attach(
    rows: Sequence[SearchRow],
    outcomes: Sequence[AutoscaledOutcome],
    strategy_of: Mapping[str, str],
) -> None:
    """Fill the ``autoscaled`` figures of every row replayed under the autoscaler (all under
    cluster-autoscaler, the finalists under Karpenter: ``search_finalists``); ``strategy_of``
    maps a row's name to the strategy the comparison replayed (a grid configuration's file, a
    baseline's own name)."""
    by: dict[str, list[AutoscaledOutcome]] = {}
    for o in outcomes:
        by.setdefault(o.strategy, []).append(o)
    for row in rows[1:]:
        mine = by.get(strategy_of[row.name])
        row.autoscaled = None if mine is None else autoscaled_figures(mine)
    first = next((r.autoscaled for r in rows[1:] if r.autoscaled is not None), None)
    if first is not None:
        rows[0].autoscaled = observed_figures(first)


def rule(autoscaler: str) -> str:
    """The ranking rule under ``autoscaler``."""
    return AUTOSCALED_RULE.format(autoscaler=autoscaler)

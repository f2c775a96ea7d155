"""The monthly review's simulated decision under a node autoscaler: the nodes it would release.

``analyzer.monthly.decisions.simulated_decision`` counts the nodes the best scenario's replay
left empty at the pool's peak. With ``--autoscaler`` every scenario was also replayed with the
autoscaler driving the nodes (``analyzer.whatif.joint_autoscaled``): the decision's ``nodes``
becomes the best scenario's ``nodes_released`` under it (how many fewer nodes the pool ran on
average, to the nearest whole node: ``analyzer.whatif.joint_autoscaled``), its sentence says "cluster-autoscaler (or karpenter) would release N"
with the peak it kept, and the empty count stays beside it (``nodes_empty``) for the reader who
compares. The best scenario itself is chosen as without an autoscaler (capacity released, no
more violations or waiting pods than today).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.report.monthly_decision import (
    BOTH,
    REPACK,
    RIGHTSIZE,
    nodes_text,
    scenario_change,
)
from analyzer.whatif.autoscaled import held_at_min


def _how(sim: Mapping[str, Any]) -> str:
    """The best scenario's change, as a clause: "after repacking with most-allocated"."""
    if sim["scenario"] in (RIGHTSIZE, REPACK, BOTH):
        return f"after {scenario_change(sim)}"
    return "with today's scheduler and requests"


def autoscaled_decision(
    sim: dict[str, Any],
    rows: Sequence[Mapping[str, Any]],
    autoscaler: str,
    window: str = "the busiest week",
) -> dict[str, Any]:
    """``sim`` (the pool's simulated decision) with the nodes ``autoscaler`` would release in
    its best scenario (``rows``: the pool's scenario rows, each with its ``autoscaler`` block;
    ``window``: the replayed window's name, "the busiest 2 days")."""
    row = next(r for r in rows if r["name"] == sim["scenario"])
    figures = row["autoscaler"]
    n, empty = int(figures["nodes_released"]), int(sim["nodes"])
    if n == 0:
        action = "none"
    elif sim["action"] == "none":  # none left empty, yet the autoscaler's peak is lower
        action = "change-scheduler" if sim["scenario"] in (REPACK, BOTH) else "release"
    else:
        action = sim["action"]
    by = "consolidation" if autoscaler == "karpenter" else "scale-down"
    facts = (
        f"replayed over {window} under {autoscaler}, the pool ran "
        f"{figures['nodes_released_mean']:.1f} fewer nodes on average: "
        f"{figures['node_hours']:,.1f} node-hours against {figures['observed_node_hours']:,.1f} "
        f"in the data, {figures['nodes_removed']} removed, {figures['nodes_added']} added, "
        f"{figures['pods_evicted']} pods evicted by {by}; without an autoscaler "
        f"{nodes_text(empty)} {'was' if empty == 1 else 'were'} left empty at the pool's peak"
    )
    relaunched = int(figures.get("ordered_for_evicted") or 0)
    if relaunched:
        facts += (
            f"; {relaunched} node{' was' if relaunched == 1 else 's were'} ordered for pods its "
            f"own {by} had evicted in the 10 minutes before (a delete-and-relaunch loop, counted "
            "in these figures: docs/autoscaling.md)"
        )
    held = held_at_min(figures)
    if held:
        facts += (
            f"; the pool's minSize, {figures['min_size']}, is as many nodes as it ran at its "
            f"peak in the data (set autoscaler.node-groups to let {autoscaler} go lower)"
        )
    if n == 0:
        sentence = f"No release: {autoscaler} would release no node {_how(sim)} ({facts})."
    else:
        sentence = f"{autoscaler} would release {nodes_text(n)} {_how(sim)} ({facts})."
    return {
        **sim,
        "action": action,
        "nodes": n,
        "nodes_empty": empty,
        "autoscaler": autoscaler,
        "sentence": sentence[0].upper() + sentence[1:] if n == 0 else sentence,
        "fixed_nodes_sentence": sim["sentence"],
        "held_at_min": held,
    }

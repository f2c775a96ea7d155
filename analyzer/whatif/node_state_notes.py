"""The what-if note on node state in time: how many nodes were cordoned, tainted or not ready,
and for how long (from the snapshot's node_state_intervals, ``analyzer.replay.node_state``)."""

from __future__ import annotations

from analyzer.core.snapshot import Snapshot
from analyzer.replay.node_state import summary

_WORDS = {
    "cordon": "cordoned",
    "autoscaler taint": "tainted by an autoscaler",
    "taint": "otherwise tainted",
    "not-ready": "not ready",
}


def node_state_notes(snapshot: Snapshot) -> list[str]:
    """One sentence when the snapshot has node-state intervals (none for older snapshots, whose
    replays apply ``nodes.taints`` all window long as before)."""
    if getattr(snapshot, "node_state", None) is None:  # older snapshots (and stand-ins)
        return []
    figures = summary(snapshot)
    if not figures:
        return [
            "Node state in time: no node was cordoned, tainted or not ready in the range, "
            "so every strategy may use every present node throughout."
        ]
    parts = []
    for kind, words in _WORDS.items():
        if kind in figures:
            nodes, hours = int(figures[kind]["nodes"]), figures[kind]["hours"]
            parts.append(
                f"{nodes:,} node{'s' if nodes != 1 else ''} {words} for {hours:,.1f} node-hours"
            )
    return [
        "Node state in time: "
        + ", ".join(parts)
        + "; every strategy applies each taint, cordon and not-ready period only while it held "
        "(NoExecute taints evict pods that do not tolerate them)."
    ]

"""The what-if note about NodePorts: how many pods asked for host ports, for which strategies."""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy
from analyzer.scheduling.plugins.nodeports import NAME


def port_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """One note when pods have host ports and a strategy filters with NodePorts (none else:
    without host ports the filter refuses nothing, and the replay is as without it)."""
    pods = snapshot.pods
    if "host_ports" not in pods.columns:
        return []
    text = pods["host_ports"].fillna("").astype(str).str.strip()
    ported = int((~text.isin(["", "[]"])).sum())
    filtering = [
        s.name
        for s in strategies
        if s.profile is not None and any(f.name == NAME for f in s.profile.filters)
    ]
    if not ported or not filtering:
        return []
    pods_text = f"{ported:,} pod{'' if ported == 1 else 's'}"
    return [
        f"NodePorts ({', '.join(filtering)}): {pods_text} of {len(pods):,} "
        f"{'asks' if ported == 1 else 'ask'} for host ports "
        "(from collect --kube-objects); a node where a placed pod holds one of them is refused "
        '("node(s) didn\'t have free ports for the requested pod ports").'
    ]

"""The generator's node events (``SyntheticSpec.node_events``; ``analyzer generate
--node-events``): cordons, short autoscaler taints and a node joining not ready.

Drawn from the seed alone (their own generator, so turning them on changes nothing else):

- two nodes of the open pools (no GPU, not dedicated) are cordoned from the start of the range
  for its first 60 % (``kubectl cordon`` before a drain that never came);
- a third of the other open nodes (every third) go through cluster-autoscaler's scale-down: a
  ``DeletionCandidateOfClusterAutoscaler:PreferNoSchedule`` taint for 10 minutes, then
  ``ToBeDeletedByClusterAutoscaler:NoSchedule`` for 5 minutes, at a random time of the range,
  after which the autoscaler gives up (both taints removed, the node stays);
- one more open node has just joined: not Ready for the first 10 minutes of the range.

The ground truth's placements do not react to them (the generator's scheduling loop knows only
the pools' permanent taints); the OpenMetrics writer renders them as kube-state-metrics does
(``kube_node_spec_taint``, ``kube_node_spec_unschedulable``, ``kube_node_status_condition``) and
the snapshot carries them as its node_state_intervals table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.core.snapshot_schema import NODE_STATE_COLUMNS
from analyzer.sources.spec import Grid, SyntheticSpec

CANDIDATE = "DeletionCandidateOfClusterAutoscaler"
TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
CORDON_SHARE = 0.6  # of the range
CANDIDATE_SECONDS = 600
DELETING_SECONDS = 300
NOT_READY_SECONDS = 600


@dataclass(frozen=True)
class NodeEvent:
    """One state a node held over grid indices ``lo..hi`` (inclusive)."""

    node: int
    kind: str  # taint | cordon | not-ready
    key: str = ""
    value: str = ""
    effect: str = ""
    lo: int = 0
    hi: int = 0


def node_events(spec: SyntheticSpec, open_nodes: Sequence[int], grid: Grid) -> list[NodeEvent]:
    """The events of ``spec`` over ``open_nodes`` (indices of nodes in open pools)."""
    if not spec.node_events or not open_nodes:
        return []
    rng = np.random.default_rng([spec.seed, 24])
    last = grid.size - 1
    first = 1  # index 0 is one step before the range
    steps = max(1, last - first)
    events: list[NodeEvent] = []
    cordoned = list(open_nodes[-2:])
    cordon_end = first + int(steps * CORDON_SHARE)
    for node in cordoned:
        events.append(NodeEvent(node, "cordon", lo=0, hi=cordon_end))
    rest = [n for n in open_nodes if n not in cordoned]
    scaled = rest[::3]
    for node in scaled:
        span = -(-(CANDIDATE_SECONDS + DELETING_SECONDS) // grid.step)
        at = int(rng.integers(first, max(first + 1, last - span)))
        mark = str(grid.origin + grid.step * at)  # the autoscaler's value: when it tainted
        soft = max(1, CANDIDATE_SECONDS // grid.step)
        hard = max(1, DELETING_SECONDS // grid.step)
        events.append(
            NodeEvent(node, "taint", CANDIDATE, mark, "PreferNoSchedule", at, at + soft - 1)
        )
        events.append(
            NodeEvent(
                node, "taint", TO_BE_DELETED, mark, "NoSchedule", at + soft, at + soft + hard - 1
            )
        )
    joining = [n for n in rest if n not in scaled]
    if joining:
        ready_at = first + max(1, NOT_READY_SECONDS // grid.step)
        events.append(NodeEvent(joining[0], "not-ready", lo=0, hi=ready_at - 1))
    return [e for e in events if e.lo <= min(e.hi, last)]


def event_table(events: Sequence[NodeEvent], names: Sequence[str], grid: Grid) -> pd.DataFrame:
    """The node_state_intervals rows of ``events`` (``end`` NaT when held to the last point)."""
    last = grid.size - 1
    rows = []
    for e in events:
        start = grid.origin + grid.step * max(e.lo, 1)
        end = None if e.hi >= last else grid.origin + grid.step * (e.hi + 1)
        rows.append((names[e.node], e.kind, e.key, e.value, e.effect, start, end))
    frame = pd.DataFrame(rows, columns=list(NODE_STATE_COLUMNS))
    frame["start"] = pd.to_datetime(frame["start"], unit="s", utc=True)
    frame["end"] = pd.to_datetime(frame["end"].astype("Float64"), unit="s", utc=True)
    return frame

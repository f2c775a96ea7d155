"""Node taints, cordons and readiness in time: the replay's side of the snapshot's
``node_state_intervals`` table (``analyzer.core.snapshot_schema.NODE_STATE_COLUMNS``).

A snapshot with the table replays each taint, cordon and not-ready period only while it held
(docs/scheduling.md "Node state in time"); the static ``nodes.taints`` column (every taint seen in
the window) is then not read. A snapshot without it replays exactly as before: ``nodes.taints``
for the node's whole life, no cordon.

Semantics, as upstream's control plane:

- a change of a node's state is an event at an instant; at one instant it is applied after the
  departures and node joins/leaves and before the arrivals (so an arriving pod sees it);
- NoSchedule / PreferNoSchedule act at placement only (TaintToleration's filter and score); a
  pod already running stays;
- a cordon (``spec.unschedulable``) sets ``ClusterState.node_unschedulable`` for the
  NodeUnschedulable filter;
- not-ready (a node before its first Ready sample, or whenever its Ready condition is not true)
  adds the taint ``node.kubernetes.io/not-ready:NoSchedule``, as TaintNodesByCondition does;
- NoExecute (the taint-eviction controller): a running pod that does not tolerate every
  NoExecute taint of its node is evicted at once; one that tolerates them all with
  ``tolerationSeconds`` is evicted after the smallest of those seconds unless the taint goes
  first (``GetMatchingTolerations`` / ``getMinTolerationTime``: a value <= 0 evicts at once, no
  value stays for ever). A pending eviction keeps its earlier deadline when the taints change
  again. Evicted pods go back to the queue as pods of a node that left do; DaemonSet and static
  pods stay on their node (they carry the controller's tolerations, and the replay pins them).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot
from analyzer.replay.refusals import Refusal
from analyzer.scheduling.constraint_types import AUTOSCALER_TAINT_KEYS, Taint, Toleration
from analyzer.scheduling.node_taints import forget_taint_caches
from analyzer.scheduling.plugins.helper.node_constraints import retaint as retaint_filter
from analyzer.scheduling.plugins.nodeunschedulable import CACHE_KEY as CORDONED_KEY
from analyzer.scheduling.plugins.tainttoleration import retaint as retaint_score
from analyzer.scheduling.state import ClusterState

NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")
NO_EXECUTE = "NoExecute"
NEVER = np.iinfo(np.int64).max
TAINT_EVICTED = Refusal(
    0, (("evicted by a NoExecute taint it does not tolerate; waiting for a node", 0),)
)


@dataclass(frozen=True)
class NodeState:
    """One node's scheduling-relevant state at an instant."""

    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


def _ns(value: object) -> int:
    return int(pd.Timestamp(value).value)


def _states(
    rows: list[tuple[str, str, str, str, int, int]], start: int
) -> list[tuple[int, NodeState]]:
    """A node's (instant, state) changes from its interval rows, the first at or before
    ``start`` folded into one state at ``start``."""
    bounds = sorted({max(b, start) for r in rows for b in (r[4], r[5])})
    out: list[tuple[int, NodeState]] = []
    for at in bounds:
        taints: set[Taint] = set()
        cordoned = False
        for kind, key, value, effect, lo, hi in rows:
            if not lo <= at < hi:  # bounds before start were moved to start
                continue
            if kind == "taint":
                taints.add(Taint(key, value, effect))
            elif kind == "cordon":
                cordoned = True
            elif kind == "not-ready":
                taints.add(NOT_READY_TAINT)
        state = NodeState(tuple(sorted(taints, key=lambda t: (t.key, t.value, t.effect))), cordoned)
        if not out or out[-1][1] != state:
            out.append((at, state))
    return out


class NodeStateTimeline:
    """The node-state changes of one replay and the NoExecute evictions they schedule."""

    def __init__(self, node_names: Sequence[str], changes: list[tuple[int, int, NodeState]]):
        self.node_names = tuple(node_names)
        self._changes = sorted(changes, key=lambda c: (c[0], c[1]))
        self._next = 0
        self.deadlines: dict[int, int] = {}  # pod -> when its NoExecute eviction is due (ns)
        self._heap: list[tuple[int, int]] = []
        self.evicted = 0  # pods evicted by NoExecute taints

    @classmethod
    def from_snapshot(
        cls, snapshot: Snapshot, node_names: Sequence[str], start: int, end: int
    ) -> NodeStateTimeline | None:
        """The timeline of ``snapshot``'s intervals (None: the snapshot has no such table)."""
        frame = snapshot.node_state
        if frame is None:
            return None
        position = {name: i for i, name in enumerate(node_names)}
        per_node: dict[int, list[tuple[str, str, str, str, int, int]]] = {}
        for row in frame.itertuples(index=False):
            node = position.get(str(row.node))
            if node is None or pd.isna(row.start):
                continue
            lo = _ns(row.start)
            hi = end + 1 if pd.isna(row.end) else _ns(row.end)
            if hi <= lo or hi <= start:
                continue
            fields = (
                str(row.kind),
                *(("" if pd.isna(v) else str(v)) for v in (row.key, row.value, row.effect)),
            )
            per_node.setdefault(node, []).append((*fields, lo, hi))  # type: ignore[arg-type]
        changes = [
            (at, node, state)
            for node, rows in per_node.items()
            for at, state in _states(rows, start)
        ]
        return cls(node_names, changes)

    def initial(self, state: ClusterState, start: int) -> None:
        """Every node without taints or cordon, then the changes at or before ``start``."""
        state.node_taints = [() for _ in state.node_names]
        state.node_unschedulable = [False] * state.node_count
        while self._next < len(self._changes) and self._changes[self._next][0] <= start:
            _, node, value = self._changes[self._next]
            state.node_taints[node] = value.taints
            state.node_unschedulable[node] = value.unschedulable
            self._next += 1
        forget_taint_caches(state)

    def next_time(self) -> int:
        """The next instant a node's state changes or an eviction is due (``NEVER``: none)."""
        heap = self._heap
        while heap and self.deadlines.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # cancelled
        first = self._changes[self._next][0] if self._next < len(self._changes) else NEVER
        return min(first, heap[0][0]) if heap else first

    def apply(self, state: ClusterState, now: int) -> tuple[list[int], list[int]]:
        """Apply the changes due at ``now``: (nodes whose state changed, nodes that opened —
        a taint or cordon gone, so pending pods may fit there now)."""
        changed: list[int] = []
        opened: list[int] = []
        while self._next < len(self._changes) and self._changes[self._next][0] <= now:
            _, node, value = self._changes[self._next]
            self._next += 1
            before = set(state.node_taints[node]) if state.node_taints else set()
            was_cordoned = bool(state.node_unschedulable and state.node_unschedulable[node])
            state.node_taints[node] = value.taints
            state.node_unschedulable[node] = value.unschedulable
            changed.append(node)
            if (before - set(value.taints)) or (was_cordoned and not value.unschedulable):
                opened.append(node)
        if changed:  # the per-taint-set caches follow those nodes (labels stay)
            state.cache.pop(CORDONED_KEY, None)
            retaint_filter(state, changed)
            retaint_score(state, changed)
        return changed, opened

    def schedule(
        self, pod: int, taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], now: int
    ) -> bool:
        """Schedule (or cancel) ``pod``'s NoExecute eviction for its node's ``taints``; True when
        it must go at once."""
        delay = eviction_delay(taints, tolerations)
        if delay is None:
            self.deadlines.pop(pod, None)
            return False
        if delay <= 0:
            self.deadlines.pop(pod, None)
            return True
        due = now + delay * 1_000_000_000
        kept = self.deadlines.get(pod)
        if kept is None or due < kept:  # an earlier eviction already scheduled stays
            self.deadlines[pod] = due
            heapq.heappush(self._heap, (due, pod))
        return False

    def forget(self, pod: int) -> None:
        """``pod`` left its node otherwise: no eviction pending."""
        self.deadlines.pop(pod, None)

    def due(self, now: int) -> list[int]:
        """Pods whose NoExecute eviction is due at ``now`` (index order); forgotten."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, pod = heapq.heappop(heap)
            if self.deadlines.get(pod) == at:
                del self.deadlines[pod]
                out.append(pod)
        return sorted(out)


def eviction_delay(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int | None:
    """Seconds until a pod with ``tolerations`` is evicted from a node with ``taints`` (None: it
    stays; 0: at once): upstream's taint-eviction rule over the NoExecute taints."""
    no_execute = [t for t in taints if t.effect == NO_EXECUTE]
    if not no_execute:
        return None
    used: list[Toleration] = []
    for taint in no_execute:
        match = next((t for t in tolerations if t.tolerates(taint)), None)
        if match is None:
            return 0
        used.append(match)
    bounded = [t.seconds for t in used if t.seconds is not None]
    if not bounded:
        return None
    return max(0, min(bounded))


def summary(snapshot: Snapshot) -> dict[str, dict[str, float]]:
    """Per kind (``taint`` split into autoscaler and other, ``cordon``, ``not-ready``): how many
    nodes and node-hours the intervals cover, clipped to the snapshot's range ({}: no table)."""
    frame = snapshot.node_state
    if frame is None or frame.empty:
        return {}
    start, end = snapshot.start, snapshot.end
    out: dict[str, dict[str, float]] = {}
    for row in frame.itertuples(index=False):
        lo = max(pd.Timestamp(row.start), start)
        hi = end if pd.isna(row.end) else min(pd.Timestamp(row.end), end)
        if hi <= lo:
            continue
        kind = str(row.kind)
        if kind == "taint":
            kind = "autoscaler taint" if is_autoscaler_taint(str(row.key)) else "taint"
        entry = out.setdefault(kind, {"nodes": set(), "hours": 0.0})  # type: ignore[dict-item]
        entry["nodes"].add(str(row.node))  # type: ignore[attr-defined]
        entry["hours"] += (hi - lo).total_seconds() / 3600
    return {
        kind: {"nodes": float(len(v["nodes"])), "hours": float(v["hours"])}  # type: ignore[arg-type]
        for kind, v in sorted(out.items())
    }


def is_autoscaler_taint(key: str) -> bool:
    """Taints cluster-autoscaler and Karpenter set on nodes they are about to remove."""
    return key in AUTOSCALER_TAINT_KEYS

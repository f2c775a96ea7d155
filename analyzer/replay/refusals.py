"""Why a pod waited: the filters' refusal reasons, counted over nodes like kube-scheduler does.

When no node passes the filters, kube-scheduler reports "0/N nodes are available: 76 Insufficient
cpu, 20 node(s) had untolerated taint {nvidia.com/gpu: present}." — every present node is refused
by the *first* filter that fails it (``RunFilterPlugins`` stops there), and each of that filter's
reasons counts the node once (NodeResourcesFit may give "Insufficient cpu" and "Insufficient
memory" for one node). ``RefusalCounter`` computes that summary for a pod the replay could not
place, and only then: placements never pay for it.

NodePorts gives upstream's "node(s) didn't have free ports for the requested pod ports"; pods
without host ports are counted without it (it refuses them nothing).

Speed: TaintToleration and NodeAffinity refuse the same nodes for the same pod shape all replay
long, so their per-node reasons are computed once per shape, and their counts over the present
nodes once per change of the present nodes; NodeResourcesFit's reasons are counted with one
whole-column numpy comparison per requested resource; any other filter
(LoadAwareScheduling, GPU devices) asks its own ``reasons`` per refused node.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from analyzer.replay.topology import without_inert_filters
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.nodeports import NodePorts
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.state import ClusterState, PodDemand

_STATIC = (NodeUnschedulable, TaintTolerationFilter, NodeAffinityFilter)
REUSE_SCAN = 256  # up to this many touches since the last count are checked for reuse


@dataclass(frozen=True)
class Refusal:
    """Why a pod fitted on no node at one instant: (reason, nodes refused for it), most first."""

    nodes: int  # nodes present at that instant
    reasons: tuple[tuple[str, int], ...]

    def message(self) -> str:
        """kube-scheduler's FitError wording: "0/N nodes are available: 3 Insufficient cpu."
        (a reason that is no filter's, e.g. the pod's node left, is the sentence itself)."""
        if self.nodes == 0 and self.reasons:
            return "; ".join(reason for reason, _ in self.reasons) + "."
        if not self.reasons:
            return f"0/{self.nodes} nodes are available."
        parts = ", ".join(
            f"{count} {reason}" if count else reason for reason, count in self.reasons
        )
        return f"0/{self.nodes} nodes are available: {parts}."


# Reasons that are not a filter's (no node count): a pod the replay could not try to place.
NOT_BOUND = Refusal(0, (("not bound to any node in the data (observed keeps it unplaced)", 0),))
PINNED_NODE_ABSENT = Refusal(0, (("its own node is not present (DaemonSet/static pod)", 0),))


@dataclass
class _Shape:
    """One pod shape compiled against the profile's filters (built once per shape).

    ``lead``: how many filters at the head of the profile are static (taints, selectors);
    ``codes``: per node, 0 where it passes them all, else 1 + the index in ``texts`` of the
    first one's refusal; ``fit``: per NodeResourcesFit filter, the (axis index, request) pairs it
    compares and the off-axis resources it finds on no node. The present-node view (refusal
    counts of the static filters, the mask of nodes passing them) is kept until the present
    nodes change.
    """

    lead: int
    codes: Int64Array
    texts: list[str]
    fit: dict[int, tuple[list[int], list[int], list[str], list[str]]]
    active_bytes: bytes = b""
    last: Refusal | None = None  # the latest count, reused while nothing it depends on changed
    bits: Int64Array | None = None  # per node, NodeResourcesFit's reasons (``_fit_bits``)
    bit_names: list[str] = field(default_factory=list)
    bit_counts: list[int] = field(default_factory=list)
    last_change: int = -1  # the journal's change count when ``last`` was made
    last_now: float = 0.0
    present: int = 0
    static_counts: tuple[tuple[str, int], ...] = ()
    passing: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))


class Journal(Protocol):
    """The nodes touched so far (``ScoreCache``): ``changes`` counts every touch ever, ``log``
    holds the latest ones in order."""

    changes: int
    log: list[int]


class RefusalCounter:
    """Counts the refusal reasons of ``profile``'s filters for pods that fit nowhere.

    With a ``journal`` of touched nodes and a profile of static filters and NodeResourcesFit
    only, a shape's last count is reused when no node it could use (present, passing the static
    filters) was touched since: the count depends on nothing else. Retries of pool-bound pods
    after a departure elsewhere cost a lookup then.
    """

    def __init__(
        self,
        profile: Profile,
        state: ClusterState,
        active: BoolArray,
        journal: Journal | None = None,
        _keep_ports: bool = False,
    ) -> None:
        # spread / inter-pod affinity filters refuse nothing when no pod can meet them
        profile = without_inert_filters(profile, state)
        # NodePorts refuses nothing for a pod without host ports (nearly all): those are counted
        # without it, keeping the fast counts; pods with host ports go to a counter that has it
        self._ported: RefusalCounter | None = None
        kept = [f for f in profile.filters if not isinstance(f, NodePorts)]
        if len(kept) < len(profile.filters) and not _keep_ports:
            self._ported = RefusalCounter(profile, state, active, journal, _keep_ports=True)
            profile = replace(profile, filters=kept)
        self.profile = profile
        self.state = state
        self.active = active  # the replay's live mask of present nodes
        self.journal = journal
        self._shapes: dict[bytes, _Shape] = {}
        lead = 0
        for plugin in profile.filters:
            if not isinstance(plugin, _STATIC):
                break
            lead += 1
        self._lead = lead
        # each of these reads only the node's own pods, room, taints and labels
        local = (*_STATIC, NodeResourcesFit, NodePorts)
        self._local = all(isinstance(f, local) for f in profile.filters)
        # static filters, then one NodeResourcesFit: counts can be kept per node and updated
        self._simple = (
            self._local
            and lead == len(profile.filters) - 1
            and isinstance(profile.filters[-1], NodeResourcesFit)
        )

    def static_changed(self) -> None:
        """Node taints or cordons changed: every shape's static codes are rebuilt."""
        self._shapes.clear()

    def _shape(self, key: bytes, pod: PodDemand) -> _Shape:
        shape = self._shapes.get(key)
        if shape is not None:
            return shape
        state = self.state
        codes = np.zeros(state.node_count, dtype=np.int64)
        texts: list[str] = []
        lookup: dict[str, int] = {}
        for plugin in self.profile.filters[: self._lead]:
            result = plugin.filter(state, pod, 0.0)
            for node in np.flatnonzero(~result.feasible & (codes == 0)).tolist():
                reasons = result.reasons(node)
                text = reasons[0] if reasons else plugin.name
                if text not in lookup:
                    lookup[text] = len(texts)
                    texts.append(text)
                codes[node] = 1 + lookup[text]
        fit: dict[int, tuple[list[int], list[int], list[str], list[str]]] = {}
        for position, plugin in enumerate(self.profile.filters):
            if isinstance(plugin, NodeResourcesFit):
                axis = [
                    j
                    for j, r in enumerate(state.resources)
                    if pod.requests[j] > 0 and plugin._checked(r)
                ]
                fit[position] = (
                    axis,
                    [int(pod.requests[j]) for j in axis],
                    [f"Insufficient {state.resources[j]}" for j in axis],
                    [
                        f"Insufficient {r}"
                        for r in pod.off_axis_requests(state.resources)
                        if plugin._checked(r)
                    ],
                )
        shape = _Shape(self._lead, codes, texts, fit)
        last = fit.get(len(self.profile.filters) - 1)
        if last is not None:
            shape.bit_names = ["Too many pods", *last[2]]
        self._shapes[key] = shape
        return shape

    def _present_view(self, shape: _Shape) -> None:
        """Refresh the shape's static counts and passing mask when the present nodes changed."""
        marks = self.active.tobytes()
        if marks == shape.active_bytes:
            return
        shape.last = None
        shape.bits = None
        present = shape.codes[self.active]
        tally = np.bincount(present, minlength=len(shape.texts) + 1)
        shape.static_counts = tuple(
            (text, int(tally[i + 1])) for i, text in enumerate(shape.texts) if tally[i + 1]
        )
        shape.passing = self.active & (shape.codes == 0)
        shape.present = int(self.active.sum())
        shape.active_bytes = marks

    def _touched(self, shape: _Shape) -> list[int] | None:
        """The nodes the shape could use that were touched since its last count (``None``:
        unknown — no journal, no count yet, or too many touches to scan)."""
        journal = self.journal
        if shape.last is None or journal is None:
            return None
        since = journal.changes - shape.last_change
        if since > REUSE_SCAN or since > len(journal.log):
            return None
        passing = shape.passing
        return [n for n in set(journal.log[len(journal.log) - since :]) if passing[n]]

    def refusal(self, key: bytes, pod: PodDemand, now: float) -> Refusal:
        """The reasons every present node refused ``pod`` (shape ``key``) at ``now`` (unix s)."""
        if pod.host_ports and self._ported is not None:
            return self._ported.refusal(key, pod, now)
        shape = self._shape(key, pod)
        self._present_view(shape)
        touched = self._touched(shape)
        if touched is not None and shape.last is not None:
            if self._local and not touched:
                return shape.last  # nothing the count depends on changed
            unchanged = self.journal is not None and shape.last_change == self.journal.changes
            if unchanged and now == shape.last_now:  # same state, same instant: load-aware too
                return shape.last
        if shape.bits is not None and touched is not None:
            counts = self._update_bits(shape, touched)
        elif self._simple and not shape.fit[len(self.profile.filters) - 1][3]:
            counts = self._count_bits(shape)
        else:
            counts = self._count(shape, pod, now)
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        refusal = Refusal(shape.present, tuple(ordered))
        shape.last, shape.last_now = refusal, now
        shape.last_change = self.journal.changes if self.journal is not None else -1
        return refusal

    def _count(self, shape: _Shape, pod: PodDemand, now: float) -> dict[str, int]:
        """Every filter in profile order over the nodes still refused by none before it."""
        counts: dict[str, int] = dict(shape.static_counts)
        remaining = shape.passing
        state = self.state
        for position in range(shape.lead, len(self.profile.filters)):
            if not remaining.any():
                break
            plugin = self.profile.filters[position]
            if position in shape.fit:
                remaining = self._fit(shape.fit[position], remaining, counts)
                continue
            result = plugin.filter(state, pod, now)
            for node in np.flatnonzero(remaining & ~result.feasible).tolist():
                for reason in result.reasons(node) or [plugin.name]:
                    counts[reason] = counts.get(reason, 0) + 1
            remaining = remaining & result.feasible
        return counts

    def _fit_bits(self, shape: _Shape, nodes: Int64Array) -> Int64Array:
        """Per node, NodeResourcesFit's reasons as bits: 1 = too many pods, 2^(k+1) = the k-th
        requested resource is short (``fitsRequest``: allocatable − requested < request)."""
        state = self.state
        axis, requests, _, _ = shape.fit[len(self.profile.filters) - 1]
        bits = (state.pod_count[nodes] >= state.allowed_pods[nodes]).astype(np.int64)
        for k, (j, request) in enumerate(zip(axis, requests, strict=True)):
            short = state.allocatable[nodes, j] - state.requested[nodes, j] < request
            bits |= short.astype(np.int64) << (k + 1)
        return bits

    def _bit_counts(self, shape: _Shape) -> dict[str, int]:
        counts: dict[str, int] = dict(shape.static_counts)
        for name, count in zip(shape.bit_names, shape.bit_counts, strict=True):
            if count:
                counts[name] = counts.get(name, 0) + count
        return counts

    def _count_bits(self, shape: _Shape) -> dict[str, int]:
        """The whole count for a profile of static filters then NodeResourcesFit, keeping each
        node's reason bits so that the next count only revisits the nodes touched since."""
        every = np.arange(self.state.node_count)
        bits = np.where(shape.passing, self._fit_bits(shape, every), 0)
        shape.bits = bits
        shape.bit_counts = [
            int(np.count_nonzero(bits & (1 << b))) for b in range(len(shape.bit_names))
        ]
        return self._bit_counts(shape)

    def _update_bits(self, shape: _Shape, touched: list[int]) -> dict[str, int]:
        """Revisit only ``touched`` nodes: move their old reason bits out of the counts (plain
        Python per node: a handful of nodes costs less than numpy's per-call overhead)."""
        assert shape.bits is not None
        state = self.state
        axis, requests, _, _ = shape.fit[len(self.profile.filters) - 1]
        pods, allowed = state.pod_count, state.allowed_pods
        allocatable, requested = state.allocatable, state.requested
        bits, counts = shape.bits, shape.bit_counts
        for node in touched:
            after = 1 if pods[node] >= allowed[node] else 0
            for k, (j, request) in enumerate(zip(axis, requests, strict=True)):
                if allocatable[node, j] - requested[node, j] < request:
                    after |= 2 << k
            before = int(bits[node])
            change, b = before ^ after, 0
            while change:
                if change & 1:
                    counts[b] += 1 if (after >> b) & 1 else -1
                change >>= 1
                b += 1
            bits[node] = after
        return self._bit_counts(shape)

    def _fit(
        self,
        fit: tuple[list[int], list[int], list[str], list[str]],
        remaining: BoolArray,
        counts: dict[str, int],
    ) -> BoolArray:
        """NodeResourcesFit's ``fitsRequest`` reasons on the ``remaining`` nodes: too many pods,
        and every resource whose request exceeds allocatable − requested (a node may give
        several), one whole-column comparison per resource."""
        state = self.state
        axis, requests, names, off_axis = fit
        refused = (state.pod_count >= state.allowed_pods) & remaining
        too_many = int(np.count_nonzero(refused))
        if too_many:
            counts["Too many pods"] = counts.get("Too many pods", 0) + too_many
        for j, request, name in zip(axis, requests, names, strict=True):
            short = (state.allocatable[:, j] - state.requested[:, j] < request) & remaining
            count = int(np.count_nonzero(short))
            if count:
                counts[name] = counts.get(name, 0) + count
                refused |= short
        if off_axis:  # no node offers it: every node refuses
            left = int(np.count_nonzero(remaining))
            for name in off_axis:
                counts[name] = counts.get(name, 0) + left
            return np.zeros_like(remaining)
        return remaining & ~refused


class WaitReasons:
    """The last refusal of every pod that waited, at the cost of one count per failed attempt.

    Pods of one queue group fail alike, so the replay tries only the first of a group and the
    rest fail implicitly: a failure is stored once per group with a serial number, and a pod's
    last refusal is resolved when its wait ends — its group's latest failure if that came after
    the pod started waiting, else the reason it started waiting with (its own failed arrival, its
    node leaving, or no node to go back to).
    """

    def __init__(
        self,
        counter: RefusalCounter | None,
        keys: list[bytes],
        demands: list[PodDemand],
        pinned: list[bool],
    ) -> None:
        self.counter = counter
        self.keys, self.demands, self.pinned = keys, demands, pinned
        self.serial = 0
        self.group: dict[bytes, tuple[int, Refusal]] = {}
        self.own: dict[int, tuple[int, Refusal]] = {}
        self.last: dict[int, Refusal] = {}  # pod -> last refusal, once its wait ended

    def failed(self, pod: int, now: int) -> Refusal:
        """``pod`` fitted nowhere at ``now`` (ns): count why, and remember it for its group."""
        self.serial += 1
        if self.pinned[pod] or self.counter is None:
            return NOT_BOUND if self.counter is None else PINNED_NODE_ABSENT
        key = self.keys[pod]
        refusal = self.counter.refusal(key, self.demands[pod], now / 1e9)
        self.group[key] = (self.serial, refusal)
        return refusal

    def waits(self, pod: int, reason: Refusal) -> None:
        """``pod`` enters the pending queue for ``reason``."""
        self.own[pod] = (self.serial, reason)

    def ended(self, pod: int) -> None:
        """``pod``'s wait ended (placed, gone, or the replay's end): fix its last refusal."""
        since, reason = self.own.pop(pod)
        if not self.pinned[pod]:
            latest = self.group.get(self.keys[pod])
            if latest is not None and latest[0] > since:
                reason = latest[1]
        self.last[pod] = reason

"""Karpenter's consolidation answers kept between disruption passes (``karpenter_loop``), each
dropped at the next pass when something it read may have changed since, so that an answer taken
again is the one the simulation would give now (``tests/test_karpenter_kept.py``;
``bench/ca_differential.py --autoscaler karpenter`` compares with simulating every try).

Only answers with pods left over are kept (a try that passes ends the pass). What an answer read
(``karpenter_simulate.Reads``):

- **room only** (the room pre-check, or a placement that ran no filter reading the pods
  placed: ``_place_fast``): the staying nodes' room and pod counts, first fit. Fewer room on
  a node that took none of its pods changes nothing (every pod that passed that node still
  does not fit it; first fit is not monotone, so room taken on a node that took one of its pods
  may change where the next ones go, and so may that node leaving or starting to be
  disrupted). Room freed on a node, or a node joining, changes it only where a pod it tried
  fits that node's room now and the node comes before the one that took the pod (first fit:
  a pod left over, anywhere), or for the pre-check's answer where any of its pods or the
  pending pods fits there (``stale_answers``); the pods after the one that lost the try were
  never tried. A node starting to launch is room for the pending pods: it drops the answers
  that scheduled pending pods.
- **live** (a placement that ran a filter reading the placed pods — PodTopologySpread,
  InterPodAffinity, NodePorts — and no filter outside those and the room's: ``Reads.live``,
  since 2026-12-02): the room rules above, and what those filters read of the placed pods. A
  pod it tried read, in its namespace, the pods its spread constraints' selectors match
  (their counts per domain); the pods its required (anti-)affinity terms match; the
  placed pods' required anti-affinity terms that may select it; and, with host ports of its own,
  the placed pods' host ports. So a bind or unbind of a pod drops it only when the pod is one of
  those for one pod it tried (``_reads``: a term's selector matched in any namespace, a
  namespace selector taken as selecting: supersets). A pod of it that spreads by the plugin's
  DoNotSchedule defaults (no constraint of its own) reads every pod. A pod's preferred terms and
  required affinity (not anti-affinity) terms refuse no other pod, so binding such a pod drops
  nothing its labels do not. A change of the nodes present, being disrupted (tainted) or
  launching drops the answers with a spread constraint (spreading's domains are the nodes
  present); InterPodAffinity counts pods, which move only by binds and unbinds. A touch naming
  no pod drops them all; a nominated pod's hold (``HOLD``) changes room and a pod slot only.
- **more** (any other placement that read the state: a filter outside those three, the device
  state, or a pod whose NodeResourcesFit compares other resources than it requests): any bind,
  unbind or change of the node set drops it.

Every answer is dropped when nodes' taints or cordons changed (the static filters), and by the
caller when the nodes within their ``consolidateAfter`` window grow (fewer destinations). A
room-only answer made while no placed pod had pod (anti-)affinity terms left InterPodAffinity
out for its pods (``Reads.alone``): it is dropped once a placed pod has such terms (a required
anti-affinity over zones refuses pods on nodes that took none of them).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from analyzer.replay.karpenter_simulate import FREED_ANYWHERE, Reads, stale_answers
from analyzer.scheduling.affinity_types import AffinityTerm
from analyzer.scheduling.label_selectors import LabelSelector
from analyzer.scheduling.nominated_holds import HOLD
from analyzer.scheduling.state import ClusterState, PodDemand

Slots = tuple[int, ...]


class Reading(NamedTuple):
    """What the live filters read of the placed pods for one pod tried (module docstring)."""

    namespace: str
    labels: frozenset[tuple[str, str]]  # (the placed pods' anti-affinity terms read these)
    spread: tuple[LabelSelector, ...]  # its spread constraints' selectors (its namespace)
    terms: tuple[LabelSelector, ...]  # its required (anti-)affinity terms' selectors
    ports: bool  # it has host ports (NodePorts reads the placed pods')


class Change(NamedTuple):
    """A pod bound or unbound since the last pass, as the live filters see it (equal for a
    workload's pods: one entry and one verdict per reading for all of them)."""

    namespace: str
    labels: frozenset[tuple[str, str]]
    anti: tuple[AffinityTerm, ...]  # its required anti-affinity terms
    ports: bool  # it has host ports


# a pod that spreads by the plugin's DoNotSchedule defaults: every pod bound or unbound counts
EVERY = Reading("\0every", frozenset(), (), (), True)


class KeptAnswers:
    """The kept answers and what changed since the last pass (module docstring)."""

    def __init__(
        self,
        state: ClusterState,
        active: np.ndarray[Any, Any],
        on_node: list[set[int]],
        pinned: Any,  # per pod: pinned to its node (DaemonSet, static): not moved
        demands: Sequence[PodDemand],
        requests: np.ndarray[Any, Any] | None,
    ) -> None:
        self.state, self.active, self.on_node = state, active, on_node
        self.pinned, self.demands, self.requests = pinned, demands, requests
        # candidate slots -> (what the answer depends on besides the state: the candidates'
        # pods, the pending pods, the replacement shapes; the pods left; what it read)
        self.answers: dict[Slots, tuple[Hashable, list[Mapping[str, int]], Reads]] = {}
        self.freed: set[int] = set()  # nodes that freed room (a pod left, or joined) since
        self.taken: set[int] = set()  # nodes a pod was bound to since
        self.present = active.copy()  # the node set at the last pass
        self.disrupting: frozenset[int] = frozenset()
        self.launching: frozenset[int] = frozenset()
        self.recheck = False  # nodes' taints or cordons may have changed since
        self.nodes = self._node_states()
        # the pods bound or unbound since the last pass, as ``Change``s (a workload's pods are
        # one), each pod's made once; ``wild``: a touch that named no pod (``live`` answers are
        # dropped)
        self.changed: set[Change] = set()
        self._changes: dict[int, Change] = {}
        self.wild = False
        # the PodTopologySpread defaults have a DoNotSchedule constraint (a pod with none of its
        # own spreads by them: every pod counts); set by the caller from its profile
        self.hard_defaults = False
        # per kept live answer, what its tried pods read (``_reading``; per pod in
        # ``_readings``), and whether one of them spreads; per (reading, change) the verdict
        self.reading: dict[Slots, frozenset[Reading]] = {}
        self.spreading: set[Slots] = set()  # those with a spread constraint among them
        self._readings: dict[int, Reading] = {}
        self._relevant: dict[tuple[Reading, Change], bool] = {}

    def get(self, slots: Slots, key: Hashable) -> list[Mapping[str, int]] | None:
        """The answer kept for ``slots`` if it was made for ``key``."""
        known = self.answers.get(slots)
        return known[1] if known is not None and known[0] == key else None

    def put(self, slots: Slots, key: Hashable, left: list[Mapping[str, int]], reads: Reads) -> None:
        self.answers[slots] = (key, left, reads)
        self.reading.pop(slots, None)
        self.spreading.discard(slots)
        if reads.live:
            readings = frozenset(self._reading(p) for p, _ in reads.tried or ())
            self.reading[slots] = readings
            if any(r.spread or r is EVERY for r in readings):
                self.spreading.add(slots)

    def clear(self) -> None:
        self.answers.clear()
        self.reading.clear()
        self.spreading.clear()

    def touch(self, node: int, freed: bool, pod: int = -1) -> None:
        """``pod`` was unbound from (``freed``) or bound to ``node``; ``HOLD``: a nominated
        pod's hold released or taken there (room and a pod slot only); -1: a pod not named."""
        (self.freed if freed else self.taken).add(node)
        if pod < 0:
            self.wild = self.wild or pod != HOLD
            return
        change = self._changes.get(pod)
        if change is None:
            demand = self.demands[pod]
            terms = demand.affinity
            change = self._changes[pod] = Change(
                demand.namespace,
                frozenset(demand.labels.items()),
                () if terms is None else terms.required_anti,
                bool(demand.host_ports),
            )
        self.changed.add(change)

    def _reading(self, pod: int) -> Reading:
        """What the live filters read of the placed pods for ``pod`` (``Reading``; ``EVERY``
        when it spreads by the plugin's DoNotSchedule defaults)."""
        found = self._readings.get(pod)
        if found is None:
            demand = self.demands[pod]
            if not demand.spread and self.hard_defaults:
                found = EVERY
            else:
                terms = demand.affinity
                required = () if terms is None else (*terms.required, *terms.required_anti)
                found = Reading(
                    demand.namespace,
                    frozenset(demand.labels.items()),
                    tuple(c.selector for c in demand.spread),
                    tuple(t.selector for t in required),
                    bool(demand.host_ports),
                )
            self._readings[pod] = found
        return found

    def _affected(self, reading: Reading, pods: set[Change]) -> bool:
        """Whether one of ``pods`` (bound or unbound since the last pass: ``changed``'s) is
        one that ``reading``'s filters read: its spread selectors match it (its namespace), a
        required term's selector matches it (any namespace: a superset), one of its required
        anti-affinity terms may select the pod read (a namespace selector: may), or both have
        host ports."""
        if reading is EVERY:
            return bool(pods)
        memo = self._relevant
        for change in pods:
            known = memo.get((reading, change))
            if known is None:
                known = memo[(reading, change)] = _reads(reading, change)
            if known:
                return True
        return False

    def _bounded(self, slots: Slots, reads: Reads, pending: Sequence[int]) -> list[tuple[int, int]]:
        """The answer's pods that freed room may move, each with the node numbered below which
        it would: a placed pod, before the node that took it (first fit); a pod left over, or
        every pod of an answer the pre-check gave (it summed all the room), anywhere."""
        if reads.tried is None:
            moved = [p for s in slots for p in self.on_node[s] if not self.pinned[p]]
            return [(p, FREED_ANYWHERE) for p in [*moved, *pending]]
        return [(p, node if node >= 0 else FREED_ANYWHERE) for p, node in reads.tried]

    def _node_states(self) -> tuple[list[Any], list[bool]]:
        return list(self.state.node_taints), list(self.state.node_unschedulable)

    def refresh(
        self, disrupting: Iterable[int], launching: Iterable[int], pending: Sequence[int]
    ) -> None:
        """At a pass's start: drop the answers something since the last pass may change
        (module docstring); ``disrupting``, ``launching``: the nodes being disrupted and
        launched now, ``pending``: the pending pods the simulation schedules."""
        now_disrupting, now_launching = frozenset(disrupting), frozenset(launching)
        present = self.active
        joined = np.flatnonzero(present & ~self.present).tolist()
        gone = set(np.flatnonzero(self.present & ~present).tolist())
        gone |= now_disrupting - self.disrupting  # no destination any more
        launched = bool(now_launching - self.launching)
        freed = [f for f in self.freed if present[f]] + joined
        pods = self.changed
        changed = bool(
            freed or self.taken or gone or now_launching != self.launching or pods or self.wild
        )
        taken = self.taken | gone
        # the node set changed (spreading's domains; a node being disrupted is tainted)
        moved = (
            bool(joined)
            or bool((self.present & ~present).any())
            or now_disrupting != self.disrupting
            or now_launching != self.launching
        )
        unlive = self.wild  # a pod changed that no live answer can be kept over
        self.present = present.copy()
        self.disrupting, self.launching = now_disrupting, now_launching
        self.freed, self.taken = set(), set()
        self.changed, self.wild = set(), False
        index = self.state.pod_index
        if index is not None and index.affine:
            # a placed pod has affinity terms now: the answers that left InterPodAffinity out
            # for lack of one may change (its terms may refuse their pods on any node)
            alone = [k for k, (_, _, reads) in self.answers.items() if reads.alone]
            for k in alone:
                del self.answers[k]
        if self.recheck:
            self.recheck = False
            nodes = self._node_states()
            if nodes != self.nodes:
                self.nodes = nodes
                self.clear()
                return
        if not self.answers or not changed:
            return
        affected: set[Reading] = set()
        if pods and not unlive:
            read = {r for k in self.answers if k in self.reading for r in self.reading[k]}
            affected = {r for r in read if self._affected(r, pods)}
        keep: dict[Slots, tuple[Hashable, list[Mapping[str, int]], Reads]] = {}
        for slots, answer in self.answers.items():
            reads = answer[2]
            if reads.live:
                if unlive or not self.reading[slots].isdisjoint(affected):
                    continue
                if moved and slots in self.spreading:
                    continue
            elif not reads.rooms:
                continue
            if not reads.took.isdisjoint(taken):
                continue
            if launched and reads.pending:
                continue
            keep[slots] = answer
        if freed and keep:
            bounds = {k: self._bounded(k, reads, pending) for k, (_, _, reads) in keep.items()}
            for k in stale_answers(self.state, self.demands, freed, bounds, self.requests):
                del keep[k]
        self.answers = keep
        self.reading = {k: r for k, r in self.reading.items() if k in keep}
        self.spreading &= keep.keys()


def _reads(reading: Reading, change: Change) -> bool:
    """``KeptAnswers._affected`` for one pod changed."""
    labels = dict(change.labels)
    if change.namespace == reading.namespace and any(s.matches(labels) for s in reading.spread):
        return True
    if any(t.matches(labels) for t in reading.terms) or (change.ports and reading.ports):
        return True
    if change.anti:
        own = dict(reading.labels)
        for term in change.anti:
            listed = reading.namespace in term.namespaces or not term.namespace_selector.nothing
            if listed and term.selector.matches(own):
                return True
    return False

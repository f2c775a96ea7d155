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
- **more** (a pod with spreading, inter-pod affinity or host ports): any bind, unbind or
  change of the node set drops it.

Every answer is dropped when nodes' taints or cordons changed (the static filters), and by the
caller when the nodes within their ``consolidateAfter`` window grow (fewer destinations). A
room-only answer made while no placed pod had pod (anti-)affinity terms left InterPodAffinity
out for its pods (``Reads.alone``): it is dropped once a placed pod has such terms (a required
anti-affinity over zones refuses pods on nodes that took none of them).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from analyzer.replay.karpenter_simulate import FREED_ANYWHERE, Reads, stale_answers
from analyzer.scheduling.state import ClusterState, PodDemand

Slots = tuple[int, ...]


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

    def get(self, slots: Slots, key: Hashable) -> list[Mapping[str, int]] | None:
        """The answer kept for ``slots`` if it was made for ``key``."""
        known = self.answers.get(slots)
        return known[1] if known is not None and known[0] == key else None

    def put(self, slots: Slots, key: Hashable, left: list[Mapping[str, int]], reads: Reads) -> None:
        self.answers[slots] = (key, left, reads)

    def clear(self) -> None:
        self.answers.clear()

    def touch(self, node: int, freed: bool) -> None:
        """A pod was unbound from (``freed``) or bound to ``node``."""
        (self.freed if freed else self.taken).add(node)

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
        changed = bool(freed or self.taken or gone or now_launching != self.launching)
        taken = self.taken | gone
        self.present = present.copy()
        self.disrupting, self.launching = now_disrupting, now_launching
        self.freed, self.taken = set(), set()
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
                self.answers.clear()
                return
        if not self.answers or not changed:
            return
        keep: dict[Slots, tuple[Hashable, list[Mapping[str, int]], Reads]] = {}
        for slots, answer in self.answers.items():
            reads = answer[2]
            if not reads.rooms or not reads.took.isdisjoint(taken):
                continue
            if launched and reads.pending:
                continue
            keep[slots] = answer
        if freed and keep:
            pods = {k: self._bounded(k, reads, pending) for k, (_, _, reads) in keep.items()}
            for k in stale_answers(self.state, self.demands, freed, pods, self.requests):
                del keep[k]
        self.answers = keep

"""The placed pods' identities per node, and per-selector match counts kept incrementally.

PodTopologySpread and InterPodAffinity ask "how many pods of namespace *ns* whose labels
match selector *s* run on each node?" and then sum those counts per topology domain. Walking
every pod of every node for each incoming pod would cost O(pods); this index answers in O(nodes)
numpy work after the first question:

- ``pods[node]``: the ``PlacedPod`` (name, namespace, labels, terminating, uid) of every pod
  bound to the node, in bind order (what ``NodeInfo.Pods`` holds);
- ``match_counts(selector, namespace)``: an int64 array ``[N]`` of the non-terminating pods of
  ``namespace`` matching ``selector`` per node (upstream ``countPodsMatchSelector``, so an empty
  selector counts 0). The first call walks the pod *groups* (same namespace and labels: a
  workload's replicas) that the selector's ``In`` requirement names (``required_values``; all
  the namespace's groups when it has none); the array is then kept and updated by
  ``add``/``remove`` — one dict lookup per bind plus one increment per kept selector that
  matches the pod's group (a new group meets only the kept selectors posted under its labels) —
  at most ``MAX_KEPT`` arrays (least recently asked dropped first);
- ``count_all(matches)``: pods per node, terminating ones included, whose namespace and labels
  satisfy ``matches`` (InterPodAffinity's terms; a walk over the groups); ``affinity_groups``: the
  pods carrying pod (anti-)affinity terms (``NodeInfo.PodsWithAffinity``), per distinct terms
  the number of such pods per node; ``terms_matching(who, labels, matches)``: the term sets
  matching an incoming pod, remembered per pod identity (only sets bound since it last asked,
  and among those only the ones a posting under one of its labels names, are tested);
- ``domains(state, key)``: per node the id of its value of the node label ``key`` (-1: label
  missing) and the values, cached in ``ClusterState.cache`` (``invalidate()`` after relabelling);
  per-domain counts are then ``np.bincount(ids, weights=counts)``.

``ClusterState.bind``/``unbind`` call ``add``/``remove`` when the state has an index
(``ClusterState.attach_pod_index()`` before binding anything).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from analyzer.scheduling.affinity_types import PodAffinity
from analyzer.scheduling.arith import Int64Array
from analyzer.scheduling.label_selectors import LabelSelector

MAX_KEPT = 512


@dataclass(frozen=True)
class PlacedPod:
    """What the spread/affinity plugins read of a pod bound to a node."""

    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    uid: str = ""
    affinity: PodAffinity | None = None  # pod (anti-)affinity terms, for InterPodAffinity


@dataclass
class Domains:
    """One topology key over the nodes: value id per node (-1 = label missing) and the values."""

    key: str
    ids: Int64Array
    values: list[str]


GroupKey = tuple[str, frozenset[tuple[str, str]]]  # (namespace, labels)
CountKey = tuple[LabelSelector, str]  # (selector, namespace) of a kept count array


def required_values(selector: LabelSelector) -> tuple[str, tuple[str, ...]] | None:
    """The key and values of ``selector``'s ``In`` requirement with the fewest values: every
    pod it matches has one of them under that key (None: no ``In`` requirement)."""
    best = None
    for r in selector.requirements:
        if r.operator == "In" and (best is None or len(r.values) < len(best.values)):
            best = r
    return None if best is None else (best.key, best.values)


class PodIndex:
    """Per-node placed pods and per-(selector, namespace) match counts, updated on bind.

    Pods with the same namespace and labels (a workload's replicas) form a *group*; the index
    keeps, per group, its live (not terminating) pods per node and the kept count arrays its
    selector matches, so a bind costs one dict lookup and one increment per matching kept
    selector, and a new selector's first count walks the groups, not the pods.
    """

    tracking = True  # False: a subclass that stays empty (bind/unbind skip building PlacedPods)

    def __init__(self, node_count: int) -> None:
        self.node_count = node_count
        self.pods: list[list[PlacedPod]] = [[] for _ in range(node_count)]
        self.version = 0  # binds and unbinds so far (answers computed at one version stay valid)
        # called as (node, group, ±1) on each bind / unbind of a live pod (counts kept elsewhere)
        self.listeners: list[Callable[[int, GroupKey, int], None]] = []
        self._counts: OrderedDict[CountKey, Int64Array] = OrderedDict()
        self._groups: dict[GroupKey, dict[int, int]] = {}  # live pods per node
        self._keys: dict[int, tuple[Mapping[str, str], GroupKey]] = {}  # by id(labels)
        self._targets: dict[GroupKey, list[Int64Array]] = {}  # kept arrays a group feeds
        # postings: the groups per namespace and per (namespace, label key, value), and the kept
        # selectors per (namespace, key, value) of their ``required_values`` (the others per
        # namespace), so a new selector or a new group meets only its candidates
        self._ns_groups: dict[str, list[GroupKey]] = {}
        self._label_groups: dict[tuple[str, str, str], list[GroupKey]] = {}
        self._kept_by_label: dict[tuple[str, str, str], dict[CountKey, None]] = {}
        self._kept_rest: dict[str, dict[CountKey, None]] = {}
        # terminating pods per group and node (InterPodAffinity counts them, spreading does not)
        self._terminating: dict[GroupKey, dict[int, int]] = {}
        # pods with pod (anti-)affinity terms (upstream ``NodeInfo.PodsWithAffinity``), grouped
        # by their terms (a workload's replicas share them): per node how many carry them
        self.affinity_groups: dict[PodAffinity, dict[int, int]] = {}
        self.affine = 0  # how many pods those are (``affinity_groups`` non-empty iff > 0)
        # every distinct set of terms ever bound, in order of first bind (never shrinks), and per
        # incoming pod identity which of them match it (``terms_matching``)
        self.term_sets: list[PodAffinity] = []
        self._term_known: set[PodAffinity] = set()
        self._term_matches: dict[Any, tuple[int, list[PodAffinity]]] = {}
        # positions in ``term_sets`` per (label key, value) a term's selector requires, and of the
        # sets with a term that requires no value (tested for every pod)
        self._term_postings: dict[tuple[str, str], list[int]] = {}
        self._term_rest: list[int] = []

    def add(self, node: int, pod: PlacedPod) -> None:
        """A pod was bound to ``node``."""
        self.pods[node].append(pod)
        self.version += 1
        self._update(node, pod, 1)
        self._track(node, pod, 1)

    def remove(self, node: int, pod: PlacedPod) -> None:
        """A pod left ``node`` (the first entry with the same namespace/name/uid)."""
        placed = self.pods[node]
        name = pod.name
        for i, other in enumerate(placed):
            if other.name == name and other.uid == pod.uid and other.namespace == pod.namespace:
                removed = placed.pop(i)
                self.version += 1
                self._update(node, removed, -1)
                self._track(node, removed, -1)
                return

    def remove_many(self, node: int, pods: list[PlacedPod]) -> None:
        """``remove`` of each of ``pods`` from ``node`` in turn, the node's list walked once:
        each takes the first entry with its namespace/name/uid not taken by an earlier one."""
        wanted: dict[tuple[str, str, str], int] = {}
        for pod in pods:
            key = (pod.namespace, pod.name, pod.uid)
            wanted[key] = wanted.get(key, 0) + 1
        kept: list[PlacedPod] = []
        found: dict[tuple[str, str, str], list[PlacedPod]] = {}
        for other in self.pods[node]:
            key = (other.namespace, other.name, other.uid)
            if wanted.get(key, 0):
                wanted[key] -= 1
                found.setdefault(key, []).append(other)
            else:
                kept.append(other)
        self.pods[node][:] = kept
        for pod in pods:
            entries = found.get((pod.namespace, pod.name, pod.uid))
            if entries:
                removed = entries.pop(0)
                self.version += 1
                self._update(node, removed, -1)
                self._track(node, removed, -1)

    def _track(self, node: int, pod: PlacedPod, step: int) -> None:
        """Terminating pods' groups and the pods with affinity terms (nothing for most pods)."""
        if pod.terminating:
            group = self._terminating.setdefault((pod.namespace, frozenset(pod.labels.items())), {})
            left = group.get(node, 0) + step
            if left:
                group[node] = left
            else:
                group.pop(node, None)
        if pod.affinity is not None:
            if pod.affinity not in self._term_known:
                self._new_term_set(pod.affinity)
            self.affine += step
            per_node = self.affinity_groups.setdefault(pod.affinity, {})
            left = per_node.get(node, 0) + step
            if left:
                per_node[node] = left
            else:
                per_node.pop(node, None)
                if not per_node:
                    del self.affinity_groups[pod.affinity]

    def _new_term_set(self, affinity: PodAffinity) -> None:
        position = len(self.term_sets)
        self._term_known.add(affinity)
        self.term_sets.append(affinity)
        terms = [*affinity.required, *affinity.required_anti]
        terms += [w.term for w in (*affinity.preferred, *affinity.preferred_anti)]
        for term in terms:
            if term.selector.nothing:
                continue  # matches no pod
            required = required_values(term.selector)
            if required is None:
                if not self._term_rest or self._term_rest[-1] != position:
                    self._term_rest.append(position)
                continue
            key, values = required
            for value in values:
                posting = self._term_postings.setdefault((key, value), [])
                if not posting or posting[-1] != position:
                    posting.append(position)

    def terms_matching(
        self, who: Any, labels: Mapping[str, str], matches: Callable[[PodAffinity], bool]
    ) -> list[tuple[PodAffinity, dict[int, int]]]:
        """The placed pods' term sets that ``matches`` an incoming pod with ``labels``, and the
        pods carrying each set per node (sets with no pod placed now are left out).

        ``who`` names the pod's identity (all ``matches`` depends on: namespace, labels,
        namespace labels; a workload's replicas share it). Per identity the index remembers
        which term sets matched and how many of ``term_sets`` it has tested, so a pod tests only
        the sets bound since its identity last asked, and of those only the ones with a term
        whose selector can match ``labels`` (its ``In`` requirement names one of the pod's
        labels) or requires no value: the answer is O(matching sets), not O(placed term sets).
        """
        checked, found = self._term_matches.get(who, (0, []))
        sets = self.term_sets
        if checked < len(sets):
            fresh: set[int] = set()
            for posting in (
                *(self._term_postings.get(item, ()) for item in labels.items()),
                self._term_rest,
            ):
                if posting and posting[-1] >= checked:
                    fresh.update(posting[bisect_left(posting, checked) :])
            if fresh:
                found = found + [sets[i] for i in sorted(fresh) if matches(sets[i])]
            self._term_matches[who] = (len(sets), found)
        groups = self.affinity_groups
        return [(theirs, groups[theirs]) for theirs in found if theirs in groups]

    def live_groups(self) -> list[tuple[GroupKey, dict[int, int]]]:
        """Every group with its live (not terminating) pods per node (do not modify)."""
        return [(key, per_node) for key, per_node in self._groups.items() if per_node]

    def count_all(
        self, matches: Callable[[str, Mapping[str, str]], bool], *, live: bool = True
    ) -> Int64Array:
        """Pods per node, terminating ones included, whose (namespace, labels) ``matches``
        (``live=False``: only the terminating ones).

        Walks the groups (a workload's replicas share one), not the pods; nothing is kept.
        """
        counts = np.zeros(self.node_count, dtype=np.int64)
        for groups in (self._groups, self._terminating) if live else (self._terminating,):
            for (namespace, labels), per_node in groups.items():
                if per_node and matches(namespace, dict(labels)):
                    for node, pods in per_node.items():
                        counts[node] += pods
        return counts

    def _update(self, node: int, pod: PlacedPod, step: int) -> None:
        if pod.terminating:
            return
        held = self._keys.get(id(pod.labels))  # a workload's pods share their labels object
        if held is not None and held[0] is pod.labels and held[1][0] == pod.namespace:
            key = held[1]
        else:
            key = (pod.namespace, frozenset(pod.labels.items()))
            self._keys[id(pod.labels)] = (pod.labels, key)  # the dict kept: its id stays its own
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = {}
            self._new_group(key, pod.labels)
        left = group.get(node, 0) + step
        if left:
            group[node] = left
        else:
            group.pop(node, None)
        for counts in self._targets[key]:
            counts[node] += step
        for listener in self.listeners:
            listener(node, key, step)

    def _new_group(self, key: GroupKey, labels: Mapping[str, str]) -> None:
        """Postings for a new group, and the kept arrays its selector matches."""
        namespace = key[0]
        self._ns_groups.setdefault(namespace, []).append(key)
        for label, value in labels.items():
            self._label_groups.setdefault((namespace, label, value), []).append(key)
        candidates: dict[CountKey, None] = dict(self._kept_rest.get(namespace, {}))
        for label, value in labels.items():
            candidates.update(self._kept_by_label.get((namespace, label, value), {}))
        self._targets[key] = [self._counts[kept] for kept in candidates if kept[0].matches(labels)]

    def _candidate_groups(self, selector: LabelSelector, namespace: str) -> list[GroupKey]:
        """The groups of ``namespace`` that ``selector`` may match (a superset)."""
        required = required_values(selector)
        if required is None:
            return self._ns_groups.get(namespace, [])
        key, values = required
        found: list[GroupKey] = []
        for value in values:  # disjoint: a group has one value per key
            found += self._label_groups.get((namespace, key, value), [])
        return found

    def match_counts(self, selector: LabelSelector, namespace: str) -> Int64Array:
        """Non-terminating pods of ``namespace`` matching ``selector``, per node (do not modify).

        A selector asked for the first time (or again after its array was dropped) walks only
        the groups its ``In`` requirement names (``required_values``), else its namespace's.
        """
        key = (selector, namespace)
        counts = self._counts.get(key)
        if counts is not None:
            self._counts.move_to_end(key)
            return counts
        counts = np.zeros(self.node_count, dtype=np.int64)
        if selector.empty:
            return counts  # countPodsMatchSelector: an empty selector counts 0; nothing to keep
        for group_key in self._candidate_groups(selector, namespace):
            if selector.matches(dict(group_key[1])):
                self._targets[group_key].append(counts)
                for node, live in self._groups[group_key].items():
                    counts[node] += live
        self._counts[key] = counts
        self._post(key, True)
        if len(self._counts) > MAX_KEPT:
            dropped_key, dropped = self._counts.popitem(last=False)
            self._post(dropped_key, False)
            for group_key in self._candidate_groups(*dropped_key):
                targets = self._targets[group_key]
                for i, kept in enumerate(targets):
                    if kept is dropped:
                        del targets[i]
                        break
        return counts

    def _post(self, key: CountKey, add: bool) -> None:
        """Add (or remove) a kept selector to the postings new groups look up."""
        selector, namespace = key
        required = required_values(selector)
        postings = (
            [self._kept_rest.setdefault(namespace, {})]
            if required is None
            else [self._kept_by_label.setdefault((namespace, required[0], v), {})
                  for v in required[1]]
        )  # fmt: skip
        for posting in postings:
            if add:
                posting[key] = None
            else:
                posting.pop(key, None)


class LabelledNodes(Protocol):
    """What ``domains`` reads of a ``ClusterState`` (no import: the state imports this module)."""

    node_names: tuple[str, ...]
    node_labels: list[dict[str, str]]
    cache: dict[str, Any]


def domains(state: LabelledNodes, key: str) -> Domains:
    """Node label ``key`` as ids per node (cached in ``state.cache``)."""
    cache_key = f"pod_index.domains.{key}"
    cached = state.cache.get(cache_key)
    if isinstance(cached, Domains):
        return cached
    positions: dict[str, int] = {}
    labels = state.node_labels or [{} for _ in state.node_names]
    ids = np.array(
        [positions.setdefault(d[key], len(positions)) if key in d else -1 for d in labels],
        dtype=np.int64,
    )
    result = Domains(key, ids, list(positions))
    state.cache[cache_key] = result
    return result

"""kube-scheduler ``InterPodAffinity``: Filter (required terms) and Score (preferred terms).

Rules as written in research/kube-plugins.md §2 (upstream ``interpodaffinity/{filtering,
scoring,plugin}.go``), vectorised over nodes with numpy. Terms: ``affinity_types``. The incoming
pod's terms have their ``namespaceSelector`` unrolled into the Namespace objects it selects
(``mergeAffinityTermNamespacesIfNotEmpty``; ``{}`` keeps "every namespace"); existing pods' terms
match the incoming pod's namespace through its Namespace labels (none when no such object).
Counting walks every placed pod, terminating ones included (the plugin does not skip them).

- **Filter** (PreFilter over all nodes), in order:
  1. required affinity: an existing pod counts when it matches *all* the terms; it adds 1 to
     (key, its node's value) for each term whose key its node has. A node passes when it has every
     term's key and each term's pair has a count > 0 — or, when no pair has any count and the
     incoming pod matches all its own terms, the "first pod of a group" exception. Else
     UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules";
  2. required anti-affinity: each term an existing pod matches adds 1 to its pair; a node with a
     counted pair for any term is Unschedulable, "node(s) didn't match pod anti-affinity rules";
  3. existing pods' required anti-affinity terms matching the incoming pod, same domain:
     Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules".
- **Score** (PreScore over the nodes that passed Filter; counts over every node): per topology
  key and value an int64 sum — the incoming pod's preferred affinity (+weight) and anti-affinity
  (−weight) terms per matching existing pod; each existing pod's required affinity terms matching
  the incoming pod (+``hardPodAffinityWeight`` when > 0) and preferred terms (±weight). Existing
  pods on nodes without labels contribute nothing. Skip when no term matched (or, with
  ``ignorePreferredTermsOfExistingPods``, when the pod has no preferred terms). Node score = Σ
  over keys the node has; normalised over the scored nodes ``int64(100 · ((s − min) / (max −
  min)))`` in float64, all 0 when max = min.

Cost: a pod pays only for the placed term sets that match it. The placed pods with terms are
grouped by their terms (``PodIndex.affinity_groups``: a workload's replicas are one group); the
index remembers per incoming pod identity which groups' terms match
(``PodIndex.terms_matching``: each identity tests a term set once, and only sets whose selectors
can match its labels), so the symmetry checks cost O(matching sets) and O(nodes) numpy per
matching term, not O(placed pods or term sets). An incoming term over listed namespaces reads the
index's kept per-(selector, namespace) counts (updated on bind/unbind); others walk the groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.affinity_types import AffinityTerm, PodAffinity
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.kube_objects import KubeObjects
from analyzer.scheduling.label_selectors import NOTHING
from analyzer.scheduling.pod_index import PodIndex, domains
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "InterPodAffinity"
MAX_NODE_SCORE = 100
MEMO_SIZE = 200_000  # existing pods' term matches kept per (terms, incoming pod identity); a
# replay meets every (workload terms × workload labels) pair: fewer would be cleared over and over
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True)
class AffinityArgs:
    """InterPodAffinityArgs (v1 defaults)."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def parse_affinity_args(raw: Mapping[str, Any] | None, where: str) -> AffinityArgs:
    """Defaulted and validated ``InterPodAffinityArgs``."""
    body = mapping(raw, where)
    weight = body.get("hardPodAffinityWeight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise InputError(
            f"{where}.hardPodAffinityWeight: Invalid value: {preview(weight)}: not in valid range [0, 100]"
        )
    ignore = body.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise InputError(
            f"{where}.ignorePreferredTermsOfExistingPods: {preview(ignore)} is not a boolean"
        )
    return AffinityArgs(weight, ignore)


def merge_namespaces(term: AffinityTerm, objects: KubeObjects) -> AffinityTerm:
    """An incoming pod's term with its namespaceSelector unrolled into namespace names."""
    selector = term.namespace_selector
    if selector.empty or selector.nothing:
        return term  # {}: every namespace, kept as a selector; nil: none
    names = {ns.name for ns in objects.namespaces.values() if selector.matches(ns.labels)}
    return replace(term, namespaces=term.namespaces | names, namespace_selector=NOTHING)


def _at(per_domain: Int64Array, ids: Int64Array) -> Int64Array:
    """Per node the value of its domain (0 where the node lacks the key: id −1)."""
    padded: Int64Array = np.append(per_domain, 0)
    return padded[ids]


# an existing pod's terms matching the incoming pod: (required anti-affinity, 1) for Filter and
# (term, signed weight) for Score
_Matched = tuple[list[tuple[AffinityTerm, int]], list[tuple[AffinityTerm, int]]]


@dataclass
class _ScoreDetail:
    """What ``--explain`` prints for the last scored pod."""

    pod: PodDemand
    sums: dict[str, Int64Array]  # topology key -> per-domain sum
    raw: Int64Array
    parts: list[tuple[str, str, Int64Array, int]]  # key, term, matching pods per domain, weight


class InterPodAffinity:
    """Filter and Score of kube-scheduler's InterPodAffinity."""

    name = NAME

    def __init__(
        self, args: AffinityArgs | None = None, version: KubeVersion | None = None
    ) -> None:
        self.args = args or AffinityArgs()
        self.last: _ScoreDetail | None = None
        self._memo: dict[Any, _Matched] = {}
        self.last_filter: tuple[PodDemand, list[tuple[str, str, Int64Array, str]]] | None = None
        # ``_placed``'s last answer: (pod, index, index version, answer); the filter, the score
        # and the replay's check ask it for the same pod in a row
        self._last_placed: tuple[PodDemand, PodIndex, int, list[Any]] | None = None

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _index(state: ClusterState) -> PodIndex:
        if state.pod_index is None:
            raise InputError(
                f"{NAME}: the placed pods' labels are not tracked in this run "
                "(ClusterState.attach_pod_index); remove InterPodAffinity from the profile"
            )
        return state.pod_index

    @staticmethod
    def _ns_labels(state: ClusterState, pod: PodDemand) -> Mapping[str, str] | None:
        namespace = state.objects.namespaces.get(pod.namespace)
        return None if namespace is None else namespace.labels

    @staticmethod
    def _who(pod: PodDemand, ns_labels: Mapping[str, str] | None) -> tuple[Any, ...]:
        """What decides whether an existing pod's term matches ``pod`` (a memo key)."""
        frozen = None if ns_labels is None else frozenset(ns_labels.items())
        return (pod.namespace, frozenset(pod.labels.items()), frozen)

    @staticmethod
    def _per_domain(state: ClusterState, key: str, counts: Int64Array) -> Int64Array:
        """Σ counts per value of node label ``key`` over the nodes that carry it."""
        dom = domains(state, key)
        has = dom.ids >= 0
        sums: Int64Array = np.bincount(
            dom.ids[has], weights=counts[has], minlength=len(dom.values)
        ).astype(np.int64)  # float64 is exact: counts stay far below 2**53
        return sums

    def _term_counts(self, state: ClusterState, term: AffinityTerm) -> Int64Array:
        """Existing pods per node matching an (incoming, namespace-merged) term.

        A term over listed namespaces with a non-empty selector reads the index's kept
        per-(selector, namespace) counts (live pods) and adds the terminating pods; others
        (every namespace, the empty selector ``{}``) walk the pod groups.
        """
        index = self._index(state)
        selector = term.selector
        if selector.nothing:
            return np.zeros(state.node_count, dtype=np.int64)

        def matches(ns: str, labels: Mapping[str, str]) -> bool:
            return term.matches(ns, labels, None)

        if term.namespace_selector.nothing and not selector.empty and len(term.namespaces) <= 8:
            counts = index.count_all(matches, live=False)
            for namespace in term.namespaces:
                counts += index.match_counts(selector, namespace)
            return counts
        return index.count_all(matches)

    def _matching(
        self,
        theirs: PodAffinity,
        pod: PodDemand,
        ns_labels: Mapping[str, str] | None,
        who: tuple[Any, ...],
    ) -> _Matched:
        """An existing pod's terms that match ``pod``: required anti-affinity (Filter), and
        (term, signed weight) for Score — required affinity at hardPodAffinityWeight when > 0,
        preferred affinity +weight, preferred anti-affinity −weight. Memoised: a workload's
        replicas ask the same question (``who``: the pod's namespace, labels, namespace labels)."""
        key = (theirs, who)
        found = self._memo.get(key)
        if found is not None:
            return found
        hard = self.args.hard_pod_affinity_weight
        scored = [(t, hard) for t in theirs.required] if hard > 0 else []
        scored += [(w.term, w.weight) for w in theirs.preferred]
        scored += [(w.term, -w.weight) for w in theirs.preferred_anti]
        found = (
            [
                (t, 1)
                for t in theirs.required_anti
                if t.matches(pod.namespace, pod.labels, ns_labels)
            ],
            [(t, w) for t, w in scored if t.matches(pod.namespace, pod.labels, ns_labels)],
        )
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[key] = found
        return found

    def inert(self, state: ClusterState, pod: PodDemand) -> bool:
        """True when the plugin can neither refuse a node nor score for ``pod``: the pod has no
        terms and no placed pod carries any (both PreFilter and PreScore Skip). A replay's fast
        path may leave the plugin out for such pods and stay exact."""
        affinity = pod.affinity or PodAffinity()
        own = bool(affinity.required or affinity.required_anti)
        own = own or bool(affinity.preferred or affinity.preferred_anti)
        return not own and not self._index(state).affinity_groups

    def _placed(
        self, state: ClusterState, pod: PodDemand
    ) -> list[tuple[PodAffinity, dict[int, int], _Matched]]:
        """The placed pods' term sets with a term that matches ``pod``: per set the pods carrying
        it per node and its matching terms (``_matching``). The index remembers per pod identity
        which sets match (``PodIndex.terms_matching``), so this costs O(matching sets)."""
        index = self._index(state)
        if not index.affinity_groups:
            return []
        last = self._last_placed
        if last is not None and last[0] is pod and last[1] is index and last[2] == index.version:
            return last[3]
        ns_labels = self._ns_labels(state, pod)
        who = self._who(pod, ns_labels)

        def any_term(theirs: PodAffinity) -> bool:
            terms = [*theirs.required, *theirs.required_anti]
            terms += [w.term for w in (*theirs.preferred, *theirs.preferred_anti)]
            return any(t.matches(pod.namespace, pod.labels, ns_labels) for t in terms)

        found = []
        for theirs, per_node in index.terms_matching(who, pod.labels, any_term):
            matched = self._matching(theirs, pod, ns_labels, who)
            if matched[0] or matched[1]:
                found.append((theirs, per_node, matched))
        self._last_placed = (pod, index, index.version, found)
        return found

    def placed_terms_match(self, state: ClusterState, pod: PodDemand) -> bool:
        """True when a placed pod's terms match ``pod`` (its required anti-affinity for Filter,
        any term for Score). A pod without own terms for which this is False is as inert as in
        ``inert``: PreFilter finds no existing anti-affinity, PreScore no matched term (Skip)."""
        return bool(self._placed(state, pod))

    # ------------------------------------------------------------------ filter

    def _existing_anti(self, state: ClusterState, pod: PodDemand) -> dict[str, Int64Array]:
        """Per key and domain: existing pods' required anti-affinity terms matching ``pod``."""
        sums: dict[str, Int64Array] = {}
        for _theirs, per_node, matched in self._placed(state, pod):
            counts = None
            for term, _ in matched[0]:
                if counts is None:
                    counts = _dense(per_node, state.node_count)
                per = self._per_domain(state, term.topology_key, counts)
                key = term.topology_key
                sums[key] = sums[key] + per if key in sums else per
        return sums

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Required affinity, required anti-affinity, existing pods' anti-affinity (in order)."""
        count = state.node_count
        ones = np.ones(count, dtype=bool)
        affinity = pod.affinity or PodAffinity()
        existing = self._existing_anti(state, pod)
        self.last_filter = None
        if not affinity.required and not affinity.required_anti and not existing:
            return FilterResult(ones, lambda node: [])  # PreFilter Skip
        # (row label, topology key, per-domain count, text): per node counts only for --explain
        detail: list[tuple[str, str, Int64Array, str]] = []
        affinity_ok = ones
        if affinity.required:
            terms = [merge_namespaces(t, state.objects) for t in affinity.required]
            if len(terms) == 1:  # the usual case: the term's (kept) counts
                both = self._term_counts(state, terms[0])
            else:
                both = self._index(state).count_all(
                    lambda ns, labels: all(t.matches(ns, labels, None) for t in terms)
                )
            sums: dict[str, Int64Array] = {}
            for t in terms:
                per = self._per_domain(state, t.topology_key, both)
                sums[t.topology_key] = sums[t.topology_key] + per if t.topology_key in sums else per
            has_all = np.logical_and.reduce(
                [domains(state, t.topology_key).ids >= 0 for t in terms]
            )
            pods_exist = np.logical_and.reduce(
                [_at(sums[t.topology_key], domains(state, t.topology_key).ids) > 0 for t in terms]
            )
            counted = any(bool(s.any()) for s in sums.values())
            self_match = all(t.matches(pod.namespace, pod.labels, None) for t in terms)
            first_of_group = not counted and self_match
            affinity_ok = has_all & (pods_exist | first_of_group)
            extra = " (none anywhere, the pod matches its own terms: first of its group)"
            for i, t in enumerate(terms):
                detail.append((f"required affinity [{i}]", t.topology_key, sums[t.topology_key],
                               "pod(s) matching all required affinity terms in the node's "
                               + t.topology_key + " domain" + (extra if first_of_group else "")))  # fmt: skip
        anti_ok = ones
        if affinity.required_anti:
            terms = [merge_namespaces(t, state.objects) for t in affinity.required_anti]
            anti: dict[str, Int64Array] = {}
            for t in terms:
                per = self._per_domain(state, t.topology_key, self._term_counts(state, t))
                anti[t.topology_key] = anti[t.topology_key] + per if t.topology_key in anti else per
            anti_ok = ~np.logical_or.reduce(
                [_at(anti[t.topology_key], domains(state, t.topology_key).ids) > 0 for t in terms]
            )
            for i, t in enumerate(terms):
                detail.append((f"required anti-affinity [{i}]", t.topology_key,
                               anti[t.topology_key],
                               "pod(s) matching the term in the node's " + t.topology_key
                               + " domain"))  # fmt: skip
        existing_ok = ones
        for key, per_domain in existing.items():
            existing_ok = existing_ok & ~(_at(per_domain, domains(state, key).ids) > 0)
            detail.append(("existing anti-affinity", key, per_domain,
                           f"existing pods' required anti-affinity term(s) matching this pod in "
                           f"the node's {key} domain"))  # fmt: skip
        feasible = affinity_ok & anti_ok & existing_ok
        unresolvable = ~affinity_ok
        self.last_filter = (pod, detail)

        def reasons(node: int) -> list[str]:
            if not affinity_ok[node]:
                return [REASON_AFFINITY]
            if not anti_ok[node]:
                return [REASON_ANTI]
            if not existing_ok[node]:
                return [REASON_EXISTING]
            return []

        return FilterResult(feasible, reasons, unresolvable=unresolvable)

    # ------------------------------------------------------------------ score

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array | None:
        """Scores with every node a candidate (``score_feasible`` is what profiles call)."""
        return self.score_feasible(state, pod, now, np.ones(state.node_count, dtype=bool))

    def score_feasible(
        self, state: ClusterState, pod: PodDemand, now: float, feasible: BoolArray
    ) -> Int64Array | None:
        """PreScore + Score + NormalizeScore over the nodes that passed Filter (others 0)."""
        self.last = None
        if state.node_count == 0 or not feasible.any():
            return None  # no nodes to score: Skip
        affinity = pod.affinity or PodAffinity()
        has_preferred = bool(affinity.preferred or affinity.preferred_anti)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return None
        self._index(state)  # the error naming the fix, before any work
        labelled = _labelled(state)
        sums: dict[str, Int64Array] = {}
        parts: list[tuple[str, str, Int64Array, int]] = []  # key, term, pods per domain, weight
        touched = False

        def per_key(key: str) -> Int64Array:
            if key not in sums:
                sums[key] = np.zeros(len(domains(state, key).values), dtype=np.int64)
            return sums[key]

        for sign, weighted, kind in (
            (1, affinity.preferred, "preferred affinity"),
            (-1, affinity.preferred_anti, "preferred anti-affinity"),
        ):
            for i, w in enumerate(weighted):
                term = merge_namespaces(w.term, state.objects)
                counts = np.where(labelled, self._term_counts(state, term), 0)
                per = self._per_domain(state, term.topology_key, counts)
                if per.any():
                    touched = True
                    target = per_key(term.topology_key)
                    target += sign * w.weight * per
                    parts.append((term.topology_key, f"pod's {kind} [{i}] {term.selector.text()}",
                                  per, sign * w.weight))  # fmt: skip
        for theirs, per_node, matched in self._placed(state, pod):
            on_labelled = None
            for term, weight in matched[1]:
                if on_labelled is None:
                    on_labelled = np.where(labelled, _dense(per_node, state.node_count), 0)
                per = self._per_domain(state, term.topology_key, on_labelled)
                if per.any():
                    touched = True
                    target = per_key(term.topology_key)
                    target += weight * per
                    parts.append((term.topology_key, "existing pods' " + _kind(theirs, term),
                                  per, weight))  # fmt: skip
        if not touched:
            return None  # no term matched anywhere: Skip
        raw = np.zeros(state.node_count, dtype=np.int64)
        for key, per_domain in sums.items():
            raw += _at(per_domain, domains(state, key).ids)
        result = _normalize(raw, feasible)
        self.last = _ScoreDetail(pod, sums, raw, parts)
        return result

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """The Filter's checks, and per topology key the node's domain sum."""
        rows: list[ExplainRow] = []
        if self.last_filter is not None and self.last_filter[0] is pod:
            for label, key, per_domain, text in self.last_filter[1]:
                ids = domains(state, key).ids
                got = int(_at(per_domain, ids)[node]) if ids[node] >= 0 else -1
                note = "node lacks the topology key" if got < 0 else f"{got} {text}"
                rows.append(ExplainRow(NAME, label, max(got, 0), None, None, None, note))
        detail = self.last
        if detail is None or detail.pod is not pod:
            return rows
        labels = state.node_labels[node] if state.node_labels else {}
        for key, per_domain in sorted(detail.sums.items()):
            value = labels.get(key)
            if value is None:
                rows.append(ExplainRow(NAME, key, None, None, None, 0,
                                       f"node has no {key} label: no contribution"))  # fmt: skip
                continue
            ids = domains(state, key).ids
            for part_key, text, pods, weight in detail.parts:
                here = int(_at(pods, ids)[node]) if part_key == key else 0
                if here:
                    rows.append(ExplainRow(NAME, key, here, None, None, here * weight,
                                           f"{text}: {here} pod(s) × weight {weight}"))  # fmt: skip
            got = int(_at(per_domain, ids)[node])
            rows.append(ExplainRow(NAME, key, None, None, None, got,
                                   f"domain {key}={value}: Σ matched term weights {got}"))  # fmt: skip
        rows.append(ExplainRow(NAME, "(raw)", None, None, None, int(detail.raw[node]),
                               "Σ over keys; normalised 100·(s−min)/(max−min) over scored nodes"))  # fmt: skip
        return rows


def _kind(theirs: PodAffinity, term: AffinityTerm) -> str:
    """Which of an existing pod's term lists ``term`` comes from (for ``--explain``)."""
    if term in theirs.required:
        return f"required affinity {term.selector.text()} (hardPodAffinityWeight)"
    if any(w.term == term for w in theirs.preferred):
        return f"preferred affinity {term.selector.text()}"
    return f"preferred anti-affinity {term.selector.text()}"


def _dense(per_node: Mapping[int, int], count: int) -> Int64Array:
    """A ``{node: pods}`` map as an int64 array over the nodes."""
    dense = np.zeros(count, dtype=np.int64)
    dense[np.fromiter(per_node.keys(), np.int64, len(per_node))] = np.fromiter(
        per_node.values(), np.int64, len(per_node)
    )
    return dense


def _labelled(state: ClusterState) -> BoolArray:
    """Nodes with at least one label (pods elsewhere add nothing to scores), cached."""
    cached = state.cache.get("interpodaffinity.labelled")
    if isinstance(cached, np.ndarray) and len(cached) == state.node_count:
        return cached
    labels = state.node_labels or [{} for _ in state.node_names]
    labelled: BoolArray = np.array([bool(d) for d in labels], dtype=bool)
    state.cache["interpodaffinity.labelled"] = labelled
    return labelled


def _normalize(raw: Int64Array, scored: BoolArray) -> Int64Array:
    """NormalizeScore: min-max over the scored nodes in float64, truncated (others 0)."""
    values = raw[scored]
    low, high = int(values.min()), int(values.max())
    if high - low <= 0:
        return np.zeros_like(raw)
    scaled = float(MAX_NODE_SCORE) * ((raw - low).astype(np.float64) / float(high - low))
    result: Int64Array = np.where(scored, scaled.astype(np.int64), 0).astype(np.int64)
    return result

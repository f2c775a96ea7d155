"""kube-scheduler ``PodTopologySpread``: Filter (DoNotSchedule) and Score (ScheduleAnyway).

Rules as written in research/kube-plugins.md §1 (upstream ``podtopologyspread/{common,filtering,
scoring,plugin}.go``), vectorised over nodes with numpy:

- Constraints: the pod's own ``topologySpreadConstraints`` with the wanted ``whenUnsatisfiable``;
  only when the pod has none, the defaults — ``defaultingType: System`` = hostname maxSkew 3 +
  zone maxSkew 5, both ScheduleAnyway; ``List`` = ``defaultConstraints`` — with the selector of
  ``helper.DefaultSelector`` (Services / RC / RS / StatefulSet selecting the pod,
  ``kube_objects``); an empty default selector means no constraint. With MatchLabelKeys on, each
  ``matchLabelKeys`` key the pod carries adds ``key In [value]`` (a nil selector stays nil).
- Counting (``countPodsMatchSelector``): pods of the incoming pod's namespace, not terminating,
  whose labels match; an empty selector counts 0. Nodes counted: with
  NodeInclusionPolicyInPodTopologySpread off, those matching the pod's nodeSelector + required
  node affinity; on, per constraint ``nodeAffinityPolicy`` Honor (default) applies that match and
  ``nodeTaintsPolicy`` Honor (default Ignore) requires every NoSchedule/NoExecute taint tolerated.
- Filter: over ALL nodes having every constraint's key, per constraint and domain the matching
  count; min over existing domains (0 when fewer than ``minDomains``); a node without the key is
  UnschedulableAndUnresolvable, ``count(domain) + selfMatch − min > maxSkew`` Unschedulable.
- Score: over the nodes that passed Filter (``score_feasible``). ``requireAllTopologies`` = the
  pod has its own constraints or the args are not System; such candidates lacking a key are
  ignored (0). Non-hostname domains are those of the scored candidates (a missing label is the
  value ""); weight ``ln(size + 2)`` (size: distinct domains, hostname: scored candidates);
  counts over every node (inclusion rules, all keys when required) for those domains only;
  hostname counts are the node's own pods. ``Σ cnt·w + (maxSkew − 1)`` in float64, Go
  ``math.Round``; normalise ``100·(max + min − s) / max`` (Go int division; max starts at 0,
  all 100 when max is 0; ignored nodes 0).

Not modelled: the count by owner UID seen in one upstream version for pods with ownerReferences
(research/kube-plugins.md §1.4 caveat); the legacy 0–10 scale (PodTopologySpread scores 0–100).
Cost: pods without constraints (and without a default selector) return at once; the others pay
O(nodes) numpy per constraint, counts come from ``ClusterState.pod_index``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.arith import BoolArray, FloatArray, Int64Array, go_round_array
from analyzer.scheduling.feature_gates import (
    MATCH_LABEL_KEYS,
    MIN_DOMAINS,
    NODE_INCLUSION_POLICY,
    default_gates,
)
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.label_selectors import EVERYTHING, LabelSelector
from analyzer.scheduling.plugins.helper.node_constraints import affinity_mask, taint_mask
from analyzer.scheduling.pod_index import domains
from analyzer.scheduling.spread_types import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    SpreadConstraint,
    parse_spread_constraint,
)
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "PodTopologySpread"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MAX_NODE_SCORE = 100
REASON_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
SYSTEM_DEFAULTS = (
    SpreadConstraint(3, HOSTNAME, SCHEDULE_ANYWAY, EVERYTHING),
    SpreadConstraint(5, ZONE, SCHEDULE_ANYWAY, EVERYTHING),
)


@dataclass(frozen=True)
class SpreadArgs:
    """PodTopologySpreadArgs (v1 defaults) plus the feature gates the plugin reads."""

    defaulting_type: str = "System"
    default_constraints: tuple[SpreadConstraint, ...] = ()
    gates: Mapping[str, bool] | None = None  # None: the version's defaults

    def with_gates(self, gates: Mapping[str, bool]) -> SpreadArgs:
        """The same args under the scenario's feature gates."""
        return replace(self, gates=dict(gates))


def parse_spread_args(raw: Mapping[str, Any] | None, where: str) -> SpreadArgs:
    """Defaulted and validated ``PodTopologySpreadArgs``."""
    body = mapping(raw, where)
    defaulting = body.get("defaultingType", "System")
    if defaulting not in ("System", "List"):
        raise InputError(f"{where}.defaultingType: {preview(defaulting)} is not System or List")
    at = f"{where}.defaultConstraints"
    constraints = tuple(
        parse_spread_constraint(c, f"{at}[{i}]", default=True)
        for i, c in enumerate(listing(body.get("defaultConstraints"), at))
    )
    if defaulting == "System" and constraints:
        raise InputError(
            f'{at}: Invalid value: when .defaultingType is "System", .defaultConstraints must '
            "be empty (use defaultingType: List)"
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise InputError(f"{at}[{i}]: Duplicate value: {{{pair[0]}, {pair[1]}}}")
        seen.add(pair)
    return SpreadArgs(str(defaulting), constraints)


@dataclass(frozen=True)
class _Constraint:
    """A constraint ready to evaluate: merged selector, effective policies and minDomains."""

    max_skew: int
    key: str
    selector: LabelSelector
    min_domains: int
    affinity_honor: bool
    taints_honor: bool


@dataclass
class _ScoreDetail:
    """What ``--explain`` prints for the last scored pod."""

    pod: PodDemand
    constraints: list[_Constraint]
    weights: list[float]
    sizes: list[int]
    node_counts: list[Int64Array]
    raw: Int64Array
    ignored: BoolArray
    values: list[list[str]] = field(default_factory=list)


class PodTopologySpread:
    """Filter and Score of kube-scheduler's PodTopologySpread."""

    name = NAME

    def __init__(self, args: SpreadArgs | None = None, version: KubeVersion | None = None) -> None:
        from analyzer.scheduling.versions import parse_version

        self.args = args or SpreadArgs()
        gates = default_gates(version or parse_version(None))
        gates.update(self.args.gates or {})
        self.node_inclusion = gates[NODE_INCLUSION_POLICY]
        self.match_label_keys = gates[MATCH_LABEL_KEYS]
        self.min_domains = gates[MIN_DOMAINS]
        self.system_defaulted = self.args.defaulting_type == "System"
        self.defaults = SYSTEM_DEFAULTS if self.system_defaulted else self.args.default_constraints
        self.last: _ScoreDetail | None = None
        # the last Filter's per-constraint (constraint, node domain count, min, self match)
        self.last_filter: tuple[PodDemand, list[tuple[_Constraint, Int64Array, int, int]]] | None
        self.last_filter = None

    # ------------------------------------------------------------------ constraints

    def constraints(self, state: ClusterState, pod: PodDemand, action: str) -> list[_Constraint]:
        """The pod's constraints for ``action`` (DoNotSchedule / ScheduleAnyway), defaulted."""
        if pod.spread:
            return [
                self._ready(c, c.selector, pod)
                for c in pod.spread
                if c.when_unsatisfiable == action
            ]
        wanted = [c for c in self.defaults if c.when_unsatisfiable == action]
        if not wanted:
            return []
        selector = state.objects.default_selector(pod.namespace, pod.labels, pod.controller)
        if selector.empty:
            return []
        return [self._ready(c, selector, pod) for c in wanted]

    def _ready(self, c: SpreadConstraint, selector: LabelSelector, pod: PodDemand) -> _Constraint:
        if self.match_label_keys and c.match_label_keys and pod.spread:
            extra = {k: pod.labels[k] for k in c.match_label_keys if k in pod.labels}
            selector = selector.with_labels(extra)
        affinity, taints = HONOR, IGNORE
        if self.node_inclusion:
            affinity = c.node_affinity_policy or HONOR
            taints = c.node_taints_policy or IGNORE
        min_domains = c.min_domains if self.min_domains else 1
        return _Constraint(c.max_skew, c.topology_key, selector, min_domains,
                           affinity == HONOR, taints == HONOR)  # fmt: skip

    def _counts(self, state: ClusterState, pod: PodDemand, c: _Constraint) -> Int64Array:
        if c.selector.empty or c.selector.nothing:
            return np.zeros(state.node_count, dtype=np.int64)
        if state.pod_index is None:
            raise InputError(
                f"{NAME}: the placed pods' labels are not tracked in this run "
                "(ClusterState.attach_pod_index); remove PodTopologySpread from the profile"
            )
        return state.pod_index.match_counts(c.selector, pod.namespace)

    def _included(self, state: ClusterState, pod: PodDemand, c: _Constraint) -> BoolArray:
        """Nodes whose pods count for ``c`` (inclusion policies; legacy: node affinity)."""
        count = state.node_count
        if not self.node_inclusion:
            return affinity_mask(state, pod)
        mask = affinity_mask(state, pod) if c.affinity_honor else np.ones(count, dtype=bool)
        if c.taints_honor:
            mask = mask & taint_mask(state, pod)[0]
        return mask

    # ------------------------------------------------------------------ filter

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """DoNotSchedule constraints: missing key → unresolvable, skew > maxSkew → refused."""
        count = state.node_count
        constraints = self.constraints(state, pod, DO_NOT_SCHEDULE)
        feasible = np.ones(count, dtype=bool)
        self.last_filter = None
        if not constraints:
            return FilterResult(feasible, lambda node: [])
        detail: list[tuple[_Constraint, Int64Array, int, int]] = []
        ids = [domains(state, c.key).ids for c in constraints]
        has_all = np.logical_and.reduce([i >= 0 for i in ids])
        unresolvable = np.zeros(count, dtype=bool)
        # only the nodes that exist are domains (``state.present``: upstream counts its
        # snapshot's nodes, so a replay's node that has not joined yet or has left is none; the
        # score needs no such mask: it sums pods, and an absent node holds none)
        if state.present is not None:
            has_all = has_all & state.present
        for c, node_ids in zip(constraints, ids, strict=True):
            included = has_all & self._included(state, pod, c)
            counts = self._counts(state, pod, c)
            missing = node_ids < 0
            width = len(domains(state, c.key).values)
            slots = np.where(missing, width, node_ids)  # slot ``width``: no label, stays 0
            present = np.zeros(width + 1, dtype=bool)
            present[slots[included]] = True  # included nodes all carry the key
            per_domain = _domain_sums(slots[included], counts[included], width + 1)
            existing = int(present.sum())
            minimum = int(per_domain[present].min()) if existing >= c.min_domains else 0
            self_match = 1 if c.selector.matches(pod.labels) else 0
            node_count = per_domain[slots]
            skewed = ~missing & (node_count + self_match - minimum > c.max_skew)
            detail.append((c, np.where(missing, -1, node_count), minimum, self_match))
            unresolvable |= feasible & missing
            feasible &= ~missing & ~skewed
        refused_unresolvable = unresolvable
        self.last_filter = (pod, detail)

        def reasons(node: int) -> list[str]:
            if feasible[node]:
                return []
            return [REASON_LABEL if refused_unresolvable[node] else REASON_SKEW]

        return FilterResult(feasible, reasons, unresolvable=refused_unresolvable)

    # ------------------------------------------------------------------ score

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array | None:
        """Scores with every node a candidate (``score_feasible`` is what profiles call)."""
        return self.score_feasible(state, pod, now, np.ones(state.node_count, dtype=bool))

    def score_feasible(
        self, state: ClusterState, pod: PodDemand, now: float, feasible: BoolArray
    ) -> Int64Array | None:
        """PreScore + Score + NormalizeScore over the nodes that passed Filter (others 0)."""
        self.last = None
        constraints = self.constraints(state, pod, SCHEDULE_ANYWAY)
        count = state.node_count
        if not constraints or count == 0 or not feasible.any():
            return None  # PreScore Skip
        require_all = bool(pod.spread) or not self.system_defaulted
        all_ids = [domains(state, c.key) for c in constraints]
        has_all = np.logical_and.reduce([d.ids >= 0 for d in all_ids])
        ignored = feasible & ~has_all if require_all else np.zeros(count, dtype=bool)
        scored = feasible & ~ignored
        base = has_all if require_all else np.ones(count, dtype=bool)
        total: FloatArray = np.zeros(count, dtype=np.float64)
        weights: list[float] = []
        sizes: list[int] = []
        node_counts: list[Int64Array] = []
        values: list[list[str]] = []
        for c, dom in zip(constraints, all_ids, strict=True):
            counts = self._counts(state, pod, c)
            if c.key == HOSTNAME:
                size = int(scored.sum())
                cnt = counts
                values.append([])
            else:
                # a missing label is the domain "" (only reachable without requireAllTopologies)
                ids = dom.ids
                blank = dom.values.index("") if "" in dom.values else len(dom.values)
                ids = np.where(ids < 0, blank, ids)
                width = len(dom.values) + 1
                registered = np.zeros(width, dtype=bool)
                registered[ids[scored]] = True
                size = int(registered.sum())
                included = base & self._included(state, pod, c) & registered[ids]
                per_domain = _domain_sums(ids[included], counts[included], width)
                cnt = per_domain[ids]
                values.append([*dom.values, ""])
            weight = math.log(size + 2)
            has_key = dom.ids >= 0
            contribution = cnt.astype(np.float64) * weight + float(c.max_skew - 1)
            total = np.where(has_key, total + contribution, total)
            weights.append(weight)
            sizes.append(size)
            node_counts.append(np.where(has_key, cnt, 0))
        raw = go_round_array(total).astype(np.int64)
        raw = np.where(scored, raw, 0)
        result = _normalize(raw, scored)
        self.last = _ScoreDetail(
            pod, constraints, weights, sizes, node_counts, raw, ignored, values
        )
        return result

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Per constraint: the node's domain count, the weight and its contribution."""
        rows = self._explain_filter(pod, node)
        detail = self.last
        if detail is None or detail.pod is not pod:
            return rows
        if detail.ignored[node]:
            return [*rows, ExplainRow(NAME, "(all keys)", None, None, None, 0,
                                      "node lacks a topologyKey: ignored, scores 0")]  # fmt: skip
        for i, c in enumerate(detail.constraints):
            cnt = int(detail.node_counts[i][node])
            labels = state.node_labels[node] if state.node_labels else {}
            domain = labels.get(c.key)
            if domain is None:
                note = f"node has no {c.key} label: no contribution"
            else:
                note = (
                    f"domain {c.key}={domain}: {cnt} matching pod(s) × ln({detail.sizes[i]}+2)="
                    f"{detail.weights[i]:.4f} + maxSkew−1={c.max_skew - 1} → "
                    f"{cnt * detail.weights[i] + c.max_skew - 1:.4f}; selector {c.selector.text()}"
                )
            rows.append(ExplainRow(NAME, c.key, cnt, None, None, None, note))
        rows.append(ExplainRow(NAME, "(raw, rounded)", None, None, None, int(detail.raw[node]),
                               "Σ rounded half away from zero; normalised 100·(max+min−s)/max"))  # fmt: skip
        return rows

    def _explain_filter(self, pod: PodDemand, node: int) -> list[ExplainRow]:
        if self.last_filter is None or self.last_filter[0] is not pod:
            return []
        rows = []
        for c, counts, minimum, self_match in self.last_filter[1]:
            cnt = int(counts[node])
            if cnt < 0:
                note = f"DoNotSchedule: node has no {c.key} label (unresolvable)"
            else:
                skew = cnt + self_match - minimum
                verdict = "fits" if skew <= c.max_skew else "refused"
                note = (
                    f"DoNotSchedule: skew = {cnt} in domain + {self_match} (pod matches) − "
                    f"{minimum} (global min) = {skew} vs maxSkew {c.max_skew}: {verdict}"
                )
            rows.append(ExplainRow(NAME, c.key, max(cnt, 0), None, None, None, note))
        return rows


def _domain_sums(slots: Int64Array, counts: Int64Array, width: int) -> Int64Array:
    """Σ counts per slot (bincount in float64 is exact: counts stay far below 2**53)."""
    sums: Int64Array = np.bincount(slots, weights=counts, minlength=width).astype(np.int64)
    return sums


def _normalize(raw: Int64Array, scored: BoolArray) -> Int64Array:
    """NormalizeScore over the scored (candidate, not ignored) nodes; Go int64 division."""
    if not scored.any():
        return np.zeros_like(raw)
    values = raw[scored]
    high = max(int(values.max()), 0)
    low = int(values.min())
    if high == 0:
        return np.where(scored, MAX_NODE_SCORE, 0).astype(np.int64)
    numerator = MAX_NODE_SCORE * (high + low - raw)  # ≥ 0: raw ≥ low and high ≥ raw
    result: Int64Array = np.where(scored, numerator // high, 0).astype(np.int64)
    return result

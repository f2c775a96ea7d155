"""A straightforward per-node, per-resource Python loop of the kube-default plugins.

Written the way the Go code reads (one node at a time, plain ints and floats), it serves two
purposes: the benchmark baseline (``bench/score.py``) and an independent cross-check of the
vectorised plugins in the property tests. Covers TaintToleration and NodeAffinity (filters, and
with ``taint_affinity`` their scores: PreferNoSchedule count, preferred terms' weights, normalised
over the feasible nodes), NodeResourcesFit (filter; LeastAllocated /
MostAllocated / RequestedToCapacityRatio scoring, current scale) and BalancedAllocation (1.23+
std and 1.36+ delta). Above 100 nodes kube-scheduler scores only the feasible nodes it finds
walking its node list from a rotating start index (percentageOfNodesToScore): ``walk_found`` is
that walk, node by node, and ``kube_default_loop(find=...)`` scores and normalises over the nodes
found only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from analyzer.scheduling.arith import round_half_away_div
from analyzer.scheduling.plugins.noderesources.fit import broken_linear, scaled_utilization
from analyzer.scheduling.plugins.noderesources.resource_allocation import ResourceSpec
from analyzer.scheduling.state import ClusterState, PodDemand, is_scalar_resource


def _inputs(
    state: ClusterState, pod: PodDemand, node: int, name: str, use_requested: bool
) -> tuple[int, int, int] | None:
    """(allocatable, used, pod) of one resource on one node; None = skipped resource."""
    index = state.index_of(name)
    if name in ("cpu", "memory") and not use_requested:
        slot = 0 if name == "cpu" else 1
        used, pod_value = int(state.nonzero_requested[node, slot]), int(pod.nonzero[slot])
    else:
        used = int(state.requested[node, index]) if index is not None else 0
        pod_value = pod.request(name)
    if is_scalar_resource(name) and pod_value == 0:
        return None
    alloc = int(state.allocatable[node, index]) if index is not None else 0
    if alloc == 0:
        return None
    return alloc, used, pod_value


def fit_score(
    state: ClusterState, pod: PodDemand, node: int, specs: Sequence[ResourceSpec], most: bool
) -> int:
    """LeastAllocated (or MostAllocated) score of one node."""
    total = weights = 0
    for spec in specs:
        values = _inputs(state, pod, node, spec.name, use_requested=False)
        if values is None:
            continue
        alloc, used, pod_value = values
        requested = used + pod_value
        if most:
            score = min(requested, alloc) * 100 // alloc
        else:
            score = 0 if requested > alloc else (alloc - requested) * 100 // alloc
        total += score * spec.weight
        weights += spec.weight
    return total // weights if weights else 0


def rtcr_score(
    state: ClusterState,
    pod: PodDemand,
    node: int,
    specs: Sequence[ResourceSpec],
    shape: Sequence[tuple[int, int]],
) -> int:
    """RequestedToCapacityRatio of one node (1.22+; ``shape`` already on the 0–100 scale)."""
    total = weights = 0
    for spec in specs:
        values = _inputs(state, pod, node, spec.name, use_requested=False)
        if values is None:
            continue
        alloc, used, pod_value = values
        score = broken_linear(shape, scaled_utilization(used + pod_value, alloc))
        if score > 0:  # resources scoring 0 leave both sums
            total += score * spec.weight
            weights += spec.weight
    return round_half_away_div(total, weights) if weights else 0


def _balance(fractions: list[float]) -> int:
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * 100)


def balanced_score(
    state: ClusterState, pod: PodDemand, node: int, specs: Sequence[ResourceSpec], delta: bool
) -> int:
    """BalancedAllocation of one node (std form, or the 1.36+ delta form)."""
    with_pod: list[float] = []
    without: list[float] = []
    for spec in specs:
        values = _inputs(state, pod, node, spec.name, use_requested=True)
        if values is None:
            continue
        alloc, used, pod_value = values
        with_pod.append(min((used + pod_value) / alloc, 1.0))
        without.append(min(used / alloc, 1.0))
    score = _balance(with_pod)
    return 50 + (50 + score - _balance(without)) // 2 if delta else score


def allowed_by_constraints(state: ClusterState, pod: PodDemand, node: int) -> bool:
    """TaintToleration and NodeAffinity filters for one node, checked directly on its taints/labels."""
    taints = state.node_taints[node] if state.node_taints else ()
    if pod.constraints.tolerates_all(taints) is not None:
        return False
    labels = state.node_labels[node] if state.node_labels else {}
    return pod.constraints.matches(labels)


def fits(state: ClusterState, pod: PodDemand, node: int) -> bool:
    """TaintToleration, NodeAffinity and NodeResourcesFit filters for one node."""
    if not allowed_by_constraints(state, pod, node):
        return False
    if int(state.pod_count[node]) + 1 > int(state.allowed_pods[node]):
        return False
    for j in range(len(state.resources)):
        request = int(pod.requests[j])
        free = int(state.allocatable[node, j]) - int(state.requested[node, j])
        if request > 0 and request > free:
            return False
    return True


def prefer_taints(state: ClusterState, pod: PodDemand, node: int) -> int:
    """TaintToleration raw score: PreferNoSchedule taints no (empty/PreferNoSchedule) toleration
    of the pod tolerates."""
    taints = state.node_taints[node] if state.node_taints else ()
    kept = [t for t in pod.constraints.tolerations if t.effect in ("", "PreferNoSchedule")]
    count = 0
    for taint in taints:
        if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in kept):
            count += 1
    return count


def preferred_weight(state: ClusterState, pod: PodDemand, node: int) -> int:
    """NodeAffinity raw score: Σ weights of the pod's preferred terms matching the node."""
    labels = state.node_labels[node] if state.node_labels else {}
    name = state.node_names[node]
    return sum(t.weight for t in pod.constraints.preferred_terms if t.matches(labels, name))


def _normalised(raw: list[int], feasible: list[bool], reverse: bool) -> list[int]:
    """DefaultNormalizeScore(100): max over the feasible nodes; others clipped to 0..100."""
    peak = max((r for r, ok in zip(raw, feasible, strict=True) if ok), default=0)
    if peak == 0:
        return [100 if reverse else 0 for _ in raw]
    out = []
    for r in raw:
        score = min(100 * r // peak, 100)
        out.append(100 - score if reverse else score)
    return out


def walk_found(
    feasible: Sequence[bool], order: Sequence[int], start: int, wanted: int
) -> tuple[list[bool], int]:
    """findNodesThatPassFilters run serially: walk the node list ``order`` (state rows) from
    position ``start``, wrapping round, until ``wanted`` feasible nodes are found. Returns the
    mask (over state rows) of the nodes found and how many nodes were processed (every node in
    the list when fewer than ``wanted`` are feasible); the scheduler's next start index is
    ``(start + processed) % len(order)``."""
    found = [False] * len(feasible)
    count = processed = 0
    for i in range(len(order)):
        row = order[(start + i) % len(order)]
        processed += 1
        if feasible[row]:
            found[row] = True
            count += 1
            if count == wanted:
                break
    return found, processed


def kube_default_loop(
    state: ClusterState,
    pod: PodDemand,
    most: bool = False,
    delta: bool = True,
    shape: Sequence[tuple[int, int]] | None = None,
    taint_affinity: bool = False,
    find: Callable[[list[bool]], list[bool]] | None = None,
) -> tuple[list[bool], list[int]]:
    """Feasibility and total (Fit + Balanced, weights 1/1, cpu+memory) for every node, one by one.

    ``most`` selects MostAllocated, ``shape`` (0–100 scale) RequestedToCapacityRatio;
    ``taint_affinity`` adds 3 × TaintToleration + 2 × NodeAffinity (the kube-default preset).
    ``find``: given the filters' mask, the nodes the scheduler finds (percentageOfNodesToScore,
    e.g. ``walk_found``); only those are returned feasible, scored and normalised over (a node
    not found gets total 0), as upstream scores only the nodes ``findNodesThatFitPod`` returns.
    """
    specs = (ResourceSpec("cpu"), ResourceSpec("memory"))
    feasible = [fits(state, pod, node) for node in range(state.node_count)]
    if find is not None:
        feasible = find(feasible)
    totals = []
    for node in range(state.node_count):
        if find is not None and not feasible[node]:
            totals.append(0)  # not found: never scored
            continue
        skip_balanced = pod.request("cpu") == 0 and pod.request("memory") == 0
        balanced = 0 if skip_balanced else balanced_score(state, pod, node, specs, delta)
        if shape is not None:
            fit = rtcr_score(state, pod, node, specs, shape)
        else:
            fit = fit_score(state, pod, node, specs, most)
        totals.append(fit + balanced)
    if taint_affinity:
        count = state.node_count
        taint = _normalised([prefer_taints(state, pod, i) for i in range(count)], feasible, True)
        if pod.constraints.preferred_terms:  # else PreScore Skip: nothing added
            raw = [preferred_weight(state, pod, i) for i in range(count)]
            affinity = _normalised(raw, feasible, False)
        else:
            affinity = [0] * count
        totals = [t + 3 * a + 2 * b for t, a, b in zip(totals, taint, affinity, strict=True)]
    return feasible, totals

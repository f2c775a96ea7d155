"""The replay's per-node scorer for a handful of changed nodes, in plain Python integers.

Between two placements of the same pod shape usually one to a few nodes changed; numpy's fixed
cost per call (~1 µs × dozens of calls) would dominate, so those rows are scored here with the
same formulas, the same operation order and the same float64 arithmetic as the scheduling core's
array code (research/kube-scoring.md §4–§8). ``tests/test_replay_scoring.py`` checks both paths
against ``Profile.evaluate`` on random states.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.scheduling.plugins.noderesources.fit import broken_linear
from analyzer.scheduling.state import ClusterState

LEAST, MOST, RTCR = 0, 1, 2
_STRATEGY = {"LeastAllocated": LEAST, "MostAllocated": MOST, "RequestedToCapacityRatio": RTCR}

# One kept resource of a plugin's loop: (allocatable axis index, nonzero slot or -1,
# requested axis index, the pod's value, weight)
Column = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class FitRows:
    """NodeResourcesFit scoring compiled for one shape."""

    weight: int
    strategy: int
    top: int
    zero_over_capacity: bool  # MostAllocated before v1.22: over capacity scores 0
    shape: tuple[tuple[int, int], ...]
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class BalancedRows:
    """BalancedAllocation compiled for one shape."""

    weight: int
    top: int
    delta: bool  # 1.36+: 50 + (50 + with − without) / 2
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class RowPlan:
    """Everything the scalar scorer needs for one shape."""

    never: bool
    checked: tuple[tuple[int, int], ...]  # (axis index, the pod's request) the filter compares
    fit: tuple[FitRows, ...]
    balanced: tuple[BalancedRows, ...]


def fit_strategy(name: str) -> int:
    """Strategy code of a NodeResourcesFit scoring type."""
    return _STRATEGY[name]


def _fit(plan: FitRows, alloc: list[int], requested: list[int], nonzero: list[int]) -> int:
    numerator = 0
    weights = 0
    strategy, top = plan.strategy, plan.top
    for a, slot, r, pod, weight in plan.columns:
        capacity = alloc[a]
        if capacity <= 0:  # allocatable 0: neither score nor weight
            continue
        used = (nonzero[slot] if slot >= 0 else requested[r]) + pod
        if strategy == LEAST:
            raw = 0 if used > capacity else (capacity - used) * top // capacity
        elif strategy == MOST:
            if plan.zero_over_capacity:
                raw = 0 if used > capacity else used * top // capacity
            else:
                raw = (used if used < capacity else capacity) * top // capacity
        else:
            util = 100 if used >= capacity else used * 100 // capacity
            raw = broken_linear(plan.shape, 0 if used <= 0 else util)
            if raw <= 0:  # RTCR drops resources scoring 0 from both sums
                continue
        numerator += raw * weight
        weights += weight
    if weights == 0:
        return 0
    if strategy == RTCR:  # Go math.Round(num / w), exact in integers
        return (2 * numerator + weights) // (2 * weights)
    return numerator // weights


def _balance(fractions: Sequence[float], top: int) -> int:
    """``int((1 − std) × top)`` in the core's operation order."""
    count = len(fractions)
    if count == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif count > 2:
        total = 0.0
        for f in fractions:
            total = total + f
        mean = total / count
        squares = 0.0
        for f in fractions:
            deviation = f - mean
            squares = squares + deviation * deviation
        std = math.sqrt(squares / count)
    else:
        std = 0.0
    return int((1 - std) * top)


def _balanced(
    plan: BalancedRows, alloc: list[int], requested: list[int], nonzero: list[int]
) -> int:
    with_pod: list[float] = []
    without: list[float] = []
    for a, slot, r, pod, _weight in plan.columns:
        capacity = alloc[a]
        if capacity <= 0:
            continue
        used = nonzero[slot] if slot >= 0 else requested[r]
        fraction = float(used + pod) / float(capacity)
        with_pod.append(fraction if fraction < 1.0 else 1.0)
        fraction = float(used) / float(capacity)
        without.append(fraction if fraction < 1.0 else 1.0)
    if len(with_pod) == 2:  # the common case, inlined: std = |(f0 - f1) / 2|
        score = int((1 - abs((with_pod[0] - with_pod[1]) / 2)) * plan.top)
        if not plan.delta:
            return score
        before = int((1 - abs((without[0] - without[1]) / 2)) * plan.top)
        return 50 + (50 + score - before) // 2
    score = _balance(with_pod, plan.top)
    if not plan.delta:
        return score
    return 50 + (50 + score - _balance(without, plan.top)) // 2


def score_rows(
    state: ClusterState, plan: RowPlan, rows: list[int], active: np.ndarray[Any, Any]
) -> list[tuple[bool, int]]:
    """(feasible, total) of each node in ``rows``."""
    allocs = state.allocatable[rows].tolist()
    requests = state.requested[rows].tolist()
    nonzeros = state.nonzero_requested[rows].tolist()
    room = (state.allowed_pods[rows] - state.pod_count[rows]).tolist()
    live = active[rows].tolist()
    out: list[tuple[bool, int]] = []
    for k in range(len(rows)):
        alloc, requested, nonzero = allocs[k], requests[k], nonzeros[k]
        feasible = live[k] and not plan.never and room[k] >= 1
        if feasible:
            for j, need in plan.checked:
                if need > alloc[j] - requested[j]:
                    feasible = False
                    break
        total = 0
        for fit in plan.fit:
            total += fit.weight * _fit(fit, alloc, requested, nonzero)
        for bal in plan.balanced:
            total += bal.weight * _balanced(bal, alloc, requested, nonzero)
        out.append((feasible, total))
    return out


def pair_form(plan: RowPlan) -> tuple[int, ...] | None:
    """The constants of the common profile shape — one NodeResourcesFit on cpu and memory
    (non-zero requests) plus at most one BalancedAllocation on cpu and memory (real requests) —
    or None when ``plan`` has another shape (then ``score_rows`` is used)."""
    if len(plan.fit) != 1 or len(plan.balanced) > 1:
        return None
    fit = plan.fit[0]
    cols = fit.columns
    if len(cols) != 2 or fit.zero_over_capacity:
        return None
    if (cols[0][0], cols[0][1], cols[1][0], cols[1][1]) != (0, 0, 1, 1):
        return None
    values = [fit.weight, fit.strategy, fit.top, cols[0][3], cols[1][3], cols[0][4], cols[1][4]]
    if plan.balanced:
        bal = plan.balanced[0]
        bcols = bal.columns
        if len(bcols) != 2 or (bcols[0][:3], bcols[1][:3]) != ((0, -1, 0), (1, -1, 1)):
            return None
        values += [bal.weight, bal.top, int(bal.delta), bcols[0][3], bcols[1][3]]
    else:
        values += [0, 0, 0, 0, 0]
    return tuple(values)


def score_rows_pair(
    state: ClusterState,
    plan: RowPlan,
    form: tuple[int, ...],
    rows: list[int],
    active: np.ndarray[Any, Any],
    before_cache: dict[int, int] | None = None,
) -> list[int | None]:
    """``score_rows`` for the ``pair_form`` shape, inlined: the total per row, None = infeasible.

    Same integer and float64 operations, in the same order, as the general path; a row whose
    cpu or memory allocatable is 0 goes through the general path.
    """
    fit_w, strategy, top, pod_cpu, pod_mem, w_cpu, w_mem = form[:7]
    bal_w, bal_top, delta, req_cpu, req_mem = form[7:]
    w_sum = w_cpu + w_mem
    least, rtcr = strategy == LEAST, strategy == RTCR
    shape = plan.fit[0].shape
    if len(rows) <= 8:  # a few rows: per-row views are cheaper than fancy-index gathers
        allocs = [state.allocatable[i].tolist() for i in rows]
        requests = [state.requested[i].tolist() for i in rows]
        nonzeros = [state.nonzero_requested[i].tolist() for i in rows]
        room = [state.allowed_pods.item(i) - state.pod_count.item(i) for i in rows]
        live = [active.item(i) for i in rows]
    else:
        index = np.array(rows, dtype=np.intp)  # one conversion, five gathers
        allocs = state.allocatable[index].tolist()
        requests = state.requested[index].tolist()
        nonzeros = state.nonzero_requested[index].tolist()
        room = (state.allowed_pods[index] - state.pod_count[index]).tolist()
        live = active[index].tolist()
    checked, never = plan.checked, plan.never
    out: list[int | None] = []
    for k in range(len(rows)):
        alloc, requested = allocs[k], requests[k]
        feasible = live[k] and not never and room[k] >= 1
        if feasible:
            for j, need in checked:
                if need > alloc[j] - requested[j]:
                    feasible = False
                    break
        if not feasible:
            out.append(None)
            continue
        a0, a1 = alloc[0], alloc[1]
        if a0 <= 0 or a1 <= 0:
            ok, total = score_rows(state, plan, [rows[k]], active)[0]
            out.append(total if ok else None)
            continue
        u0 = nonzeros[k][0] + pod_cpu
        u1 = nonzeros[k][1] + pod_mem
        if least:
            s0 = 0 if u0 > a0 else (a0 - u0) * top // a0
            s1 = 0 if u1 > a1 else (a1 - u1) * top // a1
            total = fit_w * ((s0 * w_cpu + s1 * w_mem) // w_sum)
        elif rtcr:  # util 100 at/over capacity; resources scoring 0 leave both sums
            s0 = broken_linear(shape, 0 if u0 <= 0 else 100 if u0 >= a0 else u0 * 100 // a0)
            s1 = broken_linear(shape, 0 if u1 <= 0 else 100 if u1 >= a1 else u1 * 100 // a1)
            numerator = (s0 * w_cpu if s0 > 0 else 0) + (s1 * w_mem if s1 > 0 else 0)
            weights = (w_cpu if s0 > 0 else 0) + (w_mem if s1 > 0 else 0)
            total = fit_w * ((2 * numerator + weights) // (2 * weights) if weights else 0)
        else:
            s0 = (u0 if u0 < a0 else a0) * top // a0
            s1 = (u1 if u1 < a1 else a1) * top // a1
            total = fit_w * ((s0 * w_cpu + s1 * w_mem) // w_sum)
        if bal_w:
            r0, r1 = requested[0], requested[1]
            f0 = float(r0 + req_cpu) / float(a0)
            f1 = float(r1 + req_mem) / float(a1)
            score = int(
                (1 - abs(((f0 if f0 < 1.0 else 1.0) - (f1 if f1 < 1.0 else 1.0)) / 2)) * bal_top
            )
            if delta:  # the node's balance without the pod: the same for every shape
                node = rows[k]
                before = None if before_cache is None else before_cache.get(node)
                if before is None:
                    g0 = float(r0) / float(a0)
                    g1 = float(r1) / float(a1)
                    before = int(
                        (1 - abs(((g0 if g0 < 1.0 else 1.0) - (g1 if g1 < 1.0 else 1.0)) / 2))
                        * bal_top
                    )
                    if before_cache is not None:
                        before_cache[node] = before
                score = 50 + (50 + score - before) // 2
            total += bal_w * score
        out.append(total)
    return out

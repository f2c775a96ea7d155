"""One numpy check of a removal answer placed by CA's scheduling hints alone (issue 25 item 5).

``RemovalSimulator.fits_as_hinted`` asks, pod by pod, whether each pod of an earlier removable
answer would go to its hinted node again now (``tryScheduleUsingHints``: the node a
destination, its filters passing, NodeResourcesFit's room with the answer's earlier pods on it
counted). For a caller whose static filter masks are kept for the run (the replay: nodes keep
their labels, taints and cordons) everything in that check but the nodes' free room and pod
counts is fixed by the answer itself: the targets, each pod's compared columns and requests, the
static masks, and how much of the answer's own earlier pods sits on the same target before each
pod. ``plan`` computes those once per answer, per distinct target; ``fits`` is then a few integer
comparisons per target on the state now, the same verdict as the pod-by-pod check (tests/test_autoscale_reuse.py compares the
two on random states).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.autoscaler.pods import CAPod


@dataclass
class HintedPlan:
    """What ``fits`` compares and ``RemovalSimulator.apply`` adds, fixed by the answer (module
    docstring), per distinct target node."""

    # per distinct target: (node, its pods of the answer less one, [(compared column, the most
    # any of its pods needs free there: its request plus the answer's earlier pods' requests)])
    checks: list[tuple[int, int, list[tuple[int, int]]]]
    where: np.ndarray[Any, Any]  # the distinct targets
    sums: np.ndarray[Any, Any]  # targets x resources: the requests the answer adds to each
    counts: np.ndarray[Any, Any]  # per target: the pods the answer adds to it
    groups: list[tuple[int, list[CAPod]]]  # per target: its pods of the answer, in order
    gone: frozenset[int]  # the object ids of the moved pods
    # the candidate's pods list as last applied, and that list without the moved pods
    left: tuple[list[CAPod], list[CAPod]] | None = None


def plan(simulator: Any, moved: Sequence[CAPod], targets: Sequence[int]) -> HintedPlan | None:
    """The fixed part of ``fits_as_hinted`` for ``moved`` on ``targets``, or None where the
    check cannot be made this way (a filter beyond the kept static masks, no NodeResourcesFit
    columns, a target a static filter refuses): the caller asks pod by pod.

    Each pod's check is ``free - held >= ask`` per compared column and ``pods + before <
    allowed`` (``held``, ``before``: the answer's earlier pods on its target); all of a target's
    pods pass exactly when the largest ``ask + held`` per column and the largest ``before`` (its
    pods less one) pass, so one check per target is kept."""
    width = simulator.state.requested.shape[1]
    held: dict[int, list[int]] = {}  # target -> the requests of the answer's pods so far
    needs: dict[int, dict[int, int]] = {}  # target -> column -> the most needed free
    groups: dict[int, list[CAPod]] = {}
    for pod, t in zip(moved, targets, strict=True):
        demand = simulator.demand_of[id(pod)]
        found = simulator._static_only(demand)
        if found is None or found[1] is None or not found[0].item(t):
            return None
        columns = simulator._fit_columns(found[1], demand)
        if columns is None:
            return None
        before = held.get(t)
        if before is None:
            before = held[t] = [0] * width
            needs[t], groups[t] = {}, []
        most = needs[t]
        for j, r in dict(columns).items():  # a column named twice: its last request, as fit's
            need = r + before[j]
            if need > most.get(j, need - 1):
                most[j] = need
        for j, r in enumerate(demand.requests.tolist()):
            before[j] += r
        groups[t].append(pod)
    order = list(held)
    return HintedPlan(
        checks=[(t, len(groups[t]) - 1, sorted(needs[t].items())) for t in order],
        where=np.array(order, dtype=np.int64),
        sums=np.array([held[t] for t in order], dtype=np.int64).reshape(len(order), width),
        counts=np.array([len(groups[t]) for t in order], dtype=np.int64),
        groups=[(t, groups[t]) for t in order],
        gone=frozenset(id(pod) for pod in moved),
    )


def fits(simulator: Any, plan: HintedPlan, allowed: np.ndarray[Any, Any]) -> bool:
    """``fits_as_hinted`` on the state now through ``plan``: every target a destination and
    schedulable, a pod slot for each pod after the answer's earlier pods on it, and each compared
    column's free room (less those pods' requests) at least the pod's request."""
    state, schedulable = simulator.state, simulator.schedulable
    count, most = state.pod_count, state.allowed_pods
    alloc, used = state.allocatable, state.requested
    for t, before, needs in plan.checks:
        if not (allowed.item(t) and schedulable.item(t)):
            return False
        if count.item(t) + before >= most.item(t):
            return False
        for j, need in needs:
            if alloc.item(t, j) - used.item(t, j) < need:
                return False
    return True

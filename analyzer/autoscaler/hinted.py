"""One numpy check of a removal answer placed by CA's scheduling hints alone (issue 25 item 5).

``RemovalSimulator.fits_as_hinted`` asks, pod by pod, whether each pod of an earlier removable
answer would go to its hinted node again now (``tryScheduleUsingHints``: the node a
destination, its filters passing, NodeResourcesFit's room with the answer's earlier pods on it
counted). For a caller whose static filter masks are kept for the run (the replay: nodes keep
their labels, taints and cordons) everything in that check but the nodes' free room and pod
counts is fixed by the answer itself: the targets, each pod's compared columns and requests, the
static masks, and how much of the answer's own earlier pods sits on the same target before each
pod. ``plan`` computes those once per answer; ``fits`` is then one comparison of arrays on the
state now, the same verdict as the pod-by-pod check (tests/test_autoscale_reuse.py compares the
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
    """What ``fits`` compares, fixed by the answer (module docstring)."""

    targets: np.ndarray[Any, Any]  # node index per pod
    asks: np.ndarray[Any, Any]  # pods x resources: the compared requests (0 where not compared)
    compared: np.ndarray[Any, Any]  # pods x resources: NodeResourcesFit compares this column
    held: np.ndarray[Any, Any]  # pods x resources: the answer's earlier pods on the same target
    before: np.ndarray[Any, Any]  # per pod: how many of the answer's earlier pods on its target
    requests: np.ndarray[Any, Any]  # pods x resources: each pod's requests (for the moves)


def plan(simulator: Any, moved: Sequence[CAPod], targets: Sequence[int]) -> HintedPlan | None:
    """The fixed part of ``fits_as_hinted`` for ``moved`` on ``targets``, or None where the
    check cannot be made this way (a filter beyond the kept static masks, no NodeResourcesFit
    columns, a target a static filter refuses): the caller asks pod by pod."""
    width = simulator.state.requested.shape[1]
    count = len(moved)
    asks = np.zeros((count, width), dtype=np.int64)
    compared = np.zeros((count, width), dtype=bool)
    requests = np.zeros((count, width), dtype=np.int64)
    for i, (pod, t) in enumerate(zip(moved, targets, strict=True)):
        demand = simulator.demand_of[id(pod)]
        found = simulator._static_only(demand)
        if found is None or found[1] is None or not found[0].item(t):
            return None
        columns = simulator._fit_columns(found[1], demand)
        if columns is None:
            return None
        for j, r in columns:
            asks[i, j] = r
            compared[i, j] = True
        requests[i] = demand.requests
    where = np.array(targets, dtype=np.int64)
    # earlier[i, k]: pod k comes before pod i in the answer and went to the same node
    earlier = np.tril(where[:, None] == where[None, :], k=-1)
    held = earlier.astype(np.int64) @ requests
    before = earlier.sum(axis=1)
    return HintedPlan(where, asks, compared, held, before, requests)


def fits(simulator: Any, plan: HintedPlan, allowed: np.ndarray[Any, Any]) -> bool:
    """``fits_as_hinted`` on the state now through ``plan``: every target a destination and
    schedulable, a pod slot for each pod after the answer's earlier pods on it, and each compared
    column's free room (less those pods' requests) at least the pod's request."""
    t = plan.targets
    if not (allowed[t].all() and simulator.schedulable[t].all()):
        return False
    state = simulator.state
    if not bool((state.pod_count[t] + plan.before < state.allowed_pods[t]).all()):
        return False
    free = state.allocatable[t] - state.requested[t] - plan.held
    return bool(((free >= plan.asks) | ~plan.compared).all())

"""One check of a removal answer placed by CA's scheduling hints alone (issue 25 item 5).

``RemovalSimulator.fits_as_hinted`` asks, pod by pod, whether each pod of an earlier removable
answer would go to its hinted node again now (``tryScheduleUsingHints``: the node a
destination, its filters passing, NodeResourcesFit's room with the answer's earlier pods on it
counted). For a caller whose static filter masks are kept for the run (the replay: nodes keep
their labels, taints and cordons) everything in that check but the nodes' free room and pod
counts is fixed by the answer itself: the targets, each pod's compared columns and requests, the
static masks, and how much of the answer's own earlier pods sits on the same target before each
pod. ``plan`` computes those once per answer, per distinct target; ``fits`` is then a few integer
comparisons per target on the state now, the same verdict as the pod-by-pod check
(tests/test_autoscale_reuse.py compares the two on random states). ``fits`` reads the state's
arrays through memoryviews (``Views``: Python ints and bools, as ``ndarray.item`` gives them,
without its per-call cost), kept by the caller (the replay: one per pass) and made again
when the arrays are not the same objects.
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

    # per distinct target: (node, its pods of the answer less one)
    slots: list[tuple[int, int]]
    # per distinct target and compared column: (the flat index ``node * width + column`` into
    # the nodes x resources arrays, the most any of its pods needs free there: its request plus
    # the answer's earlier pods' requests on that node)
    room: list[tuple[int, int]]
    width: int  # the resources axis the flat indices were made for
    # the flat indices of the (target, column) cells the answer adds requests to (non-zero
    # ones: distinct cells), and those requests
    cells: np.ndarray[Any, Any]
    adds: np.ndarray[Any, Any]
    where: np.ndarray[Any, Any]  # the distinct targets
    sums: np.ndarray[Any, Any]  # targets x resources: the requests the answer adds to each
    counts: np.ndarray[Any, Any]  # per target: the pods the answer adds to it
    groups: list[tuple[int, list[CAPod]]]  # per target: its pods of the answer, in order
    gone: frozenset[int]  # the object ids of the moved pods
    # the candidate's pods list as last applied, and that list without the moved pods
    left: tuple[list[CAPod], list[CAPod]] | None = None
    # ``slots`` and ``room`` against the node's fixed part (``fits``): per target (node, the
    # most pods it may hold before these: its allowed pods less the answer's others), per cell
    # (flat index, the most its requests may be: allocatable less the need); and the
    # allowed-pods and allocatable arrays they were made of (made again for others)
    caps: tuple[list[tuple[int, int]], list[tuple[int, int]]] | None = None
    caps_of: tuple[Any, Any] | None = None
    # ``groups`` by the targets' names (``RemovalSimulator.apply``), and the names it was made of
    by_name: dict[str, list[CAPod]] | None = None
    by_name_of: Any = None


def plan(simulator: Any, moved: Sequence[CAPod], targets: Sequence[int]) -> HintedPlan | None:
    """The fixed part of ``fits_as_hinted`` for ``moved`` on ``targets``, or None where the
    check cannot be made this way (a filter beyond the kept static masks, no NodeResourcesFit
    columns, a target a static filter refuses): the caller asks pod by pod.

    Each pod's check is ``free - held >= ask`` per compared column and ``pods + before <
    allowed`` (``held``, ``before``: the answer's earlier pods on its target); all of a target's
    pods pass exactly when the largest ``ask + held`` per column and the largest ``before`` (its
    pods less one) pass, so one check per target is kept."""
    width = simulator.state.requested.shape[1]
    demand_of = simulator.demand_of
    # ``_record`` (kept static mask, compared columns, non-zero requests) is ``_static_only``
    # and ``_fit_columns`` in one kept answer, where those can be kept (else none: ask pod by pod)
    kept = simulator.static is not None and simulator.first_fit
    held: dict[int, dict[int, int]] = {}  # target -> column -> the answer's pods' requests so far
    needs: dict[int, dict[int, int]] = {}  # target -> column -> the most needed free
    groups: dict[int, list[CAPod]] = {}
    for pod, t in zip(moved, targets, strict=True):
        if not kept:
            return None
        record = simulator._record(demand_of[id(pod)])
        if record is None or not record[0][t]:
            return None
        columns, adds = record[1], record[2]
        before = held.get(t)
        if before is None:  # its first pod: nothing of the answer's before it there
            held[t] = dict(adds)
            needs[t] = dict(columns)  # a column named twice: its last request, as fit's
            groups[t] = [pod]
            continue
        most = needs[t]
        for j, r in dict(columns).items():
            need = r + before.get(j, 0)
            if need > most.get(j, need - 1):
                most[j] = need
        for j, r in adds:
            before[j] = before.get(j, 0) + r
        groups[t].append(pod)
    order = list(held)
    cell_adds = [(t * width + j, r) for t in order for j, r in sorted(held[t].items()) if r]
    sums = np.zeros((len(order), width), dtype=np.int64)
    for row, t in enumerate(order):
        for j, r in held[t].items():
            sums[row, j] = r
    return HintedPlan(
        slots=[(t, len(groups[t]) - 1) for t in order],
        room=[(t * width + j, need) for t in order for j, need in sorted(needs[t].items())],
        width=width,
        cells=np.array([c for c, _ in cell_adds], dtype=np.int64),
        adds=np.array([r for _, r in cell_adds], dtype=np.int64),
        where=np.array(order, dtype=np.int64),
        sums=sums,
        counts=np.array([len(groups[t]) for t in order], dtype=np.int64),
        groups=[(t, groups[t]) for t in order],
        gone=frozenset(id(pod) for pod in moved),
    )


class Views:
    """Memoryviews of the arrays ``fits`` reads (the simulator's ``schedulable``, the state's
    pod counts, allowed pods, allocatable and requested; the last two flat, row after row), and
    the arrays they were made of: ``of`` makes them again when one of those is no longer the
    simulator's (a view reads its array's memory, changed in place, so it reads it as it is)."""

    def __init__(self) -> None:
        self.arrays: tuple[Any, ...] = ()
        self.views: tuple[memoryview, ...] = ()
        self.width = -1

    def of(self, simulator: Any) -> tuple[memoryview, ...] | None:
        """The views of ``simulator``'s arrays now, or None where one cannot be read flat (a 2-D
        array not in row order): ``fits`` then reads the arrays by ``item``."""
        state, kept = simulator.state, self.arrays
        if (
            kept
            and kept[1] is state.pod_count
            and kept[2] is state.allowed_pods
            and kept[3] is state.allocatable
            and kept[4] is state.requested
        ):
            schedulable = simulator.schedulable
            if kept[0] is not schedulable:  # another simulator on the same state (the replay
                # makes one per pass): its mask's view alone made again
                self.arrays = (schedulable, *kept[1:])
                self.views = (schedulable.data, *self.views[1:])
            return self.views
        arrays = (
            simulator.schedulable,
            state.pod_count,
            state.allowed_pods,
            state.allocatable,
            state.requested,
        )
        alloc, used = arrays[3], arrays[4]
        if not (alloc.flags.c_contiguous and used.flags.c_contiguous and alloc.shape == used.shape):
            return None
        self.arrays, self.width = arrays, used.shape[1]
        self.views = (
            arrays[0].data,
            arrays[1].data,
            arrays[2].data,
            alloc.reshape(-1).data,  # row order: a view of the same memory, not a copy
            used.reshape(-1).data,
        )
        return self.views


def fits(
    simulator: Any,
    plan: HintedPlan,
    allowed: np.ndarray[Any, Any],
    views: Views | None = None,
) -> bool:
    """``fits_as_hinted`` on the state now through ``plan``: every target a destination and
    schedulable, a pod slot for each pod after the answer's earlier pods on it, and each compared
    column's free room (less those pods' requests) at least the pod's request. ``views``: the
    caller's kept ``Views`` (else made here)."""
    kept = views if views is not None else Views()
    found = kept.of(simulator)
    if found is None or kept.width != plan.width:
        return _fits_by_item(simulator, plan, allowed)
    schedulable, count, most, alloc, used = found
    # a node's allowed pods and allocatable are fixed while the arrays are the same objects
    # (nothing writes them during a replay), so each comparison's fixed side is made once:
    # ``count + before < most`` is ``count < most - before``, ``alloc - used >= need`` is
    # ``used <= alloc - need``
    fixed = kept.arrays[2], kept.arrays[3]
    caps, made = plan.caps, plan.caps_of
    if caps is None or made is None or made[0] is not fixed[0] or made[1] is not fixed[1]:
        caps = plan.caps = (
            [(t, most[t] - before) for t, before in plan.slots],
            [(f, alloc[f] - need) for f, need in plan.room],
        )
        plan.caps_of = fixed
    ok = allowed.data
    for t, cap in caps[0]:
        if not (ok[t] and schedulable[t]) or count[t] >= cap:
            return False
    for f, cap in caps[1]:  # a loop, not ``all`` over a generator: this is the hot path
        if used[f] > cap:
            break
    else:
        return True
    return False


def _fits_by_item(simulator: Any, plan: HintedPlan, allowed: np.ndarray[Any, Any]) -> bool:
    """``fits`` through ``ndarray.item`` (arrays a flat view cannot read)."""
    state, schedulable = simulator.state, simulator.schedulable
    count, most = state.pod_count, state.allowed_pods
    alloc, used = state.allocatable, state.requested
    width = plan.width
    for t, before in plan.slots:
        if not (allowed.item(t) and schedulable.item(t)):
            return False
        if count.item(t) + before >= most.item(t):
            return False
    for f, need in plan.room:
        t, j = divmod(f, width)
        if alloc.item(t, j) - used.item(t, j) < need:
            return False
    return True

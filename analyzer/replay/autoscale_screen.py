"""cluster-autoscaler's utilisation screen of every slot in the replay's loop
(``analyzer.replay.autoscale_scaledown``): the higher of each node's cpu and memory request
ratios, kept across passes and computed again only for the slots touched since (``ca.stale``:
only a bind or unbind changes a node's requests). A scale-down pass looks at the nodes near or
under the threshold by it; ``SimulationMemo.unchanged`` reads it for the nodes it verifies
(``under``).

With ``ignore-daemonsets-utilization`` or ``ignore-mirror-pods-utilization`` CA takes those pods'
requests off both sides (``CalculateUtilizationOfResource``: ``(requested - off) / (allocatable -
off)``), which is below the plain ratio: the screen is then that expression (``ca.taken_off``
set), so that no node under the threshold that way is left out as over it. Where the pods taken
off hold the whole allocatable of a resource or more, CA divides by zero or less (+Inf, NaN or a
negative ratio, and a NaN memory ratio is the node's utilisation, under any threshold): the
screen counts such a node under any threshold (-inf) and the exact check decides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any


def utilization(ca: ClusterAutoscaler, nodes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """CA's utilisation screen of ``nodes``: the higher of the cpu and memory request ratios."""
    used = ca.state.requested[nodes][:, [ca.cpu, ca.mem]].astype(np.float64)
    # a resource the node does not offer counts 0 (used / 0 is not a ratio); the allocatable
    # columns as floats are kept (the replay never changes a node's allocatable)
    out = np.zeros(used.shape, dtype=np.float64)
    offered = ca.offered[nodes]
    if ca.taken_off is None:
        np.divide(used, ca.capacity[nodes], out=out, where=offered)
        return out.max(axis=1)  # type: ignore[no-any-return]
    # the pods CA leaves out taken off both sides (module docstring); integers below 2**53 as
    # floats, so each quotient is ``_part``'s bit for bit
    off = np.array([taken_off(ca, s) for s in np.asarray(nodes).tolist()], dtype=np.float64)
    left = ca.capacity[nodes] - off.reshape(-1, 2)
    np.divide(used - off.reshape(-1, 2), left, out=out, where=offered & (left > 0))
    held = (offered & (left <= 0)).any(axis=1)
    return np.where(held, -np.inf, out.max(axis=1))


def ratios(ca: ClusterAutoscaler, only: Iterable[int] | None = None) -> np.ndarray[Any, Any]:
    """``utilization`` of every slot, kept across passes: only the slots touched since they were
    last computed (``ca.stale``) are computed again (the same float expression per node).
    ``only``: the slots the caller reads, the only ones brought up to date then (the others
    stay in ``stale`` for a later call: a node touched again before it is computed once)."""
    stale = ca.stale
    if only is not None:
        todo = [s for s in only if s in stale]
        if todo:
            stale.difference_update(todo)
            _refresh(ca, todo)
        return ca.ratio  # type: ignore[no-any-return]
    if len(stale) > 16:
        nodes = np.fromiter(stale, dtype=np.int64, count=len(stale))
        ca.ratio[nodes] = utilization(ca, nodes)
    elif stale:  # a few: as Python floats
        _refresh(ca, stale)
    stale.clear()
    return ca.ratio  # type: ignore[no-any-return]


def under(ca: ClusterAutoscaler, nodes: list[int], limit: float) -> bool:
    """Whether the screen of one of ``nodes`` is under ``limit``, as ``ratios(ca, nodes)``
    read in their order would answer: each read brought up to date if touched since it was
    last computed (``_refresh``'s expression, written out: ``SimulationMemo.unchanged`` asks
    this of ~1 node at ~16k calls a week at 500 nodes); those after the first under it, and
    the other slots, stay in ``stale`` for a later read. ``ReplayView.screen_under`` as a
    method."""
    stale, ratio = ca.stale, ca.ratio
    for s in nodes:
        if s in stale:
            stale.discard(s)
            if ca.taken_off is not None:
                _refresh(ca, (s,))
                value = ratio.item(s)
                if value < limit:
                    return True
                continue
            a, b = ca.capacity_rows[s]
            used = ca.state.requested
            x = used.item(s, ca.cpu) / a if a > 0 else 0.0
            y = used.item(s, ca.mem) / b if b > 0 else 0.0
            ratio[s] = value = x if x >= y else y
        else:
            value = ratio.item(s)
        if value < limit:
            return True
    return False


def _refresh(ca: ClusterAutoscaler, slots: Iterable[int]) -> None:
    """``utilization`` of ``slots`` as Python floats (the same IEEE division, 0 where the
    resource is not offered) into ``ca.ratio``."""
    used, rows, ratio, cpu, mem = ca.state.requested, ca.capacity_rows, ca.ratio, ca.cpu, ca.mem
    if ca.taken_off is not None:  # the pods CA leaves out taken off both sides
        for s in slots:
            a, b = rows[s]
            off_cpu, off_mem = taken_off(ca, s)
            x = _part(used.item(s, cpu), a, off_cpu)
            y = _part(used.item(s, mem), b, off_mem)
            ratio[s] = -math.inf if x == -math.inf or y == -math.inf else x if x >= y else y
        return
    for s in slots:
        a, b = rows[s]
        x = used.item(s, cpu) / a if a > 0 else 0.0
        y = used.item(s, mem) / b if b > 0 else 0.0
        ratio[s] = x if x >= y else y


def _part(used: int, offered: float, off: int) -> float:
    """One resource's screen with ``off`` taken off both sides (module docstring): 0 where the
    node does not offer it, -inf where nothing is left of the allocatable (the node's screen is
    then -inf)."""
    if offered <= 0:
        return 0.0
    left = offered - off
    if left <= 0:
        return -math.inf
    return (used - off) / left


def taken_off(ca: ClusterAutoscaler, slot: int) -> tuple[int, int]:
    """The cpu and memory requests of the pods on ``slot`` that CA leaves out of its utilisation
    (``ReplayView.left_out``: DaemonSet or mirror pods, by the options), in the state's units."""
    known = ca.taken_off
    cpu, mem = ca.daemon_left_out(slot) if slot in ca.daemons else (0, 0)
    for pod in ca.on_node[slot]:
        pair = known.get(pod)
        if pair is None:
            pair = known[pod] = ca.left_out(pod)
        cpu += pair[0]
        mem += pair[1]
    return cpu, mem

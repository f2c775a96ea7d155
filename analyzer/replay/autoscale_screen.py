"""cluster-autoscaler's utilisation screen of every slot in the replay's loop
(``analyzer.replay.autoscale_scaledown``): the higher of each node's cpu and memory request
ratios, kept across passes and computed again only for the slots touched since (``ca.stale``:
only a bind or unbind changes a node's requests). A scale-down pass looks at the nodes near or
under the threshold by it; ``SimulationMemo.unchanged`` reads it for the nodes it verifies
(``under``).
"""

from __future__ import annotations

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
    np.divide(used, ca.capacity[nodes], out=out, where=ca.offered[nodes])
    return out.max(axis=1)  # type: ignore[no-any-return]


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
    for s in slots:
        a, b = rows[s]
        x = used.item(s, cpu) / a if a > 0 else 0.0
        y = used.item(s, mem) / b if b > 0 else 0.0
        ratio[s] = x if x >= y else y

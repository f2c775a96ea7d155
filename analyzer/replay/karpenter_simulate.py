"""Karpenter's consolidation simulation on the replay's live state (``SimulateScheduling`` in
kubernetes-sigs/karpenter ``pkg/controllers/disruption/helpers.go``): which of the candidates'
pods fit on no node that stays, and which kept answers a node that freed room could change.

The pods are re-placed largest first (cpu, then memory) on the first node that passes the
resources they request and then the profile's filters, bound in the simulation so that the next
pod sees them; every bind and unbind is undone before returning.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from analyzer.autoscaler.nodepool import Shape
from analyzer.replay.karpenter_provision import holds
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState, PodDemand

Key = TypeVar("Key", bound=Hashable)


def leftover(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    moves: Sequence[tuple[int, int]],
    allowed: np.ndarray[Any, Any],
    shapes: Sequence[Shape],
    seconds: float,
) -> list[Mapping[str, int]]:
    """The requests of the pods to move (``moves``: their node and pod) that fit on no
    ``allowed`` node.

    Once the pods left fit no shape of ``shapes`` the answer is every pod not placed yet too:
    the try fails whatever they do (no replacement can hold what is left)."""
    pods = [p for _, p in moves]
    if pods:
        # a necessary condition: what exceeds the room left on the staying nodes must fit one
        # shape; if it fits none, the try fails whatever the placement
        need = np.sum([demands[p].requests for p in pods], axis=0)
        room = (state.allocatable[allowed] - state.requested[allowed]).clip(min=0)
        excess = (need - room.sum(axis=0)).clip(min=0).tolist()
        over = dict(zip(state.resources, excess, strict=True))
        if any(over.values()) and not any(holds(s, over) for s in shapes):
            return [demands[p].request_map for p in pods]
    undo: list[tuple[int, PodDemand, bool]] = []
    left: list[Mapping[str, int]] = []
    total: dict[str, int] = {}
    try:
        for slot, p in moves:
            state.unbind(slot, demands[p])
            undo.append((slot, demands[p], True))
        free = state.allocatable - state.requested  # kept in step with the binds below
        order = sorted(pods, key=lambda p: (-int(demands[p].request_map.get("cpu", 0)),
                                            -int(demands[p].request_map.get("memory", 0)), p))  # fmt: skip
        for i, p in enumerate(order):
            demand = demands[p]
            # resources first (those it requests, as NodeResourcesFit): most pods that fit
            # nowhere fail here, without the filters
            need = demand.requests
            feasible = allowed & np.all((free >= need) | (need == 0), axis=1)
            for plugin in profile.filters if feasible.any() else ():
                feasible &= plugin.filter(state, demand, seconds).feasible
                if not feasible.any():
                    break
            hits = np.flatnonzero(feasible)
            if not len(hits):
                left.append(demand.request_map)
                for k, v in demand.request_map.items():
                    total[k] = total.get(k, 0) + v
                total["pods"] = len(left)
                if not any(holds(shape, total) for shape in shapes):
                    return [*left, *(demands[q].request_map for q in order[i + 1 :])]
                continue
            target = int(hits[0])
            state.bind(target, demand)
            free[target] -= need
            undo.append((target, demand, False))
    finally:
        for node, demand, was_unbound in reversed(undo):
            (state.bind if was_unbound else state.unbind)(node, demand)
    return left


def stale_answers(
    state: ClusterState,
    demands: Sequence[PodDemand],
    freed: Sequence[int],
    pods: Mapping[Key, Sequence[int]],
) -> list[Key]:
    """The kept answers (key → the pods they moved) that a node of ``freed`` could change: one
    of their pods fits that node's room now (resources only; as cluster-autoscaler's loop, the
    effects of pods bound elsewhere on spread and affinity are ignored)."""
    rooms = state.allocatable[list(freed)] - state.requested[list(freed)]
    fits: dict[int, bool] = {}
    out = []
    for key, moved in pods.items():
        for p in moved:
            found = fits.get(p)
            if found is None:
                need = demands[p].requests
                found = fits[p] = bool(np.any(np.all((rooms >= need) | (need == 0), axis=1)))
            if found:
                out.append(key)
                break
    return out

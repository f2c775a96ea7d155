"""Karpenter's provisioner in the replay: which new nodes the pending pods get.

After kubernetes-sigs/karpenter ``pkg/controllers/provisioning``: the ``Batcher`` gathers pending
pods until none came for ``batchIdleDuration`` (1 s) or ``batchMaxDuration`` (10 s) passed since
the first (``batcher.go``); then ``Provisioner.Schedule`` / ``scheduling.Scheduler.Solve``
(``scheduler.go``): pods by cpu then memory, largest first (``byCPUAndMemoryDescending``), each
onto an existing node that passes the scheduler's filters (left to the scheduler), else a node
already launching with room (its resources), else an open new NodeClaim of a compatible pool
whose contents with the pod still fit one of the pool's shapes, the claims holding the fewest
pods tried first (``Scheduler.add`` sorts them so before ``addToInflightNode``), else a new
NodeClaim of the first compatible pool (``OrderByWeight``: the data carries no NodePool weights,
so equal weights, ordered by name descending). A pool is compatible when
the scheduler's filters pass on an empty node of its shape (labels, taints). Each NodeClaim is
launched as the cheapest shape that holds its pods and has a free slot (the cloud provider's
``Create`` picks the cheapest offering); it is Ready after ``provisioning-delay``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler.nodepool import Shape
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState, PodDemand


@dataclass
class Claim:
    """A NodeClaim being filled: its pool and pods, and their summed requests."""

    pool: int
    pods: list[int] = field(default_factory=list)
    need: dict[str, int] = field(default_factory=dict)

    def with_pod(self, demand: PodDemand) -> dict[str, int]:
        """The summed requests if ``demand`` joined (and the pod count)."""
        need = dict(self.need)
        for k, v in demand.request_map.items():
            need[k] = need.get(k, 0) + v
        need["pods"] = len(self.pods) + 1
        return need


def holds(shape: Shape, need: dict[str, int]) -> bool:
    """Whether ``shape`` holds the summed requests ``need`` (pods: its pod capacity)."""
    return all(shape.allocatable.get(k, 0) >= v for k, v in need.items() if v)


def _first_fit(
    state: ClusterState, profile: Profile, demand: PodDemand, allowed: Any, now: float
) -> int | None:
    feasible = allowed.copy()
    for plugin in profile.filters:
        feasible &= plugin.filter(state, demand, now).feasible
        if not feasible.any():
            return None
    hits = np.flatnonzero(feasible)
    return int(hits[0]) if len(hits) else None


def solve(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    pending: Sequence[int],
    active: Any,
    launching: Sequence[int],
    compatible: Any,
    shapes: Sequence[Sequence[Shape]],
    free: Any,
    now: float,
    pool_of: Any = None,
) -> list[tuple[int, int, list[int]]]:
    """The NodeClaims to launch for ``pending``: ``(pool, shape index, pods)`` each.

    ``compatible(pod, pool)``: the filters pass on an empty node of the pool;
    ``free(pool, shape)``: how many slots of that shape may still launch; ``pool_of[slot]``: a
    launching node's pool, whose filters it must pass too (``existingnode.go`` ``CanAdd``: an
    in-flight node is checked as an existing one; None: its resources alone). The live
    ``state`` is left as it was."""
    order = sorted(
        pending,
        key=lambda p: (-int(demands[p].request_map.get("cpu", 0)),
                       -int(demands[p].request_map.get("memory", 0)), p),
    )  # fmt: skip
    placed: list[tuple[int, PodDemand]] = []
    room = {s: state.allocatable[s] - state.requested[s] for s in launching}
    count = {s: int(state.allowed_pods[s] - state.pod_count[s]) for s in launching}
    claims: list[Claim] = []
    left = {(g, k): free(g, k) for g in range(len(shapes)) for k in range(len(shapes[g]))}
    try:
        for pod in order:
            demand = demands[pod]
            node = _first_fit(state, profile, demand, active, now)
            if node is not None:  # the scheduler will place it on an existing node
                state.bind(node, demand)
                placed.append((node, demand))
                continue
            upcoming = next(
                (
                    s for s in launching
                    if count[s] > 0 and bool(np.all(demand.requests <= room[s]))
                    and (pool_of is None or compatible(pod, int(pool_of[s])))
                ),
                None,
            )  # fmt: skip
            if upcoming is not None:
                room[upcoming] = room[upcoming] - demand.requests
                count[upcoming] -= 1
                continue
            target = None
            for claim in sorted(claims, key=lambda c: len(c.pods)):  # stable: ties by age
                if not compatible(pod, claim.pool):
                    continue
                need = claim.with_pod(demand)
                if any(holds(s, need) and left[(claim.pool, k)] > 0
                       for k, s in enumerate(shapes[claim.pool])):  # fmt: skip
                    target = claim
                    break
            if target is None:
                for g in reversed(range(len(shapes))):  # the pools are in name order
                    alone = Claim(g).with_pod(demand)
                    if compatible(pod, g) and any(
                        holds(s, alone) and left[(g, k)] > 0 for k, s in enumerate(shapes[g])
                    ):
                        target = Claim(g)
                        claims.append(target)
                        break
            if target is None:
                continue  # no pool can hold it: it stays pending
            target.need = target.with_pod(demand)
            target.pods.append(pod)
            # a claim's shape is chosen at launch; while it fills, keep a slot of its cheapest
            # fitting shape in mind so that later claims see the slots that remain
    finally:
        for node, demand in reversed(placed):
            state.unbind(node, demand)
    out = []
    for claim in claims:
        for k, shape in enumerate(shapes[claim.pool]):  # cheapest first
            if left[(claim.pool, k)] > 0 and holds(shape, claim.need):
                left[(claim.pool, k)] -= 1
                out.append((claim.pool, k, claim.pods))
                break
    return out

"""How many more copies of one pod fit, by the scheduler's filters, and why the next one fails.

The question kubernetes-sigs/cluster-capacity answers: bind copies of the pod one at a time
(each through the scheduler's Filter and Score, on the state the previous copies left) until one
fits nowhere; the count is how many were bound, the reason is that copy's FitError summary
("0/N nodes are available: 12 Insufficient cpu, 3 node(s) had untolerated taint ...").

Two ways to the same number (``tests/test_headroom.py`` checks them against a one-at-a-time
reference loop on generated clusters):

- **closed form**, when copies cannot affect one another except through room on their node: the
  copy has no topology spread, no pod (anti-)affinity and no host ports, and every filter of the
  profile is one whose verdict on a node depends on that node alone (NodeUnschedulable,
  TaintToleration, NodeAffinity, NodePorts) or on pods the copies cannot change
  (PodTopologySpread and InterPodAffinity for an incoming pod without terms read only the
  existing pods' terms, and copies carry none), plus NodeResourcesFit. Then node n takes
  ``k_n = min(allowed pods − pods, min over requested resources ⌊(allocatable − requested) /
  request⌋)`` copies (0 where another filter refuses it), whichever order the scheduler picks
  nodes in, and the total is Σ k_n. The arithmetic is checked by the Fit filter itself (with
  ``k_n − 1`` copies the node passes, with ``k_n`` it does not); a mismatch falls back to the loop.
  Above ``limit`` copies the count stops there, as the loop would.
- **the loop**, otherwise: ``Profile.evaluate`` + ``select`` (seeded ties) and ``bind``, one copy
  at a time, up to ``limit`` copies (cluster-capacity's "LimitReached"); the copies are unbound
  afterwards, so the state is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from analyzer.replay.refusals import Refusal, RefusalCounter
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Profile, select
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.nodeports import NodePorts
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.state import ClusterState, PodDemand

LIMIT = 100_000  # copies counted at most (cluster-capacity's --max-limit); the page says "≥"
_INVARIANT = (
    NodeUnschedulable,
    TaintTolerationFilter,
    NodeAffinityFilter,
    NodePorts,
    PodTopologySpread,
    InterPodAffinity,
)


@dataclass(frozen=True)
class CopiesFit:
    """Copies of one pod that still fit, per node and in all, and why the next one does not."""

    copies: int
    per_node: Int64Array  # copies per node (0 on absent nodes)
    refusal: Refusal | None  # None when ``limited`` (the next copy was not tried)
    method: str  # "closed form" | "loop"
    limited: bool = False  # stopped at ``limit`` copies

    def reasons(self) -> list[tuple[str, int]]:
        """(reason, nodes refused for it), most first, as cluster-capacity's FailSummary."""
        return list(self.refusal.reasons) if self.refusal is not None else []

    def summary(self) -> str:
        """``Insufficient cpu (12), node(s) had untolerated taint {…} (3)`` or a limit note."""
        if self.limited:
            return f"limit reached: counting stops at {self.copies} copies"
        if self.refusal is None or not self.refusal.reasons:
            return "no node is present"
        return ", ".join(
            f"{reason} ({count})" if count else reason for reason, count in self.refusal.reasons
        )


def closed_form_applies(profile: Profile, pod: PodDemand) -> bool:
    """Whether copies of ``pod`` interact only through their node's room (module docstring)."""
    if pod.spread or pod.affinity is not None or pod.host_ports:
        return False
    filters = profile.filters
    return any(isinstance(f, NodeResourcesFit) for f in filters) and all(
        isinstance(f, (*_INVARIANT, NodeResourcesFit)) for f in filters
    )


def _with_copies(state: ClusterState, pod: PodDemand, copies: Int64Array) -> ClusterState:
    """A view of ``state`` with ``copies[n]`` more copies of ``pod`` counted on node n (the
    resource arrays only: the filters this is used with read nothing else of the copies). The
    plugin cache is shared: it holds what is derived from allocatable, labels and taints, which
    copies do not change."""
    return replace(
        state,
        requested=state.requested + copies[:, None] * pod.requests[None, :],
        nonzero_requested=state.nonzero_requested + copies[:, None] * pod.nonzero[None, :],
        pod_count=state.pod_count + copies,
    )


def _closed_form(
    profile: Profile, state: ClusterState, pod: PodDemand, now: float, present: BoolArray
) -> Int64Array | None:
    """k_n per node, or None when the Fit filter disagrees with the arithmetic."""
    passing = present.copy()
    fits = [f for f in profile.filters if isinstance(f, NodeResourcesFit)]
    for plugin in profile.filters:
        if not isinstance(plugin, NodeResourcesFit):
            passing &= plugin.filter(state, pod, now).feasible
    room = np.clip(state.allowed_pods - state.pod_count, 0, None)
    for fit in fits:
        if pod.off_axis_requests(state.resources):
            room = np.zeros_like(room)  # a resource no node offers
        for j, resource in enumerate(state.resources):
            request = int(pod.requests[j])
            if request > 0 and fit._checked(resource):
                free = np.clip(state.allocatable[:, j] - state.requested[:, j], 0, None)
                room = np.minimum(room, free // request)
    copies: Int64Array = np.where(passing, room, 0).astype(np.int64)
    # the filter is the judge: one copy fewer must pass, one copy more must not
    before = _with_copies(state, pod, np.clip(copies - 1, 0, None))
    after = _with_copies(state, pod, copies)
    for fit in fits:
        if not fit.filter(before, pod, now).feasible[copies > 0].all():
            return None
        if fit.filter(after, pod, now).feasible[passing].any():
            return None
    return copies


def count_copies(
    profile: Profile,
    state: ClusterState,
    pod: PodDemand,
    *,
    now: float = 0.0,
    present: BoolArray | None = None,
    limit: int = LIMIT,
    seed: int = 0,
) -> CopiesFit:
    """Copies of ``pod`` that fit on ``state``'s ``present`` nodes (module docstring)."""
    mask = np.ones(state.node_count, dtype=bool) if present is None else present.copy()
    if closed_form_applies(profile, pod):
        per_node = _closed_form(profile, state, pod, now, mask)
        if per_node is not None:
            total = int(per_node.sum())
            if total > limit:  # e.g. no pod-count limit and requests Fit ignores
                return CopiesFit(limit, per_node, None, "closed form", limited=True)
            after = _with_copies(state, pod, per_node)
            refusal = RefusalCounter(profile, after, mask).refusal(b"headroom", pod, now)
            return CopiesFit(total, per_node, refusal, "closed form")
    return _loop(profile, state, pod, now, mask, limit, seed)


def _loop(
    profile: Profile,
    state: ClusterState,
    pod: PodDemand,
    now: float,
    mask: BoolArray,
    limit: int,
    seed: int,
) -> CopiesFit:
    rng = np.random.default_rng(seed)
    placed: list[int] = []
    per_node = np.zeros(state.node_count, dtype=np.int64)
    refusal: Refusal | None = None
    try:
        while len(placed) < limit:
            choice = select(profile.evaluate(state, pod, now, mask), rng)
            if choice is None:
                refusal = RefusalCounter(profile, state, mask).refusal(b"headroom", pod, now)
                break
            state.bind(choice, pod)
            placed.append(choice)
            per_node[choice] += 1
    finally:
        for node in reversed(placed):
            state.unbind(node, pod)
    return CopiesFit(len(placed), per_node, refusal, "loop", limited=refusal is None)

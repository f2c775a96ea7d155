"""Why a pod waited: the filters' refusal reasons, counted over nodes like kube-scheduler does.

When no node passes the filters, kube-scheduler reports "0/N nodes are available: 76 Insufficient
cpu, 20 node(s) had untolerated taint {nvidia.com/gpu: present}." — every present node is refused
by the *first* filter that fails it (``RunFilterPlugins`` stops there), and each of that filter's
reasons counts the node once (NodeResourcesFit may give "Insufficient cpu" and "Insufficient
memory" for one node). ``RefusalCounter`` computes that summary for a pod the replay could not
place, and only then: placements never pay for it.

Speed: TaintToleration and NodeAffinity refuse the same nodes for the same pod shape all replay
long, so their per-node reason is computed once per shape; NodeResourcesFit's reasons are counted
with whole-column numpy comparisons; any other filter (LoadAwareScheduling, GPU devices) asks its
own ``reasons`` per refused node.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.constraints import NodeAffinityFilter, TaintTolerationFilter
from analyzer.scheduling.framework import FilterPlugin, Profile
from analyzer.scheduling.noderesources_fit import NodeResourcesFit
from analyzer.scheduling.state import ClusterState, PodDemand

_STATIC = (TaintTolerationFilter, NodeAffinityFilter)


@dataclass(frozen=True)
class Refusal:
    """Why a pod fitted on no node at one instant: (reason, nodes refused for it), most first."""

    nodes: int  # nodes present at that instant
    reasons: tuple[tuple[str, int], ...]

    def message(self) -> str:
        """kube-scheduler's FitError wording: "0/N nodes are available: 3 Insufficient cpu."
        (a reason that is no filter's, e.g. the pod's node left, is the sentence itself)."""
        if self.nodes == 0 and self.reasons:
            return "; ".join(reason for reason, _ in self.reasons) + "."
        if not self.reasons:
            return f"0/{self.nodes} nodes are available."
        parts = ", ".join(
            f"{count} {reason}" if count else reason for reason, count in self.reasons
        )
        return f"0/{self.nodes} nodes are available: {parts}."


# Reasons that are not a filter's (no node count): a pod the replay could not try to place.
NOT_BOUND = Refusal(0, (("not bound to any node in the data (observed keeps it unplaced)", 0),))
PINNED_NODE_ABSENT = Refusal(0, (("its own node is not present (DaemonSet/static pod)", 0),))
NODE_LEFT = Refusal(0, (("its node left the cluster; waiting for capacity to free", 0),))


def _sorted(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass
class _Static:
    """A static filter's verdict for one pod shape: feasible mask and reason code per node."""

    feasible: BoolArray
    codes: Int64Array  # index into ``texts`` per node (-1 where feasible)
    texts: list[str]


class RefusalCounter:
    """Counts the refusal reasons of ``profile``'s filters for pods that fit nowhere."""

    def __init__(self, profile: Profile, state: ClusterState, active: BoolArray) -> None:
        self.profile = profile
        self.state = state
        self.active = active  # the replay's live mask of present nodes
        self._static: dict[tuple[bytes, int], _Static] = {}

    def _static_verdict(
        self, key: bytes, position: int, plugin: FilterPlugin, pod: PodDemand
    ) -> _Static:
        cached = self._static.get((key, position))
        if cached is not None:
            return cached
        result = plugin.filter(self.state, pod, 0.0)
        texts: list[str] = []
        lookup: dict[str, int] = {}
        codes = np.full(self.state.node_count, -1, dtype=np.int64)
        for node in np.flatnonzero(~result.feasible).tolist():
            reasons = result.reasons(node)
            text = reasons[0] if reasons else plugin.name
            codes[node] = lookup.setdefault(text, len(lookup))
            if len(texts) < len(lookup):
                texts.append(text)
        verdict = _Static(result.feasible, codes, texts)
        self._static[(key, position)] = verdict
        return verdict

    def refusal(self, key: bytes, pod: PodDemand, now: float) -> Refusal:
        """The reasons every present node refused ``pod`` (shape ``key``) at ``now`` (unix s)."""
        state = self.state
        remaining = self.active.copy()
        counts: Counter[str] = Counter()
        for position, plugin in enumerate(self.profile.filters):
            if not remaining.any():
                break
            if isinstance(plugin, _STATIC):
                verdict = self._static_verdict(key, position, plugin, pod)
                refused = remaining & ~verdict.feasible
                codes, tally = np.unique(verdict.codes[refused], return_counts=True)
                for code, count in zip(codes.tolist(), tally.tolist(), strict=True):
                    counts[verdict.texts[code]] += count
                remaining &= verdict.feasible
            elif isinstance(plugin, NodeResourcesFit):
                remaining = self._fit(plugin, pod, remaining, counts)
            else:
                result = plugin.filter(state, pod, now)
                refused = remaining & ~result.feasible
                for node in np.flatnonzero(refused).tolist():
                    for reason in result.reasons(node) or [plugin.name]:
                        counts[reason] += 1
                remaining &= result.feasible
        return Refusal(int(self.active.sum()), _sorted(counts))

    def _fit(
        self, plugin: NodeResourcesFit, pod: PodDemand, remaining: BoolArray, counts: Counter[str]
    ) -> BoolArray:
        """NodeResourcesFit's reasons, one numpy comparison per resource (as ``fitsRequest``)."""
        state = self.state
        result = plugin.filter(state, pod, 0.0)
        refused = remaining & ~result.feasible
        if refused.any():
            too_many = refused & (state.pod_count >= state.allowed_pods)
            if too_many.any():
                counts["Too many pods"] += int(too_many.sum())
            for j, resource in enumerate(state.resources):
                if pod.requests[j] <= 0 or not plugin._checked(resource):
                    continue
                short = refused & (
                    state.allocatable[:, j] - state.requested[:, j] < pod.requests[j]
                )
                if short.any():
                    counts[f"Insufficient {resource}"] += int(short.sum())
            for resource in pod.off_axis_requests(state.resources):
                if plugin._checked(resource):
                    counts[f"Insufficient {resource}"] += int(refused.sum())
        return remaining & result.feasible


class WaitReasons:
    """The last refusal of every pod that waited, at the cost of one count per failed attempt.

    Pods of one queue group fail alike, so the replay tries only the first of a group and the
    rest fail implicitly: a failure is stored once per group with a serial number, and a pod's
    last refusal is resolved when its wait ends — its group's latest failure if that came after
    the pod started waiting, else the reason it started waiting with (its own failed arrival, its
    node leaving, or no node to go back to).
    """

    def __init__(
        self,
        counter: RefusalCounter | None,
        keys: list[bytes],
        demands: list[PodDemand],
        pinned: list[bool],
    ) -> None:
        self.counter = counter
        self.keys, self.demands, self.pinned = keys, demands, pinned
        self.serial = 0
        self.group: dict[bytes, tuple[int, Refusal]] = {}
        self.own: dict[int, tuple[int, Refusal]] = {}
        self.last: dict[int, Refusal] = {}  # pod -> last refusal, once its wait ended
        self._memo: dict[bytes, tuple[tuple[int, float], Refusal]] = {}

    def failed(self, pod: int, now: int, version: int) -> Refusal:
        """``pod`` fitted nowhere at ``now`` (ns); ``version`` changes whenever the state does."""
        self.serial += 1
        if self.pinned[pod] or self.counter is None:
            return NOT_BOUND if self.counter is None else PINNED_NODE_ABSENT
        key = self.keys[pod]
        stamp = (version, now / 1e9)
        memo = self._memo.get(key)
        if memo is not None and memo[0] == stamp:
            refusal = memo[1]
        else:
            refusal = self.counter.refusal(key, self.demands[pod], now / 1e9)
            self._memo[key] = (stamp, refusal)
        self.group[key] = (self.serial, refusal)
        return refusal

    def waits(self, pod: int, reason: Refusal) -> None:
        """``pod`` enters the pending queue for ``reason``."""
        self.own[pod] = (self.serial, reason)

    def ended(self, pod: int) -> None:
        """``pod``'s wait ended (placed, gone, or the replay's end): fix its last refusal."""
        since, reason = self.own.pop(pod)
        if not self.pinned[pod]:
            latest = self.group.get(self.keys[pod])
            if latest is not None and latest[0] > since:
                reason = latest[1]
        self.last[pod] = reason

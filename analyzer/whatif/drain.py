"""Why a node cannot go: the drain dry run at a pool's peak instant, in the scheduler's terms.

Rule (one placement pass, the cluster-autoscaler scale-down simulation): take a scenario's
placement at the pool's peak instant ``T`` — every pod holding a node at ``T``
(``start <= T < end``) bound with its requests. The nodes that stay are the nodes **needed** at
``T``: those holding at least one pod that is not a DaemonSet/static pod (idle nodes are already
counted as removable, so a drained pod may not land on one). To drain a node, remove it with its
pods; its DaemonSet/static pods go with it; every other pod of it is placed again, in arrival
order, by the scenario's scheduler profile (``Profile.evaluate`` + ``select``, seeded ties) on the
remaining needed nodes of the whole cluster. A pod no node accepts is refused with
kube-scheduler's FitError counts (``analyzer.replay.refusals.RefusalCounter``); a node's reasons
group those pods by workload: ``"3 pods of payments/api: 0/12 nodes are available: 12
Insufficient memory."``

For a load-aware profile, LoadAwareScheduling reads NodeMetrics built from the scenario's
projected usage over the half hour before ``T`` with the placement of ``T`` (pods that left in that
half hour are not counted) and the pod-assign cache of the pods bound then.

- **blocked nodes**: each needed node of the pool drained alone from the state at ``T``; a node
  is blocked when at least one of its pods is refused;
- **greedy drain**: the needed nodes of the pool in drain order (least requested first: the
  larger of the cpu and memory requested shares of allocatable, then name), each drained from the
  state the previous successful drains left; a drain that strands a pod is undone. The count is how
  many *more* nodes than the scenario's removable ones could go at ``T`` — the replay places pods
  one at a time as they arrive and never moves them, the dry run repacks a whole node at once — so
  ``nodes_removable + drained`` is the dry run's answer for the instant ``T``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.workloads import workload_keys
from analyzer.replay.input import ReplayInput
from analyzer.replay.loadfeed import LoadFeed
from analyzer.replay.projection import UsageMatrices
from analyzer.replay.refusals import RefusalCounter
from analyzer.replay.result import ReplayResult
from analyzer.scheduling.framework import Profile, select
from analyzer.whatif.pool_figures import running_at

SECOND = 1_000_000_000
FEED_LOOKBACK_S = 1800  # the longest NodeMetric aggregation window the feed reads


@dataclass
class DrainReport:
    """The drain dry run of one pool at its peak instant (module docstring)."""

    pool: str
    time: str
    needed: list[str]
    # {node, reasons[], refusals[{workload, pods, reasons[]}]}: the sentences and, for grouping
    # on the pages, the same facts unjoined (the filter reasons without their node counts)
    blocked_nodes: list[dict[str, Any]] = field(default_factory=list)
    drainable_nodes: list[str] = field(default_factory=list)
    greedy_order: list[str] = field(default_factory=list)
    greedy_drained: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "pool": self.pool,
            "time": self.time,
            "needed": list(self.needed),
            "blocked_nodes": [dict(b) for b in self.blocked_nodes],
            "drainable_nodes": list(self.drainable_nodes),
            "greedy_order": list(self.greedy_order),
            "greedy_drained": list(self.greedy_drained),
            "greedy_count": len(self.greedy_drained),
            "notes": list(self.notes),
        }


def _plural(count: int) -> str:
    return "1 pod" if count == 1 else f"{count} pods"


class DrainSimulator:
    """The state of one scenario at one instant, and node drains on it."""

    def __init__(
        self,
        inp: ReplayInput,
        result: ReplayResult,
        profile: Profile,
        when: int,
        mats: UsageMatrices,
        seed: int = 0,
    ) -> None:
        self.inp, self.profile, self.when = inp, profile, when
        self.now = when / 1e9
        self.rng = np.random.default_rng(seed)
        state = inp.fresh_state()
        pods, nodes, starts = running_at(result, when)
        order = sorted(range(len(pods)), key=lambda k: (int(inp.arrival[pods[k]]), pods[k]))
        self.on_node: list[list[int]] = [[] for _ in inp.node_names]
        needed = np.zeros(len(inp.node_names), dtype=bool)
        for k in order:
            pod, node = pods[k], nodes[k]
            state.bind(node, inp.demands[pod])
            self.on_node[node].append(pod)
            if not inp.pinned[pod]:
                needed[node] = True
        self.state = state
        self.mask = needed  # the nodes that stay; mutated in place by drains
        self.feed = LoadFeed.for_profile(inp, profile, state, mats)
        if self.feed is not None:
            for k in order:
                self.feed.bound(pods[k], nodes[k], starts[k])
            lookback = when - FEED_LOOKBACK_S * SECOND - inp.step
            self.feed.next_col = int(np.searchsorted(mats.times, lookback, side="left"))
            self.feed.advance(when)
        self.counter = RefusalCounter(profile, state, self.mask)
        keys = workload_keys(inp.snapshot.pods)
        self.workload = [
            f"{ns}/{name}"
            for ns, name in zip(
                keys["namespace"].tolist(), keys["owner_name"].tolist(), strict=True
            )
        ]

    def needed_nodes(self, nodes: list[int]) -> list[int]:
        """The nodes of ``nodes`` needed at the instant."""
        return [n for n in nodes if self.mask[n]]

    def requested_share(self, node: int) -> float:
        """The larger of the cpu and memory requested shares of ``node``'s allocatable."""
        state = self.state
        shares = []
        for r in ("cpu", "memory"):
            j = state.resources.index(r)
            alloc = int(state.allocatable[node, j])
            shares.append(int(state.requested[node, j]) / alloc if alloc > 0 else 0.0)
        return max(shares)

    def drain(self, node: int, keep: bool) -> list[dict[str, Any]]:
        """Remove ``node`` and place its pods elsewhere; the refusals ([] = drained), one per
        workload and message: ``workload``, ``pods``, ``reasons`` (the filter reasons without
        their node counts) and ``text`` (kube-scheduler's sentence).

        ``keep``: when every pod found a node, leave the drain applied; otherwise (or when not
        ``keep``) the state is restored. With ``keep`` the drain stops at the first refused pod
        (the greedy drain needs only whether the node can go), so its reasons are the first one's.
        """
        inp, state, feed = self.inp, self.state, self.feed
        self.mask[node] = False
        movers = [p for p in self.on_node[node] if not inp.pinned[p]]
        placed: list[tuple[int, int]] = []
        refused: dict[tuple[str, str], int] = {}
        kinds: dict[tuple[str, str], list[str]] = {}
        for pod in movers:
            demand = inp.demands[pod]
            choice = select(self.profile.evaluate(state, demand, self.now, self.mask), self.rng)
            if choice is None:
                refusal = self.counter.refusal(inp.shape_keys[pod], demand, self.now)
                key = (self.workload[pod], refusal.message())
                refused[key] = refused.get(key, 0) + 1
                kinds[key] = [reason for reason, _ in refusal.reasons]
                if keep:
                    break
                continue
            state.bind(choice, demand)
            if feed is not None:
                feed.bound(pod, choice, self.when)
            placed.append((pod, choice))
        if keep and not refused:
            for pod, choice in placed:
                self.on_node[choice].append(pod)
            self.on_node[node] = [p for p in self.on_node[node] if inp.pinned[p]]
            return []
        for pod, choice in reversed(placed):
            state.unbind(choice, inp.demands[pod])
            if feed is not None:
                feed.unbound(pod, choice, self.when)
        self.mask[node] = True
        return [
            {
                "workload": workload,
                "pods": count,
                "reasons": kinds[(workload, message)],
                "text": f"{_plural(count)} of {workload}: {message}",
            }
            for (workload, message), count in sorted(refused.items(), key=lambda i: (-i[1], i[0]))
        ]


def drain_pool(
    inp: ReplayInput,
    result: ReplayResult,
    profile: Profile,
    mats: UsageMatrices,
    pool: str,
    pool_nodes: list[int],
    when: int,
    time_text: str,
    seed: int = 0,
) -> DrainReport:
    """Blocked nodes and the greedy drain of ``pool`` at ``when`` (module docstring)."""
    report = DrainReport(pool=pool, time=time_text, needed=[])
    if profile.uses_devices:
        report.notes.append("drain not simulated: GPU-sharing profiles track devices per pod")
        return report
    sim = DrainSimulator(inp, result, profile, when, mats, seed)
    needed = sim.needed_nodes(pool_nodes)
    names = inp.node_names
    report.needed = [names[n] for n in needed]
    for node in needed:
        refusals = sim.drain(node, keep=False)
        if refusals:
            report.blocked_nodes.append(
                {
                    "node": names[node],
                    "reasons": [r.pop("text") for r in refusals],
                    "refusals": refusals,
                }
            )
        else:
            report.drainable_nodes.append(names[node])
    order = sorted(needed, key=lambda n: (sim.requested_share(n), names[n]))
    report.greedy_order = [names[n] for n in order]
    for node in order:
        if not sim.drain(node, keep=True):
            report.greedy_drained.append(names[node])
    return report

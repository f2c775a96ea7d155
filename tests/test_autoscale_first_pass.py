"""The replay's first cluster-autoscaler scale-down pass decides as ``analyzer autoscale``'s planner
(``autoscaler.planner.plan``) on the same cluster state.

The two are separate implementations of one pass: the planner judges every node with CA's own
eligibility check and simulates each candidate on a state it builds; the replay screens nodes by
a kept ratio, keeps verdicts and answers across passes and simulates on its live state. At the
first pass there is no earlier pass (no scheduling hints, no previous candidates, no recheck
deadlines), so upstream's answer is the planner's: the same removable nodes and the same count
per unremovable reason. ``max-scale-down-parallelism`` is raised so that the first pass's
candidates limit (2 x N) does not stop the replay where the planner, which has none, goes on.

The planner's state is built from the replay's own pods (the CA pods the pass reads, with the
replay's demands: a CA pod made from a replay pod carries its requests, owner and labels, not
its scheduling constraints), the nodes' allocatable, labels, annotations and taints, the groups
and the PodDisruptionBudgets over those pods at that instant.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import numpy as np
import pytest

from analyzer.autoscaler import removal
from analyzer.autoscaler.cluster import CANode, Cluster
from analyzer.autoscaler.planner import plan
from analyzer.replay import autoscale_loop, autoscale_scaledown
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.state import ClusterState
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate


class _FirstPassDone(Exception):
    """Raised after the first pass: the replay has nothing more to show here."""


def _planner_view(ca: Any, now: int) -> tuple[list[str], dict[str, int]]:
    """``plan`` on the replay's state now: its removable nodes and its unremovable reasons."""
    present = np.flatnonzero(ca.active).tolist()
    groups, _ = ca.member_groups()
    state = ca.state
    nodes = [
        CANode(
            ca.nodes[s].name,
            {**autoscale_scaledown._allocatable(ca, s), "pods": int(state.allowed_pods[s])},
            ca.nodes[s].labels,
            ca.nodes[s].annotations,
            taints=tuple(state.node_taints[s]) if state.node_taints else (),
        )
        for s in present
    ]
    pods = {ca.nodes[s].name: list(ca.pods_of(s)) for s in present}
    cluster = Cluster(nodes, pods, {n.name: groups[n.name] for n in nodes if n.name in groups})
    if ca.budgets:
        covering = ca.budgets.covering([p for s in present for p in ca.on_node[s]])
        if covering:
            bound = np.array(ca.bound, dtype=np.int64)
            cluster.budgets = list(ca.budgets.at(now, bound, covering, *ca.terminating))

    def same_demands(built: Cluster) -> tuple[ClusterState, dict[str, list[Any]]]:
        planned = ClusterState.from_nodes(
            [n.name for n in built.nodes],
            [n.allocatable for n in built.nodes],
            extra_resources=set(state.resources) - {"cpu", "memory"},
            annotations=[dict(n.annotations) for n in built.nodes],
            labels=[dict(n.labels) for n in built.nodes],
            taints=[n.taints for n in built.nodes],
        )
        assert planned.resources == state.resources
        demands: dict[str, list[Any]] = {}
        for i, node in enumerate(built.nodes):
            demands[node.name] = [ca.demand_by_id[id(p)] for p in built.pods.get(node.name, [])]
            for demand in demands[node.name]:
                planned.bind(i, demand)
        return planned, demands

    mp = pytest.MonkeyPatch()
    mp.setattr(removal, "build_state", same_demands)
    try:
        decided = plan(cluster, ca.profile, ca.options, now / 1e9)
    finally:
        mp.undo()
    removable = sorted(d.name for d in decided.nodes if d.removable)
    reasons = collections.Counter(d.reason for d in decided.nodes if not d.removable)
    return removable, dict(reasons)


CASES = [
    # seed, strategy, CA flags, generator options, DaemonSet pods' cpu (None: as generated)
    (3, "kube-default", {}, {}, None),
    (17, "most-allocated", {}, {}, None),
    (1, "kube-default", {"ignore-daemonsets-utilization": True}, {}, 1500.0),
    (54, "kube-default", {"scale-down-utilization-threshold": 0.9}, {}, None),
    (50, "kube-default", {"scale-down-utilization-threshold": 0.9}, {"pod_constraints": True}, None),
    (14, "most-allocated", {"ignore-daemonsets-utilization": True}, {"gpu_pool": True}, 1000.0),
]  # fmt: skip


@pytest.mark.parametrize(("seed", "strategy", "flags", "spec", "daemon_cpu"), CASES)
def test_the_first_pass_is_the_planners(
    seed: int, strategy: str, flags: dict[str, Any], spec: dict[str, Any], daemon_cpu: float | None
) -> None:
    nodes = 30 if seed in (3, 17, 50) else 16
    cluster = generate(SyntheticSpec(seed=seed, nodes=nodes, days=0.05, step=300, **spec))
    if daemon_cpu is not None:  # DaemonSet pods that weigh: ignore-daemonsets-utilization acts
        pods = cluster.snapshot.pods
        daemons = pods["owner_kind"] == "DaemonSet"
        pods.loc[daemons, "requests:cpu"] = daemon_cpu
        pods.loc[daemons, "nonzero_requests:cpu"] = daemon_cpu
    inp = prepare(cluster.snapshot)
    settings = parse_settings({"max-scale-down-parallelism": 100, **flags})
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    settings = dataclasses.replace(settings, groups={p: GroupBounds(min_size=0) for p in pools})
    auto, groups = with_node_groups(inp, settings)
    seen: dict[str, Any] = {}
    update = autoscale_scaledown.update_unneeded

    def first_pass(ca: Any, now: int) -> None:
        update(ca, now)
        if ca.record.passes == 1:
            seen["replay"] = sorted(ca.nodes[s].name for s in ca.outcomes)
            seen["reasons"] = {k: v for k, v in ca.record.reasons[-1][1].items() if k != "Unneeded"}
            seen["planner"] = _planner_view(ca, now)
            raise _FirstPassDone

    mp = pytest.MonkeyPatch()
    mp.setattr(autoscale_loop, "update_unneeded", first_pass)
    try:
        with pytest.raises(_FirstPassDone):
            replay(auto, Strategy(strategy, load_strategy(strategy)), seed,
                   autoscaler=(groups, settings))  # fmt: skip
    finally:
        mp.undo()
    removable, reasons = seen["planner"]
    assert seen["replay"] == removable
    assert seen["reasons"] == reasons
    # each case exercises the pass: some node removable and some node kept for a reason
    assert removable and reasons, (removable, reasons)

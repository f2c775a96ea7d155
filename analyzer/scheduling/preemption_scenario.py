"""DefaultPreemption for ``analyzer score``: Kubernetes objects → ``preempt`` → the JSON block.

When the incoming pod fits on no node and the profile has DefaultPreemption as post-filter, the
score output gains ``preemption: {nominatedNode, victims: ["namespace/name", …], candidates,
status[, message]}``. Pod priorities come from ``spec.priority`` or, through the scenario's
PriorityClass objects, from ``priorityClassName``; start times from ``status.startTime``;
PodDisruptionBudgets are counted when the scenario gives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.scheduling.framework import Evaluation, Profile
from analyzer.scheduling.objects import PodObject
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.preemption import (
    BoundPod,
    DefaultPreemption,
    PreemptionResult,
    node_statuses,
    preempt,
    result_json,
)
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.priority_sort import resolve_preemption_policy, resolve_priority
from analyzer.scheduling.state import ClusterState, PodDemand


def bound_pods(
    state: ClusterState,
    pods: Sequence[PodObject],
    classes: Mapping[str, PriorityClass] | None = None,
) -> list[BoundPod]:
    """The running pods on known nodes (terminated and unbound pods left out)."""
    position = {name: i for i, name in enumerate(state.node_names)}
    return [
        BoundPod(
            node=position[p.node_name],
            name=p.name,
            namespace=p.namespace,
            priority=resolve_priority(p, classes),
            demand=p.demand(state.resources),
            labels=dict(p.labels),
            start_ns=p.start_time_ns,
        )
        for p in pods
        if p.node_name in position and not p.terminated
    ]


def preemption_plugin(profile: Profile) -> DefaultPreemption | None:
    """The profile's DefaultPreemption post-filter, if it has one."""
    return next((p for p in profile.post_filters if isinstance(p, DefaultPreemption)), None)


def run_preemption(
    profile: Profile,
    state: ClusterState,
    demand: PodDemand,
    incoming: PodObject,
    pods: Sequence[PodObject],
    evaluation: Evaluation,
    now: float = 0.0,
    budgets: Sequence[DisruptionBudget] = (),
    classes: Mapping[str, PriorityClass] | None = None,
) -> PreemptionResult | None:
    """PostFilter for a scenario: None when the pod fits or the profile does not preempt.

    Not with per-GPU device state: restoring a victim would re-pick its GPUs (best-fit), which
    could differ from the ones it holds, so GPU profiles do not preempt here.
    """
    plugin = preemption_plugin(profile)
    if plugin is None or evaluation.feasible.any() or state.devices is not None:
        return None
    return preempt(
        profile.filters,
        state,
        demand,
        resolve_priority(incoming, classes),
        resolve_preemption_policy(incoming, classes),
        node_statuses(evaluation, profile.filters),
        bound_pods(state, pods, classes),
        budgets,
        plugin.args,
        now,
    )


def preemption_json(result: PreemptionResult | None, node_names: Sequence[str]) -> dict[str, Any]:
    """``{"preemption": …}`` for the score JSON, or ``{}`` when preemption did not run."""
    return {} if result is None else {"preemption": result_json(result, node_names)}

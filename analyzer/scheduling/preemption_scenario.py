"""DefaultPreemption for ``analyzer score``: Kubernetes objects → ``preempt`` → the JSON block.

When the incoming pod fits on no node and the profile has DefaultPreemption as post-filter, the
score output gains ``preemption: {nominatedNode, victims: ["namespace/name", …], candidates,
status[, message]}``. Pod priorities come from ``spec.priority`` or, through the scenario's
PriorityClass objects, from ``priorityClassName``; start times from ``status.startTime``;
PodDisruptionBudgets are counted when the scenario gives them.

``postFilter: {filteredNodesStatuses: {node: code}, absentNodesStatus: code}`` runs PostFilter as
upstream's unit tests call it (TestDryRunPreemption, TestSelectBestCandidate, TestPostFilter,
TestPreempt): with these Filter statuses in place of the Filter pass's (nodes not listed get
``absentNodesStatus``, default ``UnschedulableAndUnresolvable`` like upstream's
``NewDefaultNodeToStatus``), whether or not the pod fits somewhere. The block's ``candidates`` are
then ``DryRunPreemption``'s and ``nominatedNode`` is ``SelectCandidate``'s choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.framework import Evaluation, Profile
from analyzer.scheduling.objects import PodObject
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.plugins.defaultpreemption import (
    TERMINATING,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    BoundPod,
    DefaultPreemption,
    PreemptionResult,
    node_statuses,
    preempt,
    result_json,
)
from analyzer.scheduling.plugins.queuesort import resolve_preemption_policy, resolve_priority
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.state import ClusterState, PodDemand

POST_FILTER_KEYS = ("filteredNodesStatuses", "absentNodesStatus")
STATUS_CODES = (UNSCHEDULABLE, UNRESOLVABLE)


def parse_post_filter(raw: Any, names: Sequence[str], where: str) -> dict[int, str] | None:
    """The scenario's ``postFilter`` as a Filter status per node index (None when absent)."""
    if raw is None:
        return None
    raw = mapping(raw, where)
    unknown = sorted(plain(key) for key in raw if key not in POST_FILTER_KEYS)
    if unknown:
        raise InputError(
            f"{where}.{unknown[0]}: unknown key (valid: {', '.join(POST_FILTER_KEYS)})"
        )
    absent = _code(raw.get("absentNodesStatus", UNRESOLVABLE), f"{where}.absentNodesStatus")
    given = mapping(raw.get("filteredNodesStatuses"), f"{where}.filteredNodesStatuses")
    position = {name: i for i, name in enumerate(names)}
    statuses = dict.fromkeys(range(len(names)), absent)
    for name, code in given.items():
        field = f"{where}.filteredNodesStatuses.{plain(name)}"
        if name not in position:
            raise InputError(f"{field}: {preview(name)} is not one of the scenario's nodes")
        statuses[position[name]] = _code(code, field)
    return statuses


def _code(raw: Any, where: str) -> str:
    if raw not in STATUS_CODES:
        raise InputError(f"{where}: {preview(raw)} is not a Filter status code (valid: "
                         f"{', '.join(STATUS_CODES)})")  # fmt: skip
    return str(raw)


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
    statuses: Mapping[int, str] | None = None,
    rng: np.random.Generator | None = None,
    nominated: Mapping[int, Sequence[PodDemand]] | None = None,
    waits: Callable[[Mapping[int, str]], bool] | None = None,
) -> PreemptionResult | None:
    """PostFilter for a scenario: None when the pod fits or the profile does not preempt.

    ``statuses`` (the scenario's ``postFilter``) replace the Filter pass's statuses, and
    PostFilter then runs even when the pod fits somewhere (as upstream's unit tests call it).

    Not with per-GPU device state: restoring a victim would re-pick its GPUs (best-fit), which
    could differ from the ones it holds, so GPU profiles do not preempt here.

    ``rng`` draws the candidates' offset (None: offset 0, the first potential node).
    ``nominated``: per node, the nominated pods its filters count (``nominated_pods``);
    ``waits(statuses)``: whether the pod waits for a victim on its own nominated node
    (``PodEligibleToPreemptOthers``, after the ``preemptionPolicy`` check).
    """
    plugin = preemption_plugin(profile)
    if plugin is None or state.devices is not None:
        return None
    if statuses is None and evaluation.feasible.any():
        return None
    policy = resolve_preemption_policy(incoming, classes)
    statuses = node_statuses(evaluation, profile.filters) if statuses is None else statuses
    if policy != "Never" and waits is not None and waits(statuses):
        return PreemptionResult(None, [], [], UNSCHEDULABLE, f"preemption: {TERMINATING}")
    return preempt(
        profile.filters,
        state,
        demand,
        resolve_priority(incoming, classes),
        policy,
        statuses,
        bound_pods(state, pods, classes),
        budgets,
        plugin.args,
        now,
        rng,
        plugin.sampling,
        nominated,
    )


def preemption_json(result: PreemptionResult | None, node_names: Sequence[str]) -> dict[str, Any]:
    """``{"preemption": …}`` for the score JSON, or ``{}`` when preemption did not run."""
    return {} if result is None else {"preemption": result_json(result, node_names)}

"""Pods an earlier preemption nominated to a node, as one kube-scheduler cycle sees them
(``analyzer score``).

Upstream (``pkg/scheduler``):

- ``framework/runtime/framework.go`` · ``RunFilterPluginsWithNominatedPods``, ``addNominatedPods``:
  when the filters run for pod P on a node, the pods nominated to that node whose priority is at
  least P's (P itself excepted, by UID) are added to the node and to PreFilter's state
  (``AddPod``: spread and affinity counts, as if they ran there), and the filters run; when they
  pass, the filters run again without them. The node passes only if both runs pass, and a failure
  of the first run is the node's status. Only the filters see nominated pods, not the scores.
- ``schedule_one.go`` · ``findNodesThatFitPod``, ``evaluateNominatedNode``: a pod with a
  ``status.nominatedNodeName`` tries that node alone first; when it passes the filters it is the
  only feasible node, and the pod goes there unscored (feature gate PreferNominatedNode, on by
  default from 1.22).
- ``defaultpreemption/default_preemption.go`` · ``PodEligibleToPreemptOthers``: a pod whose
  nominated node holds a lower-priority pod terminating by preemption waits for it and does not
  preempt again — unless the Filter pass found its nominated node ``UnschedulableAndUnresolvable``
  (since 1.19). With PodDisruptionConditions (on from 1.26) only a pod whose ``DisruptionTarget``
  condition says the scheduler preempted it counts; before, any terminating pod.
  ``SelectVictimsOnNode`` filters through ``RunFilterPluginsWithNominatedPods`` as well
  (``defaultpreemption.select_victims``' ``nominated``).

The nominator holds the pods of the scheduler's queue that have a nominated node: here the
scenario's pods with no ``spec.nodeName``, not finished, whose ``status.nominatedNodeName`` is one of
the scenario's nodes and whose ``schedulerName`` is one of the configuration's profiles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from analyzer.scheduling.arith import BoolArray
from analyzer.scheduling.framework import Evaluation, Profile, ReasonFn
from analyzer.scheduling.objects import PodObject
from analyzer.scheduling.plugins.defaultpreemption import UNRESOLVABLE
from analyzer.scheduling.plugins.queuesort import resolve_priority
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion


@dataclass(frozen=True)
class Nominee:
    """A pod of the queue nominated to a node."""

    node: int
    priority: int
    key: str  # namespace/name
    uid: str
    demand: PodDemand


def same_pod(key: str, uid: str, other_key: str, other_uid: str) -> bool:
    """Upstream compares UIDs; a scenario may leave them out, then the namespace/name decides."""
    if uid and other_uid:
        return uid == other_uid
    return key == other_key


def nominees(
    pods: Iterable[PodObject],
    state: ClusterState,
    classes: Mapping[str, PriorityClass],
    scheduler_names: Iterable[str],
) -> list[Nominee]:
    """The pods the scheduler's nominator would hold, in the scenario's order. One pod listed
    twice (the same UID; without one, the same namespace/name) is held once, as the later entry:
    the nominator deletes a pod before it adds it again (``AddNominatedPod``)."""
    position = {name: i for i, name in enumerate(state.node_names)}
    names = set(scheduler_names)
    held: dict[str, Nominee] = {}
    for row, p in enumerate(pods):
        if (
            p.node_name
            or p.terminated
            or p.nominated_node_name not in position
            or p.scheduler_name not in names
        ):
            continue
        key = f"{p.namespace}/{p.name}"
        nominee = Nominee(
            position[p.nominated_node_name],
            resolve_priority(p, classes),
            key,
            p.uid,
            p.demand(state.resources),
        )
        identity = f"uid:{p.uid}" if p.uid else f"name:{key}" if p.name else f"row:{row}"
        held.pop(identity, None)  # re-added last, as upstream's delete-then-add
        held[identity] = nominee
    return list(held.values())


def counted_for(
    queue: Sequence[Nominee], priority: int, key: str, uid: str
) -> dict[int, list[PodDemand]]:
    """Per node, the nominated pods the filters add for a pod of ``priority``: those of equal or
    higher priority, not the pod itself (``addNominatedPods``)."""
    out: dict[int, list[PodDemand]] = {}
    for n in queue:
        if n.priority >= priority and not same_pod(n.key, n.uid, key, uid):
            out.setdefault(n.node, []).append(n.demand)
    return out


def evaluate(
    profile: Profile,
    state: ClusterState,
    pod: PodDemand,
    now: float,
    mask: BoolArray | None,
    nominated: Mapping[int, Sequence[PodDemand]],
) -> Evaluation:
    """``Profile.evaluate`` with each node's nominated pods in its filters, both runs: a node
    the run with them refuses is infeasible with that run's statuses and reasons; the others
    keep the run without them. Scores (and their normalisation over the feasible nodes) are
    those of the state without nominated pods."""
    refused: dict[int, tuple[Evaluation, list[list[str]]]] = {}
    for node, pods in nominated.items():
        if not pods or (mask is not None and not mask[node]):
            continue
        alone = np.zeros(state.node_count, dtype=bool)
        alone[node] = True
        with state.bound_for_now(node, pods):
            first = profile.evaluate(state, pod, now=now, mask=alone)
            if not first.feasible[node]:  # the reasons read the state: taken while it holds them
                said = [[] if ok[node] else fn(node) for ok, fn in first.reason_fns]
                refused[node] = (first, said)
    if not refused:
        return profile.evaluate(state, pod, now=now, mask=mask)
    kept = np.ones(state.node_count, dtype=bool) if mask is None else mask.copy()
    kept[list(refused)] = False
    plain = profile.evaluate(state, pod, now=now, mask=kept)
    return _with_statuses(plain, refused)


def _with_statuses(
    plain: Evaluation, refused: Mapping[int, tuple[Evaluation, list[list[str]]]]
) -> Evaluation:
    """``plain`` with the filter verdicts, reasons and codes of ``refused``'s nodes taken from
    the run with their nominated pods (the same profile, so the same filters in order)."""
    reason_fns: list[tuple[BoolArray, ReasonFn]] = []
    unresolvable: list[BoolArray | None] = []
    for k, ((feasible, fn), codes) in enumerate(
        zip(plain.reason_fns, plain.unresolvable, strict=True)
    ):
        feasible = feasible.copy()
        merged = None if codes is None else codes.copy()
        said: dict[int, list[str]] = {}
        for node, (run, reasons) in refused.items():
            feasible[node] = run.reason_fns[k][0][node]
            said[node] = reasons[k]
            their_codes = run.unresolvable[k]
            if their_codes is not None or merged is not None:
                if merged is None:
                    merged = np.zeros(len(feasible), dtype=bool)
                merged[node] = bool(their_codes is not None and their_codes[node])
        reason_fns.append((feasible, _dispatch(fn, said)))
        unresolvable.append(merged)
    return replace(plain, reason_fns=reason_fns, unresolvable=unresolvable)


def _dispatch(default: ReasonFn, said: Mapping[int, list[str]]) -> ReasonFn:
    def reasons(node: int) -> list[str]:
        return list(said[node]) if node in said else default(node)

    return reasons


def waits_for_victims(
    incoming: PodObject,
    priority: int,
    node: int | None,
    status: str | None,
    pods: Iterable[PodObject],
    classes: Mapping[str, PriorityClass],
    version: KubeVersion,
    disruption_conditions: bool,
) -> bool:
    """``PodEligibleToPreemptOthers``' nominated-node rule: True when the pod, nominated to
    ``node`` (index; None: no nomination on a known node) whose Filter status was ``status``,
    may not preempt because a lower-priority pod there is terminating by preemption."""
    if node is None:
        return False
    if status == UNRESOLVABLE and (version.major, version.minor) >= (1, 19):
        return False
    for p in pods:
        if p.node_name != incoming.nominated_node_name or p.terminated or not p.terminating:
            continue
        if disruption_conditions and not p.preempted:
            continue
        if resolve_priority(p, classes) < priority:
            return True
    return False

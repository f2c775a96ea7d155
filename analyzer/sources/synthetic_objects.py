"""The Kubernetes objects of a generated cluster (``analyzer.sources.synthetic``): the
PodDisruptionBudgets' workloads, the ReplicaSets and StatefulSets owning the pods, and the
snapshot's ``kube_objects.json`` as ``collect --kube-objects`` keeps them.
"""

from __future__ import annotations

from typing import Any

from analyzer.core.kube_objects import kept_objects
from analyzer.sources.lifecycle import Pod
from analyzer.sources.pod_constraints import priority_class_objects
from analyzer.sources.pod_constraints import selector as app_selector


def budget_workloads(pods: list[Pod]) -> list[tuple[str, str, str, int]]:
    """(kind, namespace, name, replicas) of every workload, ``replicas`` being its pods at the end
    of the range as the builder made them (not deleted nor replaced by a rollout): what the
    PodDisruptionBudgets are sized by, known before the loop places the pods (the loop's
    preemption honours them)."""
    replaced = {p.replaces for p in pods if p.replaces is not None}
    running: dict[tuple[str, str, str], int] = {}
    for i, pod in enumerate(pods):
        key = (pod.workload_kind, pod.template.namespace, pod.workload_name)
        running[key] = running.get(key, 0) + int(pod.deleted is None and i not in replaced)
    return [(*key, count) for key, count in running.items()]


def snapshot_objects(
    pods: list[Pod], budgets: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """The snapshot's ``kube_objects.json``: the PDBs of the replicated services (``budgets``,
    ``budget_workloads``), the PriorityClasses and the pods' ReplicaSets and StatefulSets
    (``selector_objects``), as ``collect --kube-objects`` keeps them."""
    return kept_objects([*budgets, *priority_class_objects(), *selector_objects(pods)])


def selector_objects(pods: list[Pod]) -> list[dict[str, Any]]:
    """The ReplicaSets and StatefulSets owning ``pods`` (selector ``app=<workload>``, as
    ``sources.kube_objects`` renders them): what PodTopologySpread's system default constraints
    take their selector from. The generator has no Services or ReplicationControllers."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pod in pods:
        key = (pod.owner_kind, pod.template.namespace, pod.owner_name)
        if pod.owner_kind in ("ReplicaSet", "StatefulSet") and key not in seen:
            seen[key] = {
                "kind": pod.owner_kind,
                "metadata": {"name": pod.owner_name, "namespace": pod.template.namespace},
                "spec": {"selector": app_selector(pod.workload_name)},
            }
    return list(seen.values())

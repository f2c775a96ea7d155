"""Kubernetes objects the scheduler plugins read besides Nodes and Pods (a scenario's ``objects:``).

- Services, ReplicationControllers, ReplicaSets, StatefulSets: PodTopologySpread's system default
  constraints take their selector from the ones that select the pod (``default_selector``).
- Namespaces (labels, for InterPodAffinity's ``namespaceSelector``), PodDisruptionBudgets and
  PriorityClasses (for DefaultPreemption / PrioritySort) are kept for the plugins that need them.

Objects without ``metadata.namespace`` are in namespace ``default``, like pods without one.
``default_selector`` follows kube-scheduler's ``helper.DefaultSelector``: merge the map selectors
of every Service in the pod's namespace whose (non-nil) selector matches the pod's labels; then, if
the pod's controller is a v1 ReplicationController, merge its map selector; if it is an apps/v1
ReplicaSet or StatefulSet, add the requirements of its ``spec.selector``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.label_selectors import (
    LabelSelector,
    parse_label_selector,
    selector_from_map,
)
from analyzer.scheduling.pdb import DisruptionBudget, parse_pdb
from analyzer.scheduling.priority_class import PriorityClass, parse_priority_class
from analyzer.scheduling.spread_types import OwnerRef

DEFAULT_NAMESPACE = "default"
_RC = ("v1", "ReplicationController")
_RS = ("apps/v1", "ReplicaSet")
_STS = ("apps/v1", "StatefulSet")


@dataclass(frozen=True)
class SelectorObject:
    """A Service / RC (map selector, ``None`` when unset) or RS / StatefulSet (label selector)."""

    name: str
    namespace: str
    selector: LabelSelector | None
    labels: Mapping[str, str] = field(default_factory=dict)  # the raw map for Service / RC


@dataclass(frozen=True)
class Namespace:
    """A Namespace's labels."""

    name: str
    labels: Mapping[str, str]


@dataclass
class KubeObjects:
    """Every object of a scenario's ``objects:`` by kind."""

    services: list[SelectorObject] = field(default_factory=list)
    replication_controllers: list[SelectorObject] = field(default_factory=list)
    replica_sets: list[SelectorObject] = field(default_factory=list)
    stateful_sets: list[SelectorObject] = field(default_factory=list)
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    pdbs: list[DisruptionBudget] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)

    def default_selector(
        self, namespace: str, labels: Mapping[str, str], controller: OwnerRef | None
    ) -> LabelSelector:
        """``helper.DefaultSelector`` for a pod (empty selector: nothing selects the pod)."""
        merged: dict[str, str] = {}
        for svc in self.services:
            selects = svc.selector is not None and svc.selector.matches(labels)
            if svc.namespace == namespace and selects:
                merged.update(svc.labels)
        selector = selector_from_map(merged, "services")
        if controller is None:
            return selector
        kind = (controller.api_version, controller.kind)
        if kind == _RC:
            for rc in self.replication_controllers:
                if rc.namespace == namespace and rc.name == controller.name:
                    merged.update(rc.labels)
                    return selector_from_map(merged, "replicationcontrollers")
        elif kind in (_RS, _STS):
            owners = self.replica_sets if kind == _RS else self.stateful_sets
            for owner in owners:
                if owner.namespace == namespace and owner.name == controller.name:
                    if owner.selector is None or owner.selector.nothing:
                        return selector
                    return LabelSelector(selector.requirements + owner.selector.requirements)
        return selector


def _meta(obj: Mapping[str, Any], where: str) -> tuple[str, str, Mapping[str, Any]]:
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
    return name, namespace, meta


def _string_map(raw: Any, where: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping(raw, where).items()}


def _add(objects: KubeObjects, obj: Mapping[str, Any], where: str) -> str | None:
    kind = obj.get("kind")
    name, namespace, meta = _meta(obj, where)
    spec = mapping(obj.get("spec"), f"{where}.spec")
    if kind in ("Service", "ReplicationController"):
        raw = spec.get("selector")
        labels = _string_map(raw, f"{where}.spec.selector")
        selector = None if raw is None else selector_from_map(labels, f"{where}.spec.selector")
        target = objects.services if kind == "Service" else objects.replication_controllers
        target.append(SelectorObject(name, namespace, selector, labels))
    elif kind in ("ReplicaSet", "StatefulSet"):
        selector = parse_label_selector(spec.get("selector"), f"{where}.spec.selector")
        target = objects.replica_sets if kind == "ReplicaSet" else objects.stateful_sets
        target.append(SelectorObject(name, namespace, selector))
    elif kind == "Namespace":
        objects.namespaces[name] = Namespace(
            name, _string_map(meta.get("labels"), f"{where}.metadata.labels")
        )
    elif kind == "PodDisruptionBudget":
        objects.pdbs.append(parse_pdb(obj, where))
    elif kind == "PriorityClass":
        objects.priority_classes[name] = parse_priority_class(obj, where)
    else:
        return f"{where}: kind {kind!r} is not read by the scheduler plugins; ignored"
    return None


def parse_objects(raw: Any, where: str) -> tuple[KubeObjects, list[str]]:
    """A list (or kubectl List) of objects → ``KubeObjects`` and notes about ignored ones."""
    if isinstance(raw, Mapping) and "items" in raw:
        raw = raw.get("items")
    objects = KubeObjects()
    notes = []
    for i, item in enumerate(listing(raw, where)):
        note = _add(objects, mapping(item, f"{where}[{i}]"), f"{where}[{i}]")
        if note:
            notes.append(note)
    return objects, notes

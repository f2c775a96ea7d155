"""Kubernetes objects the scheduler plugins read besides Nodes and Pods (a scenario's ``objects:``).

- Services, ReplicationControllers, ReplicaSets, StatefulSets: PodTopologySpread's system default
  constraints take their selector from the ones that select the pod (``default_selector``).
- Namespaces (labels, for InterPodAffinity's ``namespaceSelector``), PodDisruptionBudgets and
  PriorityClasses (for DefaultPreemption / PrioritySort) are kept for the plugins that need them.

Objects without ``metadata.namespace`` are in namespace ``default``, like pods without one.
``default_selector`` follows kube-scheduler's ``helper.DefaultSelector``: merge the map selectors
of every Service in the pod's namespace whose (non-nil) selector matches the pod's labels; then, if
the pod's controller is a v1 ReplicationController, merge its map selector; if it is an apps/v1
ReplicaSet or StatefulSet, add the requirements of its ``spec.selector``. Lookups go through
an index by namespace (Services) and by (namespace, name) (controllers), built on first use and
rebuilt when a list grows: a 5,000-node cluster has tens of thousands of ReplicaSets.

``from_kept`` reads a snapshot's ``kube_objects.json`` (``core.kube_objects.kept_objects``: the
selector kinds as ``{namespace, name, selector}``, Namespaces as ``{name, labels}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.core.structured import preview
from analyzer.scheduling.fields import listing, mapping, string_map, text
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
    _index: tuple[tuple[int, ...], dict[Any, Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def selecting(self) -> bool:
        """True when some Service, ReplicationController, ReplicaSet or StatefulSet is held."""
        return bool(
            self.services or self.replication_controllers or self.replica_sets or self.stateful_sets
        )

    def _lookup(self) -> dict[Any, Any]:
        lists = (self.services, self.replication_controllers, self.replica_sets, self.stateful_sets)
        sizes = tuple(len(x) for x in lists)
        if self._index is not None and self._index[0] == sizes:
            return self._index[1]
        index: dict[Any, Any] = {}
        for svc in self.services:
            index.setdefault(("svc", svc.namespace), []).append(svc)
        for kind, owners in zip((_RC, _RS, _STS), lists[1:], strict=True):
            for owner in owners:
                index.setdefault((kind, owner.namespace, owner.name), owner)  # first one wins
        self._index = (sizes, index)
        return index

    def default_selector(
        self, namespace: str, labels: Mapping[str, str], controller: OwnerRef | None
    ) -> LabelSelector:
        """``helper.DefaultSelector`` for a pod (empty selector: nothing selects the pod)."""
        index = self._lookup()
        merged: dict[str, str] = {}
        for svc in index.get(("svc", namespace), ()):
            if svc.selector is not None and svc.selector.matches(labels):
                merged.update(svc.labels)
        selector = selector_from_map(merged, "services")
        if controller is None:
            return selector
        kind = (controller.api_version, controller.kind)
        owner = index.get((kind, namespace, controller.name))
        if owner is None:
            return selector
        if kind == _RC:
            merged.update(owner.labels)
            return selector_from_map(merged, "replicationcontrollers")
        if kind in (_RS, _STS):
            if owner.selector is None or owner.selector.nothing:
                return selector
            return LabelSelector(selector.requirements + owner.selector.requirements)
        return selector


def _meta(obj: Mapping[str, Any], where: str) -> tuple[str, str, Mapping[str, Any]]:
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    name = text(meta.get("name"), f"{where}.metadata.name")
    namespace = text(meta.get("namespace"), f"{where}.metadata.namespace") or DEFAULT_NAMESPACE
    return name, namespace, meta


def _add(objects: KubeObjects, obj: Mapping[str, Any], where: str) -> str | None:
    kind = obj.get("kind")
    name, namespace, meta = _meta(obj, where)
    spec = mapping(obj.get("spec"), f"{where}.spec")
    if kind in ("Service", "ReplicationController"):
        raw = spec.get("selector")
        labels = string_map(raw, f"{where}.spec.selector")
        selector = None if raw is None else selector_from_map(labels, f"{where}.spec.selector")
        target = objects.services if kind == "Service" else objects.replication_controllers
        target.append(SelectorObject(name, namespace, selector, labels))
    elif kind in ("ReplicaSet", "StatefulSet"):
        selector = parse_label_selector(spec.get("selector"), f"{where}.spec.selector")
        target = objects.replica_sets if kind == "ReplicaSet" else objects.stateful_sets
        target.append(SelectorObject(name, namespace, selector))
    elif kind == "Namespace":
        objects.namespaces[name] = Namespace(
            name, string_map(meta.get("labels"), f"{where}.metadata.labels")
        )
    elif kind == "PodDisruptionBudget":
        objects.pdbs.append(parse_pdb(obj, where))
    elif kind == "PriorityClass":
        objects.priority_classes[name] = parse_priority_class(obj, where)
    else:
        return f"{where}: kind {preview(kind)} is not read by the scheduler plugins; ignored"
    return None


# the kinds of a snapshot's kube_objects.json that carry a namespace
_NAMESPACED = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet",
               "PodDisruptionBudget")  # fmt: skip


def from_kept(kept: Mapping[str, Sequence[Mapping[str, Any]]], where: str) -> KubeObjects:
    """A snapshot's ``kube_objects.json`` (kind -> kept objects) as ``KubeObjects``; the selector
    kinds may hold ``selector`` (the kept form) or a whole ``spec`` (older files)."""
    items: list[dict[str, Any]] = []
    for kind, objs in sorted(kept.items()):
        for obj in objs:
            if kind in _NAMESPACED:
                meta = {"name": obj.get("name", ""), "namespace": obj.get("namespace", "")}
                spec = obj.get("spec") or (
                    {"selector": obj["selector"]} if "selector" in obj else {}
                )
                items.append({"kind": kind, "metadata": meta, "spec": spec,
                              "status": obj.get("status") or {}})  # fmt: skip
            elif kind == "Namespace":
                meta = {"name": obj.get("name", ""), "labels": obj.get("labels") or {}}
                items.append({"kind": kind, "metadata": meta})
            elif kind == "PriorityClass":
                body = {k: v for k, v in obj.items() if k != "name"}
                items.append({"kind": kind, "metadata": {"name": obj.get("name", "")}, **body})
    objects, _notes = parse_objects(items, where)
    return objects


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

"""Read ``kubectl get deploy,sts,ds,rs,job,cronjob,svc,ns,nodes,pdb,priorityclass -A -o json``.

``collect --kube-objects FILE|DIR`` takes one JSON file, or a folder of ``*.json`` files, each a
``List`` (what ``kubectl get ... -o json`` prints for several kinds) or a single object. The
objects are indexed by kind, namespace and name (``KubeObjects``); ``analyzer.collect.enrich``
then gives each snapshot pod its owner's pod template and each node its labels and taints.

Only what scheduling reads is kept of a pod template (``TemplateFields``): affinity,
topologySpreadConstraints, tolerations, nodeSelector, priorityClassName (and the pod labels, for
selectors). The fields are checked as the scheduler would read them (``parse_pod_constraints``),
so a malformed template fails here with one line naming the object, not later in a replay.

The snapshot's ``kube_objects.json`` keeps (``kept``) PodDisruptionBudgets and PriorityClasses
(preemption), Namespaces (labels, for namespaceSelector) and, for PodTopologySpread's system
default constraints (``helper.DefaultSelector``), Services, ReplicationControllers, ReplicaSets
and StatefulSets as namespace, name and selector only. A ReplicaSet (or ReplicationController)
scaled to 0 that no snapshot pod names as its owner is left out: DefaultSelector looks a
controller up only from a pod's ownerReference, so no replayed pod can reach it (a 5,000-node
cluster keeps ~10 old ReplicaSets per Deployment).

Bad input is one line, exit 2: a file that is not JSON (read through ``core.structured``: nesting
bounded, bad UTF-8 named), JSON that is neither a List nor an object with a ``kind``, an object
without ``metadata.name``, and any field the collector reads holding the wrong type (``labels`` as
a list, ``replicas`` as text, a label value that is a mapping): every field is read through the
typed accessors of ``scheduling.fields`` when the object is read, naming the object and the field.
Kinds the collector does not use (ConfigMaps, Endpoints, ...) are skipped and counted in a note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.kube_objects import kept_objects
from analyzer.core.structured import load_json, plain
from analyzer.scheduling.affinity_types import parse_pod_affinity
from analyzer.scheduling.constraint_types import parse_pod_constraints, parse_taints
from analyzer.scheduling.fields import (
    integer,
    listing,
    mapping,
    optional_integer,
    string_map,
    text,
)
from analyzer.scheduling.host_ports import host_ports_json, pod_host_ports
from analyzer.scheduling.kube_objects import parse_objects
from analyzer.scheduling.plugins.imagelocality import container_images, pod_images_json
from analyzer.scheduling.spread_types import parse_spread_constraints

# The kinds read; template kinds hold a pod template (CronJob: spec.jobTemplate.spec.template).
TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
KINDS = (*TEMPLATE_KINDS, "Pod", "Node", "PodDisruptionBudget", "PriorityClass", "Service",
         "ReplicationController", "Namespace")  # fmt: skip
# Kinds kept in the snapshot's kube_objects.json: priorities and budgets (preemption), the
# objects PodTopologySpread's default selector reads, Namespaces (InterPodAffinity)
KEPT_KINDS = ("PodDisruptionBudget", "PriorityClass", "Service", "ReplicationController",
              "ReplicaSet", "StatefulSet", "Namespace")  # fmt: skip
_CLUSTER_SCOPED = ("Node", "PriorityClass", "Namespace")
_SCALED_DOWN_DROPPED = ("ReplicaSet", "ReplicationController")


@dataclass(frozen=True)
class TemplateFields:
    """The scheduling fields of a pod spec, as JSON-ready values (empty = not set)."""

    affinity: Mapping[str, Any] = field(default_factory=dict)
    topology_spread: tuple[Mapping[str, Any], ...] = ()
    tolerations: tuple[Mapping[str, str], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    priority_class: str = ""
    priority: int | None = None  # spec.priority (a Pod object; templates leave it unset)
    labels: Mapping[str, str] = field(default_factory=dict)
    container_images: str = "{}"  # the pods.container_images cell (ImageLocality)
    host_ports: str = "[]"  # the pods.host_ports cell (NodePorts; hostNetwork: containerPorts)


@dataclass(frozen=True)
class Owner:
    """A controller ownerReference: kind and name (same namespace)."""

    kind: str
    name: str


@dataclass
class KubeObjects:
    """The objects read, indexed: ``(kind, namespace, name) -> object`` and per kind lists."""

    by_key: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    pods_by_uid: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    files: int = 0

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object of ``kind`` named ``name`` (namespace ignored for cluster-scoped kinds)."""
        return self.by_key.get((kind, "" if kind in _CLUSTER_SCOPED else namespace, name))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Every object of ``kind``, in the order read."""
        return [obj for (k, _, _), obj in self.by_key.items() if k == kind]

    def count(self, kind: str) -> int:
        """How many objects of ``kind`` were read."""
        return sum(1 for k, _, _ in self.by_key if k == kind)

    def notes(self) -> list[str]:
        """One line about skipped kinds (empty when none)."""
        if not self.skipped:
            return []
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(self.skipped.items()))
        return [f"--kube-objects: skipped kinds the collector does not read: {kinds}"]

    def priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value."""
        out = {}
        for obj in self.of_kind("PriorityClass"):
            value = obj.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                out[_name(obj)] = value
        return out

    def global_default(self) -> tuple[str, int] | None:
        """The PriorityClass with ``globalDefault: true`` (highest value if several)."""
        found = [
            (integer(obj.get("value"), f"PriorityClass {_name(obj)}.value"), _name(obj))
            for obj in self.of_kind("PriorityClass")
            if obj.get("globalDefault") is True
        ]
        if not found:
            return None
        value, name = max(found)
        return name, value

    def kept(
        self, owners: set[tuple[str, str, str]] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """The ``KEPT_KINDS``, trimmed to what scheduling reads (``core.kube_objects.kept_objects``).

        ``owners``: the snapshot pods' (owner kind, namespace, owner name); a ReplicaSet or
        ReplicationController with 0 replicas that none of them names is left out (None: keep
        every one)."""
        kept = []
        for kind in KEPT_KINDS:
            for obj in self.of_kind(kind):
                if owners is not None and kind in _SCALED_DOWN_DROPPED and _scaled_down(obj):
                    meta = obj.get("metadata") or {}
                    key = (kind, str(meta.get("namespace") or "default"), _name(obj))
                    if key not in owners:
                        continue
                kept.append(obj)
        return kept_objects(kept)


def _name(obj: Mapping[str, Any]) -> str:
    return text(mapping(obj.get("metadata"), "metadata").get("name"), "metadata.name")


def _scaled_down(obj: Mapping[str, Any], where: str = "") -> bool:
    """``spec.replicas`` and ``status.replicas`` both 0 (absent spec.replicas means 1)."""
    spec = mapping(obj.get("spec"), f"{where}.spec")
    status = mapping(obj.get("status"), f"{where}.status")
    replicas = optional_integer(spec.get("replicas"), f"{where}.spec.replicas")
    running = optional_integer(status.get("replicas"), f"{where}.status.replicas")
    return replicas == 0 and not running


def controller_of(obj: Mapping[str, Any], where: str = "") -> Owner | None:
    """The controller ownerReference of ``obj`` (the first owner when none is marked)."""
    at = f"{where}.metadata.ownerReferences"
    refs = listing(mapping(obj.get("metadata"), f"{where}.metadata").get("ownerReferences"), at)
    refs = [mapping(ref, f"{at}[{i}]") for i, ref in enumerate(refs)]
    chosen = next((r for r in refs if r.get("controller") is True), refs[0] if refs else None)
    if chosen is None:
        return None
    i = refs.index(chosen)
    return Owner(
        text(chosen.get("kind"), f"{at}[{i}].kind"), text(chosen.get("name"), f"{at}[{i}].name")
    )


def pod_template_spec(
    obj: Mapping[str, Any], where: str = ""
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(template metadata, template spec) of a workload object (CronJob through its jobTemplate)."""
    spec = mapping(obj.get("spec"), f"{where}.spec")
    at = f"{where}.spec"
    if obj.get("kind") == "CronJob":
        job = mapping(spec.get("jobTemplate"), f"{at}.jobTemplate")
        spec, at = mapping(job.get("spec"), f"{at}.jobTemplate.spec"), f"{at}.jobTemplate.spec"
    if obj.get("kind") == "Pod":
        return mapping(obj.get("metadata"), f"{where}.metadata"), spec
    template = mapping(spec.get("template"), f"{at}.template")
    return (
        mapping(template.get("metadata"), f"{at}.template.metadata"),
        mapping(template.get("spec"), f"{at}.template.spec"),
    )


def template_fields(obj: Mapping[str, Any], where: str) -> TemplateFields:
    """The scheduling fields of a workload's pod template (or a Pod's spec), checked: each read
    through a typed accessor, and spread and pod affinity parsed as the replay will parse them."""
    meta, spec = pod_template_spec(obj, where)
    pod = obj.get("kind") == "Pod"
    at = f"{where}.spec" if pod else f"{where} pod template"
    labels = string_map(meta.get("labels"), f"{where}.metadata.labels" if pod else f"{at}.labels")
    parse_pod_constraints(spec, at)  # tolerations, nodeSelector, required node affinity: valid
    affinity = mapping(spec.get("affinity"), f"{at}.affinity")
    spread = listing(spec.get("topologySpreadConstraints"), f"{at}.topologySpreadConstraints")
    for i, constraint in enumerate(spread):
        constraint = mapping(constraint, f"{at}.topologySpreadConstraints[{i}]")
        if not constraint.get("topologyKey") or not isinstance(constraint.get("maxSkew"), int):
            raise InputError(
                f"{at}.topologySpreadConstraints[{i}]: needs topologyKey and an integer maxSkew"
            )
    parse_spread_constraints(spec, at)
    namespace = text(mapping(obj.get("metadata"), f"{where}.metadata").get("namespace"), "")
    parse_pod_affinity(spec, at, namespace or "default", labels)
    tolerations = []
    for i, item in enumerate(listing(spec.get("tolerations"), f"{at}.tolerations")):
        item = mapping(item, f"{at}.tolerations[{i}]")
        entry = {
            k: text(item[k], f"{at}.tolerations[{i}].{k}")
            for k in ("key", "operator", "value", "effect")
            if item.get(k)
        }
        if entry.get("key") and "operator" not in entry:
            entry["operator"] = "Equal"  # core/v1: empty operator means Equal
        tolerations.append(entry)
    return TemplateFields(
        affinity=dict(affinity),
        topology_spread=tuple(dict(c) for c in spread),
        tolerations=tuple(tolerations),
        node_selector=string_map(spec.get("nodeSelector"), f"{at}.nodeSelector"),
        priority_class=text(spec.get("priorityClassName"), f"{at}.priorityClassName"),
        priority=optional_integer(spec.get("priority"), f"{at}.priority"),
        labels=labels,
        container_images=pod_images_json(
            container_images(
                listing(spec.get("containers"), f"{at}.containers"), f"{at}.containers"
            ),
            container_images(
                listing(spec.get("initContainers"), f"{at}.initContainers"), f"{at}.initContainers"
            ),
        ),
        host_ports=host_ports_json(pod_host_ports(spec, at)),
    )


def node_fields(obj: Mapping[str, Any], where: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A Node's labels and taints (``{key, value, effect}``, unset fields empty strings)."""
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    labels = string_map(meta.get("labels"), f"{where}.metadata.labels")
    spec = mapping(obj.get("spec"), f"{where}.spec")
    taints = parse_taints(spec.get("taints"), f"{where}.spec.taints")
    return labels, [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        if not found:
            raise InputError(
                f"--kube-objects: {path} holds no .json file; write one with "
                "'kubectl get deploy,sts,ds,rs,job,cronjob,svc,ns,nodes,pdb,priorityclass -A -o json'"
            )
        return found
    if not path.is_file():
        raise InputError(f"--kube-objects: {path} does not exist (give a .json file or a folder)")
    return [path]


def _items(data: Any, where: str) -> Iterator[tuple[str, Any]]:
    """The objects of one file: a List's items (nested Lists too) or the object itself."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise InputError(
            f"{where}: not a Kubernetes List or object (no 'kind'); give the output of "
            "'kubectl get ... -o json'"
        )
    kind = data["kind"]
    if kind == "List" or kind.endswith("List"):
        items = data.get("items")
        if not isinstance(items, list):
            raise InputError(f"{where}: a {kind} without an 'items' list")
        for i, item in enumerate(items):
            yield from _items(item, f"{where} items[{i}]")
    else:
        yield where, data


def read_kube_objects(path: Path) -> KubeObjects:
    """Read and index every object of ``path`` (a file or a folder of ``*.json`` files)."""
    objects = KubeObjects()
    for file in _files(Path(path)):
        try:  # core.structured: nesting bounded, bad UTF-8 and syntax errors on one line
            data = load_json(file, what="--kube-objects")
        except InputError as exc:
            raise InputError(f"{exc}; write it with 'kubectl get ... -o json'") from None
        objects.files += 1
        for where, obj in _items(data, str(file)):
            add_object(objects, obj, where)
    return objects


def add_object(objects: KubeObjects, obj: Mapping[str, Any], where: str) -> None:
    """Index one object (checked); kinds not in ``KINDS`` are counted in ``skipped``."""
    kind = str(obj.get("kind"))
    if kind not in KINDS:
        objects.skipped[kind] += 1
        return
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise InputError(f"{where}: a {kind} without metadata.name")
    name = text(meta["name"], f"{where}.metadata.name")
    namespace = text(meta.get("namespace"), f"{where}.metadata.namespace")
    namespace = "" if kind in _CLUSTER_SCOPED else namespace or "default"
    shown = plain(f"{namespace}/{name}" if namespace else name)
    label = f"{where} ({kind} {shown})"
    # every field read later (enrich, kept, the owner chain) is read once here, typed
    text(meta.get("uid"), f"{label}.metadata.uid")
    string_map(meta.get("labels"), f"{label}.metadata.labels")
    string_map(meta.get("annotations"), f"{label}.metadata.annotations")
    controller_of(obj, label)
    if kind in _SCALED_DOWN_DROPPED:
        _scaled_down(obj, label)
    if kind in (*TEMPLATE_KINDS, "Pod"):
        template_fields(obj, label)
    elif kind == "Node":
        node_fields(obj, label)
    elif kind == "PriorityClass":
        integer(obj.get("value"), f"{label}.value")
    if kind in KEPT_KINDS:  # what the replay will read of it, checked now (one line, exit 2)
        parse_objects([obj], label)
    stored = dict(obj)
    objects.by_key[(kind, namespace, name)] = stored
    if kind == "Pod" and meta.get("uid"):  # text, checked above
        objects.pods_by_uid[str(meta["uid"])] = stored

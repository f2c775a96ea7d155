"""Give a snapshot's pods their owner's pod template and its nodes their labels and taints.

kube-state-metrics exports no affinity and no topology spread constraints; ``collect
--kube-objects`` reads them from the workload objects (``analyzer.collect.kube_objects``). Each
pod is matched to a template through its owner chain, most exact first:

1. the Pod object itself (by uid, else namespace/name), when the objects include pods;
2. its controller owner from the snapshot (``owner_kind``/``owner_name``): a ReplicaSet, a
   StatefulSet, a DaemonSet or a Job, whose template is the pod's revision;
3. the workload (``workload_kind``/``workload_name``, i.e. pod -> RS -> Deployment, pod -> Job ->
   CronJob, resolved from the owner objects when they are there): the Deployment's or the
   CronJob's current template, when the ReplicaSet or Job is gone.

Per field the rule is: what Prometheus observed on the pod stays (``metrics``: tolerations and
nodeSelector when kube-state-metrics exported them, labels when ``kube_pod_labels`` had them);
the template fills what metrics cannot say (``objects``: affinity, topologySpreadConstraints, and
the others when not exported); a value derived by a rule is ``inferred`` (a priority from the
built-in table, ``--priority-class``, or a ``globalDefault`` PriorityClass for a pod without a
class); ``none`` when nothing said anything. Each pod's sources are its ``field_sources`` column;
``meta.json`` ``extra.field_sources`` counts them per field. Nodes with a Node object take its
labels (all of them, not only the allowlisted ones) and taints (without the transient
``node.kubernetes.io/*`` condition taints, as the metrics path).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

import pandas as pd

from analyzer.collect.constraints import CONDITION_TAINT_PREFIX
from analyzer.collect.kube_objects import (
    KubeObjects,
    TemplateFields,
    controller_of,
    template_fields,
)
from analyzer.collect.usage import POOL_LABELS
from analyzer.core.snapshot import Snapshot, make_snapshot
from analyzer.scheduling.plugins.imagelocality import node_images_json

POD_FIELDS = (
    "tolerations",
    "node_selector",
    "affinity",
    "topology_spread",
    "labels",
    "priority",
    "container_images",
    "host_ports",
)
NODE_FIELDS = ("labels", "taints", "images")
# snapshot queries whose series mean kube-state-metrics exported the field for every pod
_OBSERVED_BY = {"tolerations": "pod_tolerations", "node_selector": "pod_nodeselectors"}


def _exported(snapshot: Snapshot, field: str) -> bool:
    """Whether kube-state-metrics exported ``field`` (its query had series; without coverage
    data, whether any pod has a value)."""
    queries = snapshot.meta.coverage.get("queries", {})
    query = queries.get(_OBSERVED_BY[field])
    if isinstance(query, dict) and "series" in query:
        return bool(query.get("series"))
    return bool((~snapshot.pods[field].fillna("").isin(["", "[]", "{}"])).any())


class _Resolver:
    """Pod row -> the object whose template it runs (cached per owner)."""

    def __init__(self, objects: KubeObjects) -> None:
        self.objects = objects
        self.cache: dict[tuple[str, str, str], TemplateFields | None] = {}
        self.owners: dict[tuple[str, str, str], tuple[str, str] | None] = {}

    def fields_of(self, kind: str, namespace: str, name: str) -> TemplateFields | None:
        key = (kind, namespace, name)
        if key not in self.cache:
            obj = self.objects.get(kind, namespace, name)
            self.cache[key] = None if obj is None else template_fields(obj, f"{kind} {name}")
        return self.cache[key]

    def workload(self, kind: str, namespace: str, name: str) -> tuple[str, str] | None:
        """RS -> Deployment, Job -> CronJob through the owner objects' ownerReferences."""
        key = (kind, namespace, name)
        if key not in self.owners:
            obj = self.objects.get(kind, namespace, name)
            owner = controller_of(obj) if obj is not None else None
            found = owner is not None and owner.kind in ("Deployment", "CronJob")
            self.owners[key] = (owner.kind, owner.name) if found and owner else None
        return self.owners[key]

    def resolve(self, row: dict[str, Any]) -> tuple[TemplateFields | None, tuple[str, str] | None]:
        """The pod's template fields and, when the owner objects say so, its workload."""
        namespace = str(row["namespace"] or "")
        obj = self.objects.pods_by_uid.get(str(row["uid"])) or self.objects.get(
            "Pod", namespace, str(row["name"] or "")
        )
        kind, name = str(row["owner_kind"] or ""), str(row["owner_name"] or "")
        workload = self.workload(kind, namespace, name) if kind in ("ReplicaSet", "Job") else None
        if obj is not None:
            return template_fields(obj, f"Pod {namespace}/{row['name']}"), workload
        if kind and kind != "Node":
            found = self.fields_of(kind, namespace, name)
            if found is not None:
                return found, workload
        wkind, wname = workload or (
            str(row["workload_kind"] or ""),
            str(row["workload_name"] or ""),
        )
        if wkind in ("Deployment", "CronJob", "StatefulSet", "DaemonSet", "Job"):
            return self.fields_of(wkind, namespace, wname), workload
        return None, workload


# the pods columns enrich_pods reads
_POD_INPUT = (
    "uid",
    "namespace",
    "name",
    "owner_kind",
    "owner_name",
    "workload_kind",
    "workload_name",
    "priority_class",
    "priority",
    "tolerations",
    "node_selector",
    "affinity",
    "topology_spread",
    "labels",
    "container_images",
    "host_ports",
)


def _is_empty(text: object) -> bool:
    return not isinstance(text, str) or text.strip() in ("", "[]", "{}", "null")


def enrich_pods(
    pods: pd.DataFrame, objects: KubeObjects, exported: dict[str, bool]
) -> tuple[pd.DataFrame, Counter[tuple[str, str]], list[str]]:
    """The pods table with template fields filled, per-field source counts, warnings."""
    pods = pods.copy()
    resolver = _Resolver(objects)
    values = objects.priority_values()
    default = objects.global_default()
    counts: Counter[tuple[str, str]] = Counter()
    unmatched: list[str] = []
    columns: dict[str, list[Any]] = {
        name: [] for name in (*POD_FIELDS, "workload_kind", "workload_name", "field_sources")
    }
    texts: dict[int, dict[str, str]] = {}  # per template: its fields as JSON cells
    source_texts: dict[tuple[tuple[str, str], ...], str] = {}

    def cells(fields: TemplateFields) -> dict[str, str]:
        if id(fields) not in texts:
            texts[id(fields)] = {
                "tolerations": json.dumps(list(fields.tolerations), sort_keys=True),
                "node_selector": json.dumps(dict(fields.node_selector), sort_keys=True),
                "affinity": json.dumps(dict(fields.affinity), sort_keys=True),
                "topology_spread": json.dumps(
                    [dict(c) for c in fields.topology_spread], sort_keys=True
                ),
                "labels": json.dumps(dict(fields.labels), sort_keys=True),
            }
        return texts[id(fields)]

    names = [c for c in _POD_INPUT if c in pods.columns]
    rows = (
        dict(zip(names, values, strict=True))
        for values in zip(*(pods[c].tolist() for c in names), strict=True)
    )
    for row in rows:
        fields, workload = resolver.resolve(row)
        cell = cells(fields) if fields is not None else {}
        sources: dict[str, str] = {}
        if fields is None and str(row["owner_kind"] or "") not in ("Node",):
            unmatched.append(f"{row['namespace']}/{row['name']}")
        for name in ("tolerations", "node_selector"):
            current = row.get(name)
            if exported.get(name):
                columns[name].append(current)
                sources[name] = "metrics"
            elif fields is not None:
                columns[name].append(cell[name])
                sources[name] = "objects"
            else:
                columns[name].append(current)
                sources[name] = "none"
        if fields is None:
            columns["affinity"].append(row.get("affinity") or "{}")
            columns["topology_spread"].append(row.get("topology_spread") or "[]")
            sources["affinity"] = sources["topology_spread"] = "none"
        else:
            columns["affinity"].append(cell["affinity"])
            columns["topology_spread"].append(cell["topology_spread"])
            sources["affinity"] = sources["topology_spread"] = "objects"
        labels = row.get("labels")
        if not _is_empty(labels):
            columns["labels"].append(labels)
            sources["labels"] = "metrics"
        elif fields is not None and fields.labels:
            columns["labels"].append(cell["labels"])
            sources["labels"] = "objects"
        else:
            columns["labels"].append(labels if isinstance(labels, str) else "{}")
            sources["labels"] = "none"
        images = row.get("container_images")
        if not _is_empty(images):
            columns["container_images"].append(images)
            sources["container_images"] = "metrics"
        elif fields is not None and not _is_empty(fields.container_images):
            columns["container_images"].append(fields.container_images)
            sources["container_images"] = "objects"
        else:
            columns["container_images"].append("{}")
            sources["container_images"] = "none"
        # host ports: no kube-state-metrics series carries container ports, so only the objects
        # (the pod's or its owner's template) know them; a pod without objects keeps its cell
        ports = row.get("host_ports")
        if fields is not None:
            columns["host_ports"].append(fields.host_ports)
            sources["host_ports"] = "objects"
        else:
            columns["host_ports"].append(ports if isinstance(ports, str) and ports else "[]")
            sources["host_ports"] = "none"
        raw_class = row.get("priority_class")  # <NA> when kube_pod_info had no class label
        klass = (raw_class if isinstance(raw_class, str) else "") or (
            fields.priority_class if fields else ""
        )
        priority = row.get("priority")
        if fields is not None and fields.priority is not None:
            priority, sources["priority"] = fields.priority, "objects"
        elif klass in values:
            priority, sources["priority"] = values[klass], "objects"
        elif not klass and default is not None:
            priority, sources["priority"] = default[1], "inferred"
        else:
            sources["priority"] = "none" if pd.isna(priority) else "inferred"
        columns["priority"].append(None if priority is None or pd.isna(priority) else int(priority))
        wkind, wname = workload or (row["workload_kind"], row["workload_name"])
        columns["workload_kind"].append(wkind)
        columns["workload_name"].append(wname)
        key = tuple(sorted(sources.items()))
        if key not in source_texts:
            source_texts[key] = json.dumps(dict(key), sort_keys=True)
        columns["field_sources"].append(source_texts[key])
        counts.update(sources.items())
    for name, column in columns.items():
        pods[name] = pd.Series(
            column, index=pods.index, dtype="Int64" if name == "priority" else "string"
        )
    warnings = []
    if unmatched:
        warnings.append(
            f"--kube-objects: {len(unmatched)} of {len(pods)} pods match no owner or Pod object "
            f"(e.g. {unmatched[0]}); their affinity and spread constraints are unknown"
        )
    return pods, counts, warnings


def enrich_nodes(
    nodes: pd.DataFrame, objects: KubeObjects
) -> tuple[pd.DataFrame, Counter[tuple[str, str]]]:
    """The nodes table with labels, pool and taints of the Node objects; source counts."""
    nodes = nodes.copy()
    counts: Counter[tuple[str, str]] = Counter()
    labels_col, taints_col, pools, images_col = [], [], [], []
    for row in nodes.to_dict("records"):
        obj = objects.get("Node", "", str(row["node"]))
        if obj is None:
            labels_col.append(row.get("labels") or "{}")
            taints_col.append(row.get("taints") or "[]")
            pools.append(row.get("pool"))
            images_col.append(row.get("images") or "[]")
            counts.update(
                {("labels", "metrics"): 1, ("taints", "metrics"): 1, ("images", "none"): 1}
            )
            continue
        meta = obj.get("metadata") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        taints = [
            {
                "key": str(t.get("key", "")),
                "value": str(t.get("value") or ""),
                "effect": str(t.get("effect") or ""),
            }
            for t in (obj.get("spec") or {}).get("taints") or []
            if not str(t.get("key", "")).startswith(CONDITION_TAINT_PREFIX)
        ]
        labels_col.append(json.dumps(labels, sort_keys=True))
        taints_col.append(
            json.dumps(sorted(taints, key=lambda t: (t["key"], t["value"], t["effect"])))
        )
        pool = row.get("pool")
        if pd.isna(pool) or not pool:
            pool = next((labels[k] for k in POOL_LABELS if k in labels), pool)
        pools.append(pool)
        images_col.append(node_images_json((obj.get("status") or {}).get("images")))
        counts.update(
            {("labels", "objects"): 1, ("taints", "objects"): 1, ("images", "objects"): 1}
        )
    nodes["labels"] = pd.Series(labels_col, index=nodes.index, dtype="string")
    nodes["taints"] = pd.Series(taints_col, index=nodes.index, dtype="string")
    nodes["pool"] = pd.Series(pools, index=nodes.index, dtype="string")
    nodes["images"] = pd.Series(images_col, index=nodes.index, dtype="string")
    return nodes, counts


def _by_field(
    counts: Counter[tuple[str, str]], fields: tuple[str, ...]
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {f: {} for f in fields}
    for (name, source), n in sorted(counts.items()):
        out.setdefault(name, {})[source] = n
    return out


def enrich_snapshot(snapshot: Snapshot, objects: KubeObjects) -> tuple[Snapshot, list[str]]:
    """``snapshot`` with its pods' template fields and nodes' labels and taints from ``objects``,
    ``kube_objects.json`` holding the kept objects (``KubeObjects.kept``); and warnings."""
    exported = {name: _exported(snapshot, name) for name in _OBSERVED_BY}
    pods, pod_counts, warnings = enrich_pods(snapshot.pods, objects, exported)
    nodes, node_counts = enrich_nodes(snapshot.nodes, objects)
    warnings = [*objects.notes(), *warnings]
    extra = dict(snapshot.meta.extra)
    extra["field_sources"] = {
        "pods": _by_field(pod_counts, POD_FIELDS),
        "nodes": _by_field(node_counts, NODE_FIELDS),
    }
    extra["kube_objects"] = {
        "files": objects.files,
        "objects": {
            kind: objects.count(kind) for kind in sorted({k for k, _, _ in objects.by_key})
        },
        "skipped": dict(sorted(objects.skipped.items())),
    }
    columns = [pods[c].fillna("").astype(str) for c in ("owner_kind", "namespace", "owner_name")]
    owners = {(k, ns or "default", n) for k, ns, n in zip(*columns, strict=True)}
    kept = objects.kept(owners)
    # what kube_objects.json holds; ReplicaSets / RCs scaled to 0 and owning no pod are dropped
    extra["kube_objects"]["kept"] = {kind: len(items) for kind, items in sorted(kept.items())}
    meta = replace(snapshot.meta, extra=extra, warnings=[*snapshot.meta.warnings, *warnings])
    # the node-state intervals (taints, cordons, not-ready over time) are the collect's, not the
    # objects': kept as they are, or the replay would fall back to the nodes' last taints
    enriched = make_snapshot(
        meta,
        nodes,
        pods,
        snapshot.node_usage,
        snapshot.pod_usage,
        objects=kept,
        node_state=snapshot.node_state,
    )
    return enriched, warnings

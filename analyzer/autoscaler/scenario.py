"""``analyzer autoscale`` scenarios: Kubernetes-shaped objects → ``Cluster`` → the decision.

Scenario (YAML or JSON; issue 25; extra keys are noted and ignored)::

    autoscaler: cluster-autoscaler        # or karpenter
    kubernetesVersion: "1.33"             # optional: the scheduler filters' and CA's version
    now: "2026-11-01T12:00:00Z"           # optional: for long-terminating pods (default: clock)
    options: {flag: value, ...}           # CA flags by name (``options.FLAGS``)
    nodeGroups: [{name, minSize, maxSize, nodes: [...], options: {...}}]
    deletionsInProgress: {empty: 0, drain: 0}  # CA's deletions started earlier, not yet done
    nodes: [Node, ...]
    pods: [Pod, ...]                      # spec.nodeName binds them
    objects: [PodDisruptionBudget, ReplicaSet, StatefulSet, Job, DaemonSet, ...]
    nodePool: {...}                       # karpenter (``karpenter.py``)

Without ``nodeGroups`` every node is in one group ``default`` with minSize 0. Without ``objects``
CA has no listers to ask, so the controller checks (``ControllerNotFound``,
``MinReplicasReached``) are skipped, as upstream does with nil listers; with ``objects`` a pod's
controller missing from them is ``ControllerNotFound``. Succeeded and Failed pods are not in CA's
snapshot (its scheduled-pod lister selects them out) and are noted and left out, as are, for
cluster-autoscaler, expendable pods (spec.priority below ``expendable-pods-priority-cutoff``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.autoscaler.cluster import CANode, Cluster, NodeGroup
from analyzer.autoscaler.daemon_overhead import Daemon, daemons, overhead
from analyzer.autoscaler.drainability import Controllers
from analyzer.autoscaler.nodepool import NodePool, Shape, parse_node_pool
from analyzer.autoscaler.options import NOT_FLAGS, CAOptions, parse_options
from analyzer.autoscaler.pods import CAPod, parse_ca_pod
from analyzer.autoscaler.release import expendable_needs_preemption, parse_release
from analyzer.core.durations import parse_time
from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_yaml_or_json, plain, preview
from analyzer.scheduling.config import build_profile
from analyzer.scheduling.constraint_types import Taint
from analyzer.scheduling.fields import listing, mapping, optional_integer
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.objects import parse_node
from analyzer.scheduling.pdb import disruption_budgets
from analyzer.scheduling.plugins.queuesort import (
    priority_classes,
    resolve_preemption_policy,
    resolve_priority,
)
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.strategies import strategy_config
from analyzer.scheduling.versions import KubeVersion, parse_version

AUTOSCALERS = ("cluster-autoscaler", "karpenter")
KEYS = (
    "autoscaler",
    "kubernetesVersion",
    "clusterAutoscalerVersion",
    "now",
    "options",
    "nodeGroups",
    "deletionsInProgress",
    "nodes",
    "pods",
    "objects",
    "nodePool",
)
CONTROLLER_KINDS = ("ReplicaSet", "ReplicationController", "StatefulSet", "Job", "DaemonSet")


@dataclass
class AutoscaleScenario:
    """A loaded scenario: the cluster, the options, the scheduler profile for "fits"."""

    autoscaler: str
    version: KubeVersion
    cluster: Cluster
    options: CAOptions
    profile: Profile
    now: float
    node_pool: NodePool = field(default_factory=NodePool)
    notes: list[str] = field(default_factory=list)
    # (empty, drained) deletions CA started at earlier loops and has not finished: they take
    # from this loop's budgets (``planner.select``)
    in_progress: tuple[int, int] = (0, 0)
    # pods not bound (no spec.nodeName), neither finished nor being deleted: Karpenter's
    # consolidation simulation schedules them with the candidates' pods (``SimulateScheduling``)
    pending: list[CAPod] = field(default_factory=list)
    # Karpenter: one pod per DaemonSet (``daemon_overhead.daemons``), what a new node holds
    # beside the pods it is launched for
    daemons: tuple[Daemon, ...] = ()
    _overheads: dict[int, dict[str, int]] = field(default_factory=dict, repr=False)

    def overhead(self, shape: Shape) -> dict[str, int]:
        """The daemon overhead of a new node of ``shape`` (``daemon_overhead.overhead``)."""
        found = self._overheads.get(id(shape))
        if found is None:
            found = self._overheads[id(shape)] = overhead(self.daemons, self.node_pool, shape)
        return found


def _not_provisionable(raw: Any, pod: CAPod) -> str:
    """Why Karpenter would not schedule a pod that is not bound (``pod.IsProvisionable``), ""
    where it would: owned by a DaemonSet or a Node, nominated to a node by a preemption
    (``status.nominatedNodeName``), or with a ``PodScheduled`` condition whose reason is not
    ``Unschedulable`` (not yet failed by the scheduler, or gated). A pod given with no such
    condition is read as one the scheduler failed: a scenario's shorthand for a pending pod."""
    owners = pod.obj.owner_kinds
    if "DaemonSet" in owners or "Node" in owners:
        return f"is owned by a {'DaemonSet' if 'DaemonSet' in owners else 'Node'}"
    status = raw.get("status") if isinstance(raw, Mapping) else None
    status = status if isinstance(status, Mapping) else {}
    if status.get("nominatedNodeName"):
        return f"is nominated to {status['nominatedNodeName']} (preempting)"
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, Mapping) and cond.get("type") == "PodScheduled":
            if cond.get("reason") != "Unschedulable":
                return f"its PodScheduled condition's reason is {preview(cond.get('reason'))}"
            return ""
    return ""


def _nominated(raw: Any) -> str:
    """The pod's ``status.nominatedNodeName`` ("" when none or not a string)."""
    status = raw.get("status") if isinstance(raw, Mapping) else None
    name = status.get("nominatedNodeName") if isinstance(status, Mapping) else None
    return name if isinstance(name, str) else ""


def _condition(raw: Any, kind: str) -> str | None:
    """A node's ``kind`` condition status as given (None: no such condition; the node's status
    was checked a mapping by ``parse_node``)."""
    status = raw.get("status") if isinstance(raw, Mapping) else None
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return str(cond.get("status"))
    return None


NOT_READY_TAINTS = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
)


def _deleting(raw: Any) -> bool:
    """Whether a Node object's ``metadata.deletionTimestamp`` is set (its deletion began)."""
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    return isinstance(meta, dict) and meta.get("deletionTimestamp") is not None


def _readiness(raw: Any, taints: Sequence[Taint]) -> bool:
    """``kube_util.GetNodeReadiness``' ``Ready``: a Ready condition neither False nor Unknown,
    no DiskPressure or NetworkUnavailable condition True, no not-ready taint; a node without a
    Ready condition is not ready (upstream's zero answer)."""
    ready = _condition(raw, "Ready")
    return (
        ready is not None
        and ready not in ("False", "Unknown")
        and "True" not in (_condition(raw, "DiskPressure"), _condition(raw, "NetworkUnavailable"))
        and not any(t.key in NOT_READY_TAINTS for t in taints)
    )


def _items(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if isinstance(raw, Mapping) and "items" in raw:
        return listing(raw.get("items"), f"{where}.items")
    return listing(raw, where)


def _controllers(objects: list[Any], where: str) -> Controllers:
    known: dict[tuple[str, str, str], int | None] = {}
    for i, obj in enumerate(objects):
        at = f"{where}[{i}]"
        body = mapping(obj, at)
        kind = body.get("kind")
        if kind not in CONTROLLER_KINDS:
            continue
        meta = mapping(body.get("metadata"), f"{at}.metadata")
        spec = mapping(body.get("spec"), f"{at}.spec")
        replicas = optional_integer(spec.get("replicas"), f"{at}.spec.replicas")
        key = (str(kind), str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        known[key] = replicas
    return Controllers(known)


def _groups(
    raw: Any, names: list[str], options: CAOptions, where: str, notes: list[str]
) -> dict[str, NodeGroup]:
    if raw is None:
        group = NodeGroup("default")
        return dict.fromkeys(names, group)
    out: dict[str, NodeGroup] = {}
    for i, item in enumerate(listing(raw, where)):
        at = f"{where}[{i}]"
        body = mapping(item, at)
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{at}.name: every node group needs a name")
        low = optional_integer(body.get("minSize"), f"{at}.minSize") or 0
        high = optional_integer(body.get("maxSize"), f"{at}.maxSize")
        if low < 0 or (high is not None and high < low):
            raise InputError(f"{at}: minSize must be ≥ 0 and ≤ maxSize")
        own = body.get("options")
        group_options = None
        if own is not None:
            merged = {**_flags(options), **mapping(own, f"{at}.options")}
            group_options = dataclasses.replace(
                parse_options(merged, f"{at}.options", notes),
                rules_version=options.rules_version,
            )
        group = NodeGroup(name, low, 1_000_000 if high is None else high, group_options)
        for j, node in enumerate(listing(body.get("nodes"), f"{at}.nodes")):
            if node not in names:
                raise InputError(f"{at}.nodes[{j}]: {preview(node)} is not one of the nodes")
            if node in out:
                raise InputError(f"{at}.nodes[{j}]: node {preview(node)} is in two node groups")
            out[node] = group
    return out


def _in_progress(raw: Any, where: str) -> tuple[int, int]:
    """``deletionsInProgress``: ``{empty: N, drain: M}``, counts ≥ 0 (omitted: 0)."""
    if raw is None:
        return (0, 0)
    body = mapping(raw, where)
    for key in body:
        if key not in ("empty", "drain"):
            raise InputError(
                f"{where}.{plain(key)}: not a kind of deletion; use empty and drain (counts)"
            )
    counts = []
    for key in ("empty", "drain"):
        count = optional_integer(body.get(key), f"{where}.{key}") or 0
        if count < 0:
            raise InputError(f"{where}.{key}: {count} is below 0; give a count of deletions")
        counts.append(count)
    return counts[0], counts[1]


def _expendable(pod: CAPod, options: CAOptions, policy: str) -> bool:
    """``IsExpendablePod``: spec.priority set and below the cutoff (``CAOptions``); in CA
    1.30.0 to 1.33.0 also a pod that may preempt (``policy``, its preemptionPolicy as admission
    set it, is not ``Never``: upstream 6632bab4c8, reverted by 6f0f000a20 in 1.34 and in
    1.30.5, 1.31.3, 1.32.2, 1.33.1: ``release.expendable_needs_preemption``)."""
    priority = pod.obj.priority
    if priority is None or priority >= options.expendable_pods_priority_cutoff:
        return False
    return not (expendable_needs_preemption(options.rules_version) and policy == "Never")


def _preemption_policy(pod: CAPod, classes: Mapping[str, PriorityClass]) -> str:
    """The pod's spec.preemptionPolicy as the Priority admission plugin sets it: its own, else
    its PriorityClass's, else ``PreemptLowerPriority`` (a class not among the objects: the
    default)."""
    try:
        return resolve_preemption_policy(pod.obj, classes)
    except InputError:
        return pod.obj.preemption_policy or "PreemptLowerPriority"


def _flags(options: CAOptions) -> dict[str, Any]:
    """``options`` by flag name (what the output echoes)."""
    return {k.replace("_", "-"): v for k, v in vars(options).items() if k not in NOT_FLAGS}


def _now(raw: Any, where: str) -> float:
    if raw is None:
        return time.time()
    if hasattr(raw, "timestamp"):
        return float(raw.timestamp())
    if not isinstance(raw, str) or len(raw) > 64:
        raise InputError(f"{where}: {describe_value(raw)} is not a time like 2026-11-01T12:00:00Z")
    return parse_time(raw, field=where).timestamp()


def build(doc: Any, where: str = "scenario") -> AutoscaleScenario:
    """Turn a scenario document into the cluster and options."""
    if not isinstance(doc, Mapping):
        raise InputError(
            f"{where}: expected a mapping with autoscaler, nodes and pods, "
            f"not {describe_value(doc)}"
        )
    notes = [
        f"{where}.{plain(k)}: not read by analyzer autoscale; ignored" for k in doc if k not in KEYS
    ]
    autoscaler = doc.get("autoscaler", "cluster-autoscaler")
    if autoscaler not in AUTOSCALERS:
        raise InputError(
            f"{where}.autoscaler: {preview(autoscaler)} is not one of {', '.join(AUTOSCALERS)}"
        )
    version = parse_version(doc.get("kubernetesVersion"), field=f"{where}.kubernetesVersion")
    options = parse_options(doc.get("options"), f"{where}.options", notes)
    if not version.ca_system_pod_timeout:  # CA before 1.33: kube-system pods always block
        if "blocking-system-pod-distruption-timeout" in (doc.get("options") or {}):
            notes.append(
                f"options.blocking-system-pod-distruption-timeout: cluster-autoscaler "
                f"{version} has no such flag (1.33+); ignored"
            )
        options = dataclasses.replace(options, blocking_system_pod_distruption_timeout=None)
    # the rules of the version's CA release (``CAOptions.rules_version``): the minor's newest
    # patch known here unless clusterAutoscalerVersion names one (``autoscaler.release``)
    release = parse_release(
        doc.get("clusterAutoscalerVersion"), version, f"{where}.clusterAutoscalerVersion"
    )
    options = dataclasses.replace(options, rules_version=release)
    raw_nodes = _items(doc.get("nodes"), f"{where}.nodes")
    if not raw_nodes:
        raise InputError(f"{where}.nodes: at least one Node is needed")
    nodes: list[CANode] = []
    for i, raw in enumerate(raw_nodes):
        obj = parse_node(raw, f"{where}.nodes[{i}]")
        spec = mapping(mapping(raw, f"{where}.nodes[{i}]").get("spec"), f"{where}.nodes[{i}].spec")
        if any(n.name == obj.name for n in nodes):
            raise InputError(
                f"{where}.nodes[{i}].metadata.name: duplicate node {preview(obj.name)}"
            )
        nodes.append(
            CANode(
                obj.name,
                obj.allocatable,
                obj.labels,
                obj.annotations,
                obj.taints,
                unschedulable=spec.get("unschedulable") is True,
                ready=_condition(raw, "Ready"),
                readiness=_readiness(raw, obj.taints),
                deleting=_deleting(raw),
            )
        )
    names = [n.name for n in nodes]
    pods: dict[str, list[CAPod]] = {name: [] for name in names}
    pending: list[CAPod] = []
    objects = _items(doc.get("objects"), f"{where}.objects")
    # the Priority admission plugin sets spec.priority of every pod a cluster holds: from its
    # priorityClassName's PriorityClass (the objects' or a system one), else the global default
    # class, else 0
    classes = priority_classes(objects, f"{where}.objects")
    for i, raw in enumerate(_items(doc.get("pods"), f"{where}.pods")):
        pod = parse_ca_pod(raw, f"{where}.pods[{i}]")
        if pod.obj.priority is None and (pod.obj.priority_class or classes):
            try:
                resolved = resolve_priority(pod.obj, classes)
            except InputError:  # its class is not among the objects: the value is unknown
                notes.append(
                    f"pod {pod.key}: priorityClassName {pod.obj.priority_class} has no "
                    "PriorityClass object; its priority is read as unset (add the class or "
                    "spec.priority)"
                )
            else:
                pod = dataclasses.replace(pod, obj=dataclasses.replace(pod.obj, priority=resolved))
        waiting = pod.obj.phase not in ("Succeeded", "Failed") and not pod.obj.terminating
        if not pod.obj.node_name and autoscaler == "karpenter" and waiting:
            why = _not_provisionable(raw, pod)
            if why:
                notes.append(f"pod {pod.key} is not bound and {why}: Karpenter leaves it out")
            else:
                pending.append(pod)  # (the note is ``karpenter.consolidate``'s)
        elif (
            not pod.obj.node_name
            and autoscaler == "cluster-autoscaler"
            and waiting
            and (nominated := _nominated(raw)) in pods
            and not _expendable(pod, options, _preemption_policy(pod, classes))
        ):
            # waiting for its preemption: cluster-autoscaler's snapshot holds it on that node
            # (``FilterOutExpendableAndSplit``, ``addPreemptingPodsToSnapshot``: "considered
            # during scale down"), and asks no new node for it
            notes.append(
                f"pod {pod.key} is not bound and is nominated to {nominated} (waiting for its "
                f"preemption): cluster-autoscaler counts it on {nominated}"
            )
            on_it = dataclasses.replace(pod.obj, node_name=nominated)
            pods[nominated].append(dataclasses.replace(pod, obj=on_it))
        elif not pod.obj.node_name:
            notes.append(f"pod {pod.key} is not bound (no spec.nodeName); ignored")
        elif pod.obj.node_name not in pods:
            notes.append(f"pod {pod.key} is bound to unknown node {pod.obj.node_name}; ignored")
        elif pod.obj.phase in ("Succeeded", "Failed"):
            notes.append(f"pod {pod.key} is {pod.obj.phase}: not in the autoscaler's snapshot")
        elif autoscaler == "cluster-autoscaler" and _expendable(
            pod, options, _preemption_policy(pod, classes)
        ):
            notes.append(
                f"pod {pod.key} has priority {pod.obj.priority}, below "
                f"expendable-pods-priority-cutoff {options.expendable_pods_priority_cutoff}: "
                "expendable, not in cluster-autoscaler's snapshot (not counted, not moved, "
                "deleted with its node)"
            )
        else:
            pods[pod.obj.node_name].append(pod)
    every = [p for on_node in pods.values() for p in on_node]
    found = daemons(objects, every, f"{where}.objects") if autoscaler == "karpenter" else ()
    cluster = Cluster(
        nodes,
        pods,
        _groups(doc.get("nodeGroups"), names, options, f"{where}.nodeGroups", notes),
        disruption_budgets(objects, f"{where}.objects"),
        None if doc.get("objects") is None else _controllers(objects, f"{where}.objects"),
    )
    if cluster.controllers is None and autoscaler == "cluster-autoscaler":
        notes.append(
            "no objects: controllers are not checked (ControllerNotFound and "
            "MinReplicasReached need the ReplicaSets, Jobs, ... as objects)"
        )
    profile = build_profile(strategy_config("kube-default").profiles[0], version)
    return AutoscaleScenario(
        str(autoscaler),
        version,
        cluster,
        options,
        profile,
        _now(doc.get("now"), f"{where}.now"),
        parse_node_pool(doc.get("nodePool"), f"{where}.nodePool", notes),
        notes,
        _in_progress(doc.get("deletionsInProgress"), f"{where}.deletionsInProgress"),
        pending,
        found,
    )


def load(path: Path) -> AutoscaleScenario:
    """Read and build a scenario file (one-line ``InputError`` naming the file on failure)."""
    doc = load_yaml_or_json(path, what="scenario")
    if not isinstance(doc, Mapping):
        raise InputError(
            f"scenario {path}: expected a mapping with autoscaler, nodes and pods, "
            f"not {describe_value(doc)}"
        )
    return build(doc, where=str(path))


def options_json(options: CAOptions) -> dict[str, Any]:
    """The options the decision used, by flag name."""
    return _flags(options)

"""Karpenter's daemon overhead for ``analyzer autoscale``: what a new NodeClaim must hold beside
the pods it is launched for.

Upstream (kubernetes-sigs/karpenter ``pkg/controllers/provisioning``):

- ``Provisioner.getDaemonSetPods``: one pod per DaemonSet listed in the cluster, the newest pod
  it controls (``state.Cluster.UpdateDaemonSet``: the latest ``creationTimestamp``; the first
  listed among equal ones), else a pod made from its template
  (``daemonset.PodForDaemonSet``); where the template has required node affinity it replaces
  the pod's (the DaemonSet controller pins each pod to its node with ``matchFields``, which
  Karpenter's requirements do not read).
- ``scheduling/scheduler.go`` ``buildDaemonOverheadGroups``, ``isDaemonPodCompatible``: per
  instance type of the NodeClaim template, the DaemonSet pods that tolerate the template's
  taints (``PreferNoSchedule`` ones tolerated anyway) and whose nodeSelector and one required
  node-affinity term the template's requirements and the instance type allow (the terms tried
  in turn, ``removeRequiredNodeAffinityTerm``; a term with no ``matchExpressions`` asks for
  nothing). Their requests (``resources.RequestsForPods``: each pod's ``Ceiling``, plus one
  ``pods`` each) are the overhead.
- ``nodeclaim.go`` ``filterInstanceTypesByRequirements``: an instance type is an option only if
  it holds the pods' requests plus its overhead.

Here the DaemonSets are the scenario's ``objects`` of kind DaemonSet and those the pods'
controller references name (a pod's controlling DaemonSet exists in the cluster it came from,
whether or not the scenario lists it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analyzer.autoscaler.new_node import launchable
from analyzer.autoscaler.nodepool import NodePool, Shape
from analyzer.autoscaler.pods import CAPod, parse_ca_pod
from analyzer.scheduling.constraint_types import PodConstraints
from analyzer.scheduling.fields import mapping

DAEMONSET = "DaemonSet"


@dataclass(frozen=True)
class Daemon:
    """One DaemonSet's pod as Karpenter reckons a new node's overhead."""

    key: str  # namespace/name of the DaemonSet
    requests: Mapping[str, int]
    constraints: PodConstraints


def _template_pod(body: Mapping[str, Any], namespace: str, name: str, at: str) -> CAPod | None:
    """``PodForDaemonSet``: a pod of the DaemonSet's ``spec.template`` (None: no template)."""
    spec = mapping(body.get("spec"), f"{at}.spec")
    template = spec.get("template")
    if template is None:
        return None
    template = mapping(template, f"{at}.spec.template")
    meta = dict(mapping(template.get("metadata"), f"{at}.spec.template.metadata"))
    meta.update(namespace=namespace, name=name)
    return parse_ca_pod(
        {"metadata": meta, "spec": template.get("spec") or {}}, f"{at}.spec.template"
    )


def _created(pod: CAPod) -> float:
    """``metadata.creationTimestamp`` (none given: upstream's zero time, before any)."""
    return -math.inf if pod.creation_time is None else pod.creation_time


def daemons(objects: Sequence[Any], pods: Iterable[CAPod], where: str) -> tuple[Daemon, ...]:
    """Each DaemonSet's pod (module docstring), in the order the DaemonSets are first named
    (the objects, then the pods)."""
    # each listed DaemonSet's template pod (None: no template), parsed once
    listed: dict[tuple[str, str], CAPod | None] = {}
    for i, raw in enumerate(objects):
        at = f"{where}[{i}]"
        body = mapping(raw, at)
        if body.get("kind") != DAEMONSET:
            continue
        meta = mapping(body.get("metadata"), f"{at}.metadata")
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        if key not in listed:
            listed[key] = _template_pod(body, *key, at)
    newest: dict[tuple[str, str], CAPod] = {}
    order = list(listed)
    for pod in pods:
        ref = pod.obj.controller
        if ref is None or ref.kind != DAEMONSET:
            continue
        key = (pod.obj.namespace, ref.name)
        found = newest.get(key)
        if found is None:
            if key not in listed:
                order.append(key)
            newest[key] = pod
        elif _created(pod) > _created(found):
            newest[key] = pod
    out = []
    for key in order:
        template = listed.get(key)
        chosen = newest.get(key) or template
        if chosen is None:
            continue
        constraints = chosen.obj.constraints
        terms = None if template is None else template.obj.constraints.required_terms
        if terms is not None:  # the template's required node affinity replaces the pod's
            constraints = dataclasses.replace(constraints, required_terms=terms)
        if constraints.required_terms is not None and not all(constraints.required_terms):
            # a term without matchExpressions (the controller's matchFields pin): no requirement
            constraints = dataclasses.replace(constraints, required_terms=None)
        out.append(Daemon(f"{key[0]}/{key[1]}", chosen.requests, constraints))
    return tuple(out)


def compatible(daemon: Daemon, pool: NodePool, shape: Shape) -> bool:
    """``isDaemonPodCompatible``: ``daemon``'s pod would run on a node of ``pool`` of ``shape``."""
    if daemon.constraints.tolerates_all(pool.taints) is not None:
        return False
    return launchable(daemon.constraints, pool.labels, [shape.name], pool.requirements)


def overhead(daemons: Sequence[Daemon], pool: NodePool, shape: Shape) -> dict[str, int]:
    """What the compatible DaemonSet pods ask of a new node of ``shape``: their requests summed
    and ``pods`` their count (empty: none)."""
    out: dict[str, int] = {}
    for daemon in daemons:
        if not compatible(daemon, pool, shape):
            continue
        for name, value in daemon.requests.items():
            out[name] = out.get(name, 0) + value
        out["pods"] = out.get("pods", 0) + 1
    return out

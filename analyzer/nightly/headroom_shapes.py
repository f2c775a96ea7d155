"""The pod shapes headroom is counted for: declared in the config's ``headroom:`` list, or the
snapshot's most common request shapes.

A declared shape is either a Pod (``pod:``, read as ``analyzer score`` reads its incoming pod:
requests, tolerations, nodeSelector, node and pod affinity, topology spread, host ports) or a
short form — ``cpu``, ``memory``, ``gpu`` (``nvidia.com/gpu``), ``ephemeral-storage``, plus
``nodeSelector``, ``tolerations`` and ``affinity`` — turned into a one-container Pod and read the
same way. Every problem is one ``InputError`` naming ``--config headroom[i]`` and the field.

By default (no ``headroom:`` in the config) the shapes are the three most common among the day's
pods that the strategies place (not DaemonSet/static pods, requesting something): same requests
and the same tolerations, nodeSelector and required node affinity (a GPU pod's shape keeps the
toleration that lets it onto GPU nodes). Their labels, spread and pod-affinity terms are not part
of the shape: it counts copies of a request shape, not of one workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.quantity import format_quantity, resource_value
from analyzer.core.structured import describe_value, plain, preview
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.state import PodDemand

SECTION = "headroom"
DEFAULT_SHAPES = 3  # the most common shapes counted when none is declared
SHORT_RESOURCES = {
    "cpu": "cpu",
    "memory": "memory",
    "gpu": "nvidia.com/gpu",
    "ephemeral-storage": "ephemeral-storage",
}
SHORT_CONSTRAINTS = ("nodeSelector", "tolerations", "affinity")
KEYS = ("name", "pod", *SHORT_RESOURCES, *SHORT_CONSTRAINTS)
MAX_SHAPES = 20  # a page table and a metric per shape: more is a mistake, not a wish


@dataclass(frozen=True)
class HeadroomShape:
    """One shape: its name, where it came from and the Pod document the scheduler reads."""

    name: str
    source: str  # "declared" | "common"
    pod: Mapping[str, Any] | None  # a v1 Pod document (``scheduling.objects.parse_pod``)
    pods: int = 0  # for common shapes: pods of that shape seen in the day
    template: PodDemand | None = None  # common shapes: the demand, on the snapshot's axis

    def demand(self, resources: tuple[str, ...]) -> PodDemand:
        """The shape as the scheduler's incoming pod on the state's resource axis."""
        if self.template is not None:
            return self.template
        assert self.pod is not None  # a declared shape always has its pod
        return parse_pod(self.pod, f"--config {SECTION} {self.name}").demand(resources)


def _short_pod(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    requests: dict[str, str] = {}
    for key, resource in SHORT_RESOURCES.items():
        if item.get(key) is None:
            continue
        raw = item[key]
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise InputError(
                f"{where}.{key}: expected a quantity such as 500m or 2Gi, not {describe_value(raw)}"
            )
        value = resource_value(resource, raw, field=f"{where}.{key}")
        requests[resource] = format_quantity(resource, value)
    if not any(resource_value(r, q) > 0 for r, q in requests.items()):
        raise InputError(
            f"{where}: the shape requests nothing; give cpu, memory or gpu above 0 "
            "(or a pod with requests)"
        )
    spec: dict[str, Any] = {"containers": [{"name": "shape", "resources": {"requests": requests}}]}
    for key in SHORT_CONSTRAINTS:
        if item.get(key) is not None:
            spec[key] = item[key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shape"}, "spec": spec}


def parse_headroom(config: Mapping[str, Any]) -> list[HeadroomShape] | None:
    """The config's ``headroom:`` shapes (None: the section is absent, use the common shapes)."""
    raw = config.get(SECTION)
    if raw is None:
        return None
    where = f"--config {SECTION}"
    if not isinstance(raw, list) or not raw:
        raise InputError(
            f"{where}: expected a list of shapes (each a name with cpu/memory/gpu or a pod), "
            f"not {describe_value(raw)}"
        )
    if len(raw) > MAX_SHAPES:
        raise InputError(f"{where}: {len(raw)} shapes; at most {MAX_SHAPES} are counted")
    shapes: list[HeadroomShape] = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{here}: expected a mapping with a name, not {describe_value(item)}")
        unknown = sorted(plain(k) for k in item if k not in KEYS)
        if unknown:
            raise InputError(f"{here}.{unknown[0]}: unknown key (valid: {', '.join(KEYS)})")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{here}.name: every shape needs a name, not {describe_value(name)}")
        if any(s.name == name for s in shapes):
            raise InputError(f"{here}.name: {preview(name)} is declared twice; names must differ")
        short = [k for k in (*SHORT_RESOURCES, *SHORT_CONSTRAINTS) if item.get(k) is not None]
        if item.get("pod") is not None and short:
            raise InputError(
                f"{here}: give either pod or {short[0]}, not both (a pod carries its own requests "
                "and constraints)"
            )
        pod = item["pod"] if item.get("pod") is not None else _short_pod(item, here)
        shape = HeadroomShape(name, "declared", pod)
        # parse now: a bad field fails the run before any work, naming the shape
        demand = parse_pod(pod, here if item.get("pod") is None else f"{here}.pod").demand(
            ("cpu", "memory")
        )
        if not any(v > 0 for v in demand.request_map.values()):
            raise InputError(f"{here}.pod: the pod requests nothing; give its containers requests")
        shapes.append(shape)
    return shapes


def shape_label(requests: Mapping[str, int]) -> str:
    """``500m cpu, 1Gi memory`` from a request map (zero requests left out)."""
    return ", ".join(f"{format_quantity(r, v)} {r}" for r, v in requests.items() if v) or "nothing"


def common_shapes(demands: list[PodDemand], keep: np.ndarray) -> list[HeadroomShape]:
    """The ``DEFAULT_SHAPES`` most common (requests, node constraints) among ``demands[keep]``
    (ties: the smaller request first, so the choice does not depend on pod order)."""
    counts: dict[tuple[Any, ...], int] = {}
    first: dict[tuple[Any, ...], PodDemand] = {}
    for index in np.flatnonzero(keep).tolist():
        demand = demands[index]
        if not any(v > 0 for v in demand.request_map.values()):
            continue
        key = (tuple(sorted(demand.request_map.items())), demand.constraints)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, demand)
    ranked = sorted(counts, key=lambda k: (-counts[k], k[0], repr(k[1])))
    shapes = []
    for key in ranked[:DEFAULT_SHAPES]:
        demand = first[key]
        requests = {r: int(v) for r, v in sorted(demand.request_map.items()) if v}
        label = shape_label(requests)
        constraints = demand.constraints
        extra = []
        if constraints.tolerations:
            extra.append(f"{len(constraints.tolerations)} toleration(s)")
        if constraints.node_selector:
            extra.append(
                "nodeSelector " + ",".join(f"{k}={v}" for k, v in constraints.node_selector)
            )
        if constraints.required_terms is not None:
            extra.append("required node affinity")
        name = label + (f" ({'; '.join(extra)})" if extra else "")
        # a copy of the request shape, not of that pod: no identity, labels or pod terms
        template = replace(
            demand, name="headroom-copy", uid="", labels={}, spread=(), affinity=None,
            host_ports=(), controller=None, daemonset=False, terminating=False,
        )  # fmt: skip
        shapes.append(HeadroomShape(name, "common", None, pods=counts[key], template=template))
    return shapes

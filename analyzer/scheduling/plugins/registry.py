"""One registry of scheduler plugins (built-in and user), and a small generic ``Registry``.

A plugin type says which extension points it implements, how to parse its ``pluginConfig`` args
(defaults + validation; errors name the field) and how to build an instance for a Kubernetes version.
Users add their own with ``register(PluginType(...))`` before building a profile; the built-ins
register themselves through the same call (datasette's habit: the built-ins exercise the mechanism).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import analyzer.scheduling.plugins.defaultpreemption as preemption
import analyzer.scheduling.plugins.helper.node_constraints as constraints
import analyzer.scheduling.plugins.imagelocality as image_locality
import analyzer.scheduling.plugins.interpodaffinity as interpodaffinity
import analyzer.scheduling.plugins.loadaware.args as loadaware_args
import analyzer.scheduling.plugins.loadaware.plugin as loadaware
import analyzer.scheduling.plugins.nodeaffinity as node_affinity
import analyzer.scheduling.plugins.nodeports as node_ports
import analyzer.scheduling.plugins.noderesources.balanced_allocation as balanced_allocation
import analyzer.scheduling.plugins.noderesources.fit as fit
import analyzer.scheduling.plugins.nodeunschedulable as node_unschedulable
import analyzer.scheduling.plugins.podtopologyspread as spread
import analyzer.scheduling.plugins.queuesort as priority_sort
import analyzer.scheduling.plugins.tainttoleration as taint_score
from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.gpu.plugins import register_gpu_plugins
from analyzer.scheduling.versions import KubeVersion

T = TypeVar("T")


class Registry(Generic[T]):
    """Named items; ``get`` of an unknown name raises ``InputError`` listing the valid names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T, *, replace: bool = False) -> None:
        """Add ``item`` as ``name`` (``replace`` to override an existing one)."""
        if name in self._items and not replace:
            raise ValueError(f"{self.kind} {preview(name)} is already registered")
        self._items[name] = item

    def get(self, name: str, *, field: str = "name") -> T:
        """The item called ``name``."""
        try:
            return self._items[name]
        except KeyError:
            valid = ", ".join(self.available())
            raise InputError(
                f"{field}: unknown {self.kind} {preview(name)} (valid: {valid})"
            ) from None

    def available(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items


@dataclass(frozen=True)
class PluginType:
    """A scheduler plugin the profile builder can instantiate."""

    name: str
    description: str
    points: frozenset[str]  # subset of {"filter", "score", "queueSort", "postFilter"}
    parse_args: Callable[[Mapping[str, Any] | None, str], Any]
    build: Callable[[Any, KubeVersion], Any]


PLUGINS: Registry[PluginType] = Registry("scheduler plugin")


def register(plugin: PluginType, *, replace: bool = False) -> None:
    """Register a plugin type (also for user plugins)."""
    PLUGINS.register(plugin.name, plugin, replace=replace)


def get(name: str, *, field: str = "name") -> PluginType:
    """The plugin type called ``name`` (``InputError`` listing valid names otherwise)."""
    return PLUGINS.get(name, field=field)


def available() -> list[str]:
    """Names of every registered plugin."""
    return PLUGINS.available()


def _register_builtins() -> None:
    register(
        PluginType(
            name=fit.NAME,
            description="resource filter + LeastAllocated/MostAllocated/RequestedToCapacityRatio",
            points=frozenset({"filter", "score"}),
            parse_args=fit.parse_fit_args,
            build=fit.NodeResourcesFit,
        )
    )
    register(
        PluginType(
            name=balanced_allocation.NAME,
            description="balanced cpu/memory (std ≤1.35, delta 1.36+)",
            points=frozenset({"score"}),
            parse_args=balanced_allocation.parse_balanced_args,
            build=balanced_allocation.NodeResourcesBalancedAllocation,
        )
    )
    register(
        PluginType(
            name=loadaware_args.NAME,
            description="Koordinator load-aware thresholds and least-used score on NodeMetric usage",
            points=frozenset({"filter", "score"}),
            parse_args=loadaware_args.parse_loadaware_args,
            build=loadaware.LoadAwareScheduling,
        )
    )

    register(
        PluginType(
            name=constraints.TAINT_NAME,
            description="filter: NoSchedule/NoExecute taints tolerated; score: fewer intolerable "
            "PreferNoSchedule taints",
            points=frozenset({"filter", "score"}),
            parse_args=constraints.parse_args,
            build=taint_score.TaintToleration,
        )
    )
    register(
        PluginType(
            name=node_unschedulable.NAME,
            description="filter: cordoned nodes (spec.unschedulable) refuse pods without the "
            "node.kubernetes.io/unschedulable:NoSchedule toleration",
            points=frozenset({"filter"}),
            parse_args=node_unschedulable.parse_args,
            build=node_unschedulable.NodeUnschedulable,
        )
    )
    register(
        PluginType(
            name=constraints.AFFINITY_NAME,
            description="filter: nodeSelector + required node affinity; score: preferred terms' "
            "weights (addedAffinity too)",
            points=frozenset({"filter", "score"}),
            parse_args=node_affinity.parse_node_affinity_args,
            build=node_affinity.NodeAffinity,
        )
    )
    register(
        PluginType(
            name=node_ports.NAME,
            description="filter: the pod's host ports (protocol, hostIP, port) free on the node",
            points=frozenset({"filter"}),
            parse_args=lambda raw, where: None,
            build=node_ports.NodePorts,
        )
    )
    register(
        PluginType(
            name=priority_sort.NAME,
            description="queue order: higher priority first, then earlier arrival",
            points=frozenset({"queueSort"}),
            parse_args=lambda raw, where: None,
            build=lambda args, version: priority_sort.NAME,
        )
    )
    register(
        PluginType(
            name=preemption.NAME,
            description="post-filter: evict the fewest, least important lower-priority pods "
            "(PodDisruptionBudgets respected where given)",
            points=frozenset({"postFilter"}),
            parse_args=preemption.parse_preemption_args,
            build=preemption.DefaultPreemption,
        )
    )
    register(
        PluginType(
            name=spread.NAME,
            description="topology spread: DoNotSchedule filter, ScheduleAnyway score, defaults",
            points=frozenset({"filter", "score"}),
            parse_args=spread.parse_spread_args,
            build=spread.PodTopologySpread,
        )
    )
    register(
        PluginType(
            name=interpodaffinity.NAME,
            description="inter-pod affinity: required terms filter, preferred terms score",
            points=frozenset({"filter", "score"}),
            parse_args=interpodaffinity.parse_affinity_args,
            build=interpodaffinity.InterPodAffinity,
        )
    )
    register(
        PluginType(
            name=image_locality.NAME,
            description="score: nodes already holding the pod's container images (by size, "
            "damped by how many nodes have them)",
            points=frozenset({"score"}),
            parse_args=image_locality.parse_image_locality_args,
            build=image_locality.ImageLocality,
        )
    )
    register_gpu_plugins(register, PluginType)


_register_builtins()

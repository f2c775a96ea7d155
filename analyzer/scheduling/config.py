"""Scheduler configuration: KubeSchedulerConfiguration v1 and the legacy Policy, → ``Profile``.

KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``): each profile's plugins are the
default multiPoint set (NodeResourcesFit weight 1, NodeResourcesBalancedAllocation weight 1, plus
in-tree plugins this analyser does not model) merged with the user's ``multiPoint``; a point's
``disabled`` removes multiPoint plugins from that point (``*`` = all of them) and its ``enabled`` adds
plugins or overrides their weight. ``pluginConfig`` args are defaulted and validated per plugin.

Legacy Policy (``kind: Policy``, ≤ 1.22): ``priorities`` (LeastRequestedPriority,
MostRequestedPriority, BalancedResourceAllocation, ImageLocalityPriority,
RequestedToCapacityRatioPriority with
``argument.requestedToCapacityRatioArguments``) and ``predicates`` (PodFitsResources).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import analyzer.scheduling.plugins.registry as registry
from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.framework import FilterPlugin, Profile, ScorePlugin, WeightedScore
from analyzer.scheduling.node_sampling import ADAPTIVE, parse_percentage
from analyzer.scheduling.plugins.noderesources.fit import FitArgs, NodeResourcesFit, parse_shape
from analyzer.scheduling.plugins.noderesources.resource_allocation import (
    parse_resources,
    validate_weights,
)
from analyzer.scheduling.versions import KubeVersion

API_VERSIONS = (
    "kubescheduler.config.k8s.io/v1",
    "kubescheduler.config.k8s.io/v1beta3",
    "kubescheduler.config.k8s.io/v1beta2",
)
# v1 default multiPoint plugins (name, score weight); None = not a score plugin
DEFAULT_MULTIPOINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
# Plugins that exist upstream but do not act on resources: accepted, reported as not modelled.
KNOWN_UNMODELLED = {name for name, _ in DEFAULT_MULTIPOINT} - {
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
} | {
    "DynamicResources", "EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits",
    "NodeResourcesLeastAllocated", "NodeResourcesMostAllocated", "RequestedToCapacityRatio",
    "Coscheduling", "ElasticQuota", "Reservation", "NodeNUMAResource", "DeviceShare",
    "DefaultPreBind", "CPUSetAllocator",
}  # fmt: skip
POINTS = ("filter", "score")
# Default plugins kept out of the implicit v1 defaults except for ``analyzer score`` scenarios
# (``full_defaults``). Empty: replays track placed pods' labels and terms (``replay/topology.py``),
# so PodTopologySpread and InterPodAffinity are part of every profile's implicit defaults.
SCENARIO_ONLY_DEFAULTS: frozenset[str] = frozenset()


@dataclass
class ProfileSpec:
    """One profile after merging: plugin names per point, score weights, parsed args."""

    name: str
    filters: list[str]
    scores: list[tuple[str, int]]
    args: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    instances: dict[str, Any] = field(default_factory=dict)  # legacy: ready-made score plugins
    post_filters: list[str] = field(default_factory=list)  # DefaultPreemption
    queue_sort: list[str] = field(default_factory=list)  # PrioritySort
    # percentageOfNodesToScore in effect: the profile's, else the global one, else 0 (adaptive)
    percentage_of_nodes_to_score: int = 0


@dataclass
class SchedulerConfig:
    """A parsed scheduler configuration: one or more profiles."""

    profiles: list[ProfileSpec]
    source: str = ""

    def profile(self, scheduler_name: str | None = None) -> ProfileSpec:
        """The profile for ``scheduler_name`` (the first profile when None)."""
        if scheduler_name is None:
            return self.profiles[0]
        for spec in self.profiles:
            if spec.name == scheduler_name:
                return spec
        names = ", ".join(p.name for p in self.profiles)
        raise InputError(f"schedulerName: no profile {preview(scheduler_name)} (profiles: {names})")


def _entries(raw: Any, where: str) -> list[tuple[str, int | None]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of {{name, weight}}")
    out: list[tuple[str, int | None]] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise InputError(f"{where}[{i}].name: each plugin entry needs a name")
        weight = item.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)):
            raise InputError(f"{where}[{i}].weight: {preview(weight)} is not an integer")
        if weight is not None and weight < 0:
            raise InputError(f"{where}[{i}].weight: Invalid value: {weight}: must be >= 0")
        out.append((item["name"], weight))
    return out


def _check_name(name: str, where: str) -> bool:
    """True if modelled; False if known but not modelled; InputError if unknown."""
    if name in registry.PLUGINS:
        return True
    if name in KNOWN_UNMODELLED or name == "*":
        return False
    valid = ", ".join(registry.available())
    raise InputError(f"{where}: unknown plugin {preview(name)} (modelled plugins: {valid})")


def _merge_point(
    point: str, multipoint: list[tuple[str, int | None]], plugins: Mapping[str, Any], where: str
) -> list[tuple[str, int]]:
    section = mapping(plugins.get(point), f"{where}.{point}")
    disabled = {n for n, _ in _entries(section.get("disabled"), f"{where}.{point}.disabled")}
    enabled = _entries(section.get("enabled"), f"{where}.{point}.enabled")
    defaults = dict(DEFAULT_MULTIPOINT)
    merged: dict[str, int] = {}
    if "*" not in disabled:
        for name, weight in multipoint:
            implements = point in registry.get(name).points if name in registry.PLUGINS else False
            if implements and name not in disabled:
                merged[name] = weight or defaults.get(name) or 1
    for i, (name, weight) in enumerate(enabled):
        if _check_name(name, f"{where}.{point}.enabled[{i}].name"):
            if point not in registry.get(name).points:
                raise InputError(
                    f"{where}.{point}.enabled[{i}].name: {name} is not a {point} plugin"
                )
            merged[name] = weight or 1  # an explicit entry wins over multiPoint; 0/unset → 1
    return list(merged.items())


def _parse_profile(
    raw: Mapping[str, Any], where: str, full_defaults: bool, global_percentage: int | None
) -> ProfileSpec:
    name = str(raw.get("schedulerName") or "default-scheduler")
    own = parse_percentage(raw.get("percentageOfNodesToScore"), f"{where}.percentageOfNodesToScore")
    percentage = own if own is not None else global_percentage
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise InputError(f"{where}.plugins: expected a mapping of extension points")
    notes: list[str] = []
    for point, section in plugins.items():
        for kind in ("enabled", "disabled"):
            at = f"{where}.plugins.{plain(point)}"
            for i, (plugin, _) in enumerate(
                _entries(mapping(section, at).get(kind), f"{at}.{kind}")
            ):
                if not _check_name(plugin, f"{at}.{kind}[{i}].name") and plugin != "*":
                    notes.append(
                        f"plugin {plain(plugin)} is not modelled yet; the profile runs without it"
                    )
    mp = mapping(plugins.get("multiPoint"), f"{where}.plugins.multiPoint")
    mp_disabled = {
        n for n, _ in _entries(mp.get("disabled"), f"{where}.plugins.multiPoint.disabled")
    }
    multipoint: list[tuple[str, int | None]] = []
    if "*" not in mp_disabled:
        multipoint = [
            (n, w)
            for n, w in DEFAULT_MULTIPOINT
            if n not in mp_disabled and (full_defaults or n not in SCENARIO_ONLY_DEFAULTS)
        ]
    for n, w in _entries(mp.get("enabled"), f"{where}.plugins.multiPoint.enabled"):
        multipoint = [(m, x) for m, x in multipoint if m != n] + [(n, w)]
    filters = [n for n, _ in _merge_point("filter", multipoint, plugins, f"{where}.plugins")]
    scores = _merge_point("score", multipoint, plugins, f"{where}.plugins")
    post_filters = [
        n for n, _ in _merge_point("postFilter", multipoint, plugins, f"{where}.plugins")
    ]
    queue_sort = [n for n, _ in _merge_point("queueSort", multipoint, plugins, f"{where}.plugins")]
    args: dict[str, Any] = {}
    seen: set[str] = set()
    for i, item in enumerate(listing(raw.get("pluginConfig"), f"{where}.pluginConfig")):
        at = f"{where}.pluginConfig[{i}]"
        item = mapping(item, at)
        entry_name = item.get("name")
        if not isinstance(entry_name, str):
            raise InputError(f"{at}.name: each pluginConfig entry needs the plugin name")
        plugin = entry_name
        if plugin in seen:
            raise InputError(f"{at}.name: Duplicate value: {preview(plugin)}")
        seen.add(plugin)
        if _check_name(plugin, f"{at}.name"):
            args[plugin] = registry.get(plugin).parse_args(item.get("args"), f"{at}.args")
    for plugin in {*filters, *(n for n, _ in scores), *post_filters, *queue_sort} - set(args):
        args[plugin] = registry.get(plugin).parse_args(None, f"{where}.pluginConfig[{plugin}]")
    return ProfileSpec(
        name=name,
        filters=filters,
        scores=scores,
        args=args,
        notes=sorted(set(notes)),
        post_filters=post_filters,
        queue_sort=queue_sort,
        percentage_of_nodes_to_score=ADAPTIVE if percentage is None else percentage,
    )


def parse_kube_scheduler_configuration(
    doc: Mapping[str, Any], where: str = "scheduler", *, full_defaults: bool = False
) -> SchedulerConfig:
    """Parse a KubeSchedulerConfiguration document (or a legacy Policy).

    ``full_defaults``: the implicit v1 default plugins include ``SCENARIO_ONLY_DEFAULTS``
    (``analyzer score``); replays leave them out unless a profile enables them.
    """
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: expected a KubeSchedulerConfiguration mapping")
    kind = doc.get("kind", "KubeSchedulerConfiguration")
    if kind == "Policy":
        return parse_policy(doc, where)
    if kind != "KubeSchedulerConfiguration":
        raise InputError(
            f"{where}.kind: {preview(kind)} (expected KubeSchedulerConfiguration or Policy)"
        )
    api = doc.get("apiVersion", API_VERSIONS[0])
    if api not in API_VERSIONS:
        raise InputError(
            f"{where}.apiVersion: {preview(api)} is not supported (use {API_VERSIONS[0]})"
        )
    global_percentage = parse_percentage(
        doc.get("percentageOfNodesToScore"), f"{where}.percentageOfNodesToScore"
    )
    raw_profiles = doc.get("profiles") or [{}]
    if not isinstance(raw_profiles, list):
        raise InputError(f"{where}.profiles: expected a list of profiles")
    profiles = [
        _parse_profile(
            mapping(p, f"{where}.profiles[{i}]"),
            f"{where}.profiles[{i}]",
            full_defaults,
            global_percentage,
        )
        for i, p in enumerate(raw_profiles)
    ]
    names = [p.name for p in profiles]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(
                f"{where}.profiles[{i}].schedulerName: Duplicate value: {preview(name)}"
            )
    return SchedulerConfig(profiles)


_LEGACY_FIT = {"LeastRequestedPriority": "LeastAllocated", "MostRequestedPriority": "MostAllocated"}
_LEGACY_DEFAULT_PRIORITIES = [{"name": "LeastRequestedPriority", "weight": 1},
                              {"name": "BalancedResourceAllocation", "weight": 1}]  # fmt: skip
_LEGACY_FIT_PREDICATES = {"PodFitsResources", "GeneralPredicates"}


def parse_policy(doc: Mapping[str, Any], where: str = "scheduler") -> SchedulerConfig:
    """Parse a legacy scheduler Policy (predicates + priorities) into one profile."""
    predicates = doc.get("predicates")
    filters = ["NodeResourcesFit"]
    notes: list[str] = []
    if predicates is not None:
        names = [
            str(mapping(p, f"{where}.predicates[{i}]").get("name"))
            for i, p in enumerate(listing(predicates, f"{where}.predicates"))
        ]
        filters = ["NodeResourcesFit"] if _LEGACY_FIT_PREDICATES & set(names) else []
        notes += [
            f"predicate {n} is not modelled" for n in names if n not in _LEGACY_FIT_PREDICATES
        ]
    spec = ProfileSpec(name="default-scheduler", filters=filters, scores=[], notes=notes)
    spec.args["NodeResourcesFit"] = FitArgs()
    priorities = doc.get("priorities")
    chosen = listing(priorities, f"{where}.priorities")
    for i, item in enumerate(_LEGACY_DEFAULT_PRIORITIES if priorities is None else chosen):
        at = f"{where}.priorities[{i}]"
        item = mapping(item, at)
        name = str(item.get("name") or "")
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight <= 0:
            raise InputError(
                f"{at}.weight: Invalid value: {preview(weight)}: a priority weight must be > 0"
            )
        if name in _LEGACY_FIT:
            spec.instances[name] = ("fit", FitArgs(strategy=_LEGACY_FIT[name]))
        elif name == "BalancedResourceAllocation":
            spec.instances[name] = ("balanced", None)
        elif name == "ImageLocalityPriority":
            spec.instances[name] = ("image", None)
        elif name == "RequestedToCapacityRatioPriority":
            argument = mapping(item.get("argument") or item.get("arguments"), f"{at}.argument")
            rtcr = argument.get("requestedToCapacityRatioArguments")
            if not isinstance(rtcr, Mapping):
                raise InputError(f"{at}.argument.requestedToCapacityRatioArguments: Required value")
            base = f"{at}.argument.requestedToCapacityRatioArguments"
            resources = parse_resources(rtcr.get("resources"), f"{base}.resources")
            validate_weights(resources, f"{base}.resources")
            shape = parse_shape(rtcr.get("shape"), f"{base}.shape")
            spec.instances[name] = ("fit", FitArgs("RequestedToCapacityRatio", resources, shape))
        else:
            if not name:
                raise InputError(f"{at}.name: each priority needs a name")
            notes.append(f"priority {name} is not modelled")
            continue
        spec.scores.append((name, weight))
    return SchedulerConfig([spec], source="Policy")


class _Named:
    """A score plugin reported under another name (legacy priorities share NodeResourcesFit)."""

    def __init__(self, plugin: Any, name: str) -> None:
        self.plugin = plugin
        self.name = name

    def score(self, state: Any, pod: Any, now: float) -> Any:
        """The wrapped plugin's scores."""
        return self.plugin.score(state, pod, now)

    def explain(self, state: Any, pod: Any, node: int, now: float) -> Any:
        """The wrapped plugin's explanation."""
        return self.plugin.explain(state, pod, node, now)


def build_profile(spec: ProfileSpec, version: KubeVersion, description: str = "") -> Profile:
    """Instantiate the plugins of ``spec`` for ``version``."""
    from analyzer.scheduling.plugins.imagelocality import ImageLocality
    from analyzer.scheduling.plugins.noderesources.balanced_allocation import (
        BalancedArgs,
        NodeResourcesBalancedAllocation,
    )

    built: dict[str, Any] = {}

    def instance(name: str) -> Any:
        """One shared instance per plugin name (filter and score use the same object)."""
        if name not in built:
            built[name] = registry.get(name).build(spec.args[name], version)
        return built[name]

    filters: list[FilterPlugin] = [instance(n) for n in spec.filters]
    scorers: list[WeightedScore] = []
    for name, weight in spec.scores:
        plugin: ScorePlugin
        if name in spec.instances:
            kind, args = spec.instances[name]
            base = (
                NodeResourcesFit(args, version)
                if kind == "fit"
                else ImageLocality(None, version)
                if kind == "image"
                else NodeResourcesBalancedAllocation(BalancedArgs(), version)
            )
            plugin = _Named(base, name)
        else:
            plugin = instance(name)
        scorers.append(WeightedScore(plugin, weight))
    return Profile(
        spec.name,
        filters,
        scorers,
        description=description,
        notes=list(spec.notes),
        post_filters=[instance(n) for n in spec.post_filters],
        queue_sort=spec.queue_sort[0] if spec.queue_sort else "",
        percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
        version=version,
    )

"""Named scheduling strategies (presets) and KubeSchedulerConfiguration files as strategies.

Each preset is a KubeSchedulerConfiguration document, so a preset and a user's file go through the
same parser and validation. ``load_strategy(name_or_path, version)`` returns a ready ``Profile``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_yaml_or_json, preview
from analyzer.scheduling.config import (
    SchedulerConfig,
    build_profile,
    parse_kube_scheduler_configuration,
)
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.gpu.plugins import FILTER_NAME as GPU_FILTER
from analyzer.scheduling.gpu.requests import GPU_RESOURCES
from analyzer.scheduling.plugins.registry import Registry
from analyzer.scheduling.versions import KubeVersion, parse_version

API = "kubescheduler.config.k8s.io/v1"
_ONLY_RESOURCES = {"disabled": [{"name": "*"}]}


def _config(
    score: list[dict[str, Any]], filters: list[str], plugin_config: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "filter": {**_ONLY_RESOURCES, "enabled": [{"name": n} for n in filters]},
                    "score": {**_ONLY_RESOURCES, "enabled": score},
                },
                "pluginConfig": plugin_config,
            }
        ],
    }


def _fit(strategy: dict[str, Any]) -> dict[str, Any]:
    return {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}


@dataclass(frozen=True)
class Strategy:
    """A named preset: its configuration document and a one-line description."""

    name: str
    description: str
    document: Mapping[str, Any]


STRATEGIES: Registry[Strategy] = Registry("strategy")
# kube-scheduler v1 default filters that the analyzer models (order as in the default profile)
_KUBE_FILTERS = [
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
]
# the v1 default profile's score plugins that the analyzer models, with their default weights:
# TaintToleration (fewer intolerable PreferNoSchedule taints), NodeAffinity (preferred terms) and
# ImageLocality (node images) read only node taints/labels/images, so the replay's cache keeps
# them per pod shape. Every kube-based
# preset has them, as the same configuration on a real kube-scheduler would.
_KUBE_SCORES = [
    {"name": "TaintToleration", "weight": 3},
    {"name": "NodeAffinity", "weight": 2},
    {"name": "NodeResourcesFit", "weight": 1},
    {"name": "PodTopologySpread", "weight": 2},
    {"name": "InterPodAffinity", "weight": 2},
    {"name": "NodeResourcesBalancedAllocation", "weight": 1},
    {"name": "ImageLocality", "weight": 1},
]
# PodTopologySpread and InterPodAffinity (v1 defaults: System default constraints, weight 2 each)
# filter and score in every kube-based preset; a replay runs them through ``replay/topology.py``
# (inert for pods without terms that nothing selects). The GPU presets keep kube's other filters.
_TOPOLOGY_FILTERS = ["PodTopologySpread", "InterPodAffinity"]
_KUBE_TOPOLOGY_FILTERS = [*_KUBE_FILTERS, *_TOPOLOGY_FILTERS]


def register_strategy(strategy: Strategy) -> None:
    """Add a named preset."""
    STRATEGIES.register(strategy.name, strategy)


_RTCR_BINPACK = {
    "type": "RequestedToCapacityRatio",
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    },
}

register_strategy(
    Strategy(
        "kube-default",
        "kube-scheduler defaults: NodeResourcesFit LeastAllocated + BalancedAllocation (weights "
        "1/1), TaintToleration PreferNoSchedule (3), NodeAffinity preferred terms (2), "
        "PodTopologySpread (2), InterPodAffinity (2), ImageLocality (1)",
        _config(_KUBE_SCORES, _KUBE_TOPOLOGY_FILTERS, [_fit({"type": "LeastAllocated"})]),
    )
)
register_strategy(
    Strategy(
        "most-allocated",
        "bin packing: NodeResourcesFit MostAllocated (cpu, memory weight 1) + BalancedAllocation",
        _config(_KUBE_SCORES, _KUBE_TOPOLOGY_FILTERS, [_fit({"type": "MostAllocated"})]),
    )
)
register_strategy(
    Strategy(
        "rtcr-binpack",
        "bin packing: RequestedToCapacityRatio shape 0→0, 100→10 on cpu, memory + BalancedAllocation",
        _config(
            _KUBE_SCORES,
            _KUBE_TOPOLOGY_FILTERS,
            [_fit(_RTCR_BINPACK)],
        ),
    )
)
register_strategy(
    Strategy(
        "koord-loadaware",
        "kube-default + Koordinator LoadAwareScheduling (thresholds cpu 65 / memory 95, weight 1)",
        _config(
            [*_KUBE_SCORES, {"name": "LoadAwareScheduling", "weight": 1}],
            [*_KUBE_TOPOLOGY_FILTERS, "LoadAwareScheduling"],
            [_fit({"type": "LeastAllocated"}), {"name": "LoadAwareScheduling", "args": {}}],
        ),
    )
)

# Bin packing paired with Koordinator's LoadAwareScheduling (research/koordinator.md §1): the
# packing score fills nodes, the load-aware filter refuses nodes whose usage is already above the
# thresholds and its score prefers the less loaded of the packed candidates. Same arithmetic as the
# plugins above; only the profile differs.
_LOADAWARE_SCORES = [*_KUBE_SCORES, {"name": "LoadAwareScheduling", "weight": 1}]
_LOADAWARE_FILTERS = [*_KUBE_TOPOLOGY_FILTERS, "LoadAwareScheduling"]
_LOADAWARE_ARGS = {"name": "LoadAwareScheduling", "args": {}}
register_strategy(
    Strategy(
        "most-allocated-loadaware",
        "bin packing with load-aware filtering: NodeResourcesFit MostAllocated + BalancedAllocation"
        " + Koordinator LoadAwareScheduling (thresholds cpu 65 / memory 95, weight 1)",
        _config(
            _LOADAWARE_SCORES,
            _LOADAWARE_FILTERS,
            [_fit({"type": "MostAllocated"}), _LOADAWARE_ARGS],
        ),
    )
)
register_strategy(
    Strategy(
        "rtcr-binpack-loadaware",
        "bin packing with load-aware filtering: RequestedToCapacityRatio 0→0, 100→10 on cpu, "
        "memory + BalancedAllocation + Koordinator LoadAwareScheduling (cpu 65 / memory 95, "
        "weight 1)",
        _config(
            _LOADAWARE_SCORES,
            _LOADAWARE_FILTERS,
            [_fit(_RTCR_BINPACK), _LOADAWARE_ARGS],
        ),
    )
)

# The FGD paper's six policies on per-GPU state (``gpu.plugins``): kube's filters with the GPU
# resource names left to the GpuDevice filter, and the policy as the only score plugin.
_GPU_FILTERS = [*_KUBE_FILTERS, GPU_FILTER]
_GPU_FIT = {"name": "NodeResourcesFit", "args": {"ignoredResources": list(GPU_RESOURCES)}}
_GPU_PRESETS = (
    ("fgd", "FGDScore", "fragmentation gradient descent: least growth of F_n(M), own GPU choice"),
    ("bestfit", "BestFitScore", "tightest CPU + GPU fit, min-max normalised, best-fit GPU"),
    ("gpu-packing", "GpuPackingScore", "shared GPUs first, then used nodes, then idle nodes"),
    ("gpu-clustering", "GpuClusteringScore", "nodes already running pods of the same GPU shape"),
    ("dotprod", "DotProductScore", "smallest free·request dot product over (CPU, GPU)"),
    ("random", "RandomScore", "a uniformly random feasible node, random fitting GPUs"),
)
for _name, _plugin, _what in _GPU_PRESETS:
    register_strategy(
        Strategy(
            _name,
            f"GPU sharing, FGD paper: {_what} ({_plugin} + GpuDevice filter)",
            _config([{"name": _plugin, "weight": 1}], _GPU_FILTERS, [_GPU_FIT]),
        )
    )


def available_strategies() -> list[Strategy]:
    """Every preset, sorted by name."""
    return [STRATEGIES.get(name) for name in STRATEGIES.available()]


def load_config_document(path: Path, *, field: str = "scheduler") -> Mapping[str, Any]:
    """Read a KubeSchedulerConfiguration / Policy file (YAML or JSON) through ``core.structured``
    (aliases and nesting bounded; one line naming ``field`` and the file on any failure)."""
    doc = load_yaml_or_json(path, what=field)
    if not isinstance(doc, Mapping):
        raise InputError(
            f"{field} {path}: does not hold a KubeSchedulerConfiguration document "
            f"(it holds {describe_value(doc)})"
        )
    return doc


def strategy_config(name_or_path: str, *, field: str = "--strategy") -> SchedulerConfig:
    """The parsed configuration of a preset name or a configuration file path."""
    if name_or_path in STRATEGIES:
        return parse_kube_scheduler_configuration(
            STRATEGIES.get(name_or_path).document, where=name_or_path
        )
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        if not path.is_file():
            raise InputError(f"{field}: no such file {preview(name_or_path)}")
        return parse_kube_scheduler_configuration(
            load_config_document(path, field=field), str(path)
        )
    STRATEGIES.get(name_or_path, field=field)  # raises, listing the valid names
    raise AssertionError("unreachable")


def load_strategy(
    name_or_path: str, version: KubeVersion | str | None = None, scheduler_name: str | None = None
) -> Profile:
    """A ready ``Profile`` for a preset or a KubeSchedulerConfiguration file."""
    kube_version = version if isinstance(version, KubeVersion) else parse_version(version)
    config = strategy_config(name_or_path)
    description = STRATEGIES.get(name_or_path).description if name_or_path in STRATEGIES else ""
    profile = build_profile(config.profile(scheduler_name), kube_version, description)
    profile.name = name_or_path
    return profile


def document_profile(
    document: Mapping[str, Any], name: str, version: KubeVersion | str | None = None
) -> Profile:
    """A ready ``Profile`` for a KubeSchedulerConfiguration document held in memory, known as
    ``name`` (what ``load_strategy`` gives for the same document written to a file)."""
    kube_version = version if isinstance(version, KubeVersion) else parse_version(version)
    profile = build_profile(
        parse_kube_scheduler_configuration(document, name).profile(), kube_version
    )
    profile.name = name
    return profile

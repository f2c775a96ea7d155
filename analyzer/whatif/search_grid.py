"""The configurations ``analyzer whatif --search`` explores, and their KubeSchedulerConfiguration.

A grid is four axes, crossed: the NodeResourcesFit scoring strategy (``MostAllocated``,
``RequestedToCapacityRatio`` or ``LeastAllocated``) × its resource weights × Koordinator
LoadAwareScheduling usage thresholds (``null`` = no LoadAwareScheduling) × LoadAwareScheduling's
score weight. Each point is a ``SearchConfig`` whose ``document()`` is a complete
KubeSchedulerConfiguration v1 (the same shape as the presets in ``scheduling/strategies.py``), so
a searched configuration is replayed, shown and applied from one document.

The YAML grid file (``--search-grid``, documented in ``docs/whatif.md``) names any of the axes;
an axis it names replaces the default axis, or is appended to it with ``extend: true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_yaml, plain, preview
from analyzer.core.yamltext import comment

API = "kubescheduler.config.k8s.io/v1"
SCORING_TYPES = ("MostAllocated", "RequestedToCapacityRatio", "LeastAllocated")
# kube-scheduler's v1 defaults the analyzer models, as in the presets
_FILTERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit")
LOADAWARE = "LoadAwareScheduling"
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, 0), (100, 10))  # the rtcr-binpack preset's
GRID_KEYS = (
    "scoring",
    "resourceWeights",
    "loadAwareThresholds",
    "loadAwareWeights",
    "shape",
    "baselines",
    "extend",
)

Weights = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SearchConfig:
    """One point of the grid: a scoring strategy, its weights, LoadAware thresholds and weight."""

    scoring: str
    weights: Weights
    thresholds: Weights | None  # LoadAwareSchedulingArgs.usageThresholds; None = no LoadAware
    loadaware_weight: int  # 0 without LoadAware
    shape: tuple[tuple[int, int], ...] = DEFAULT_SHAPE

    @property
    def name(self) -> str:
        """A unique label a reader can decode, e.g. ``MostAllocated + LoadAware (cpu 55 %,
        memory 95 %, weight 2)``; resource weights are named only when they are not all 1."""
        text = self.scoring
        if any(w != 1 for _, w in self.weights):
            text += " (weights " + ", ".join(f"{r} {w}" for r, w in self.weights) + ")"
        if self.thresholds is not None:
            limits = ", ".join(f"{r} {v} %" for r, v in self.thresholds)
            text += f" + LoadAware ({limits}, weight {self.loadaware_weight})"
        return text

    def parameters(self) -> dict[str, Any]:
        """The axes' values, JSON-ready (one row of the page's table)."""
        return {
            "scoring": self.scoring,
            "resource_weights": dict(self.weights),
            "loadaware_thresholds": dict(self.thresholds) if self.thresholds is not None else None,
            "loadaware_weight": self.loadaware_weight,
        }

    def document(self) -> dict[str, Any]:
        """The KubeSchedulerConfiguration v1 that applies this configuration (upstream names)."""
        strategy: dict[str, Any] = {
            "type": self.scoring,
            "resources": [{"name": r, "weight": w} for r, w in self.weights],
        }
        if self.scoring == "RequestedToCapacityRatio":
            strategy["requestedToCapacityRatio"] = {
                "shape": [{"utilization": u, "score": s} for u, s in self.shape]
            }
        plugin_config: list[dict[str, Any]] = [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "apiVersion": API,
                    "kind": "NodeResourcesFitArgs",
                    "scoringStrategy": strategy,
                },
            }
        ]
        profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
        if self.thresholds is not None:
            # Added to kube-scheduler's default plugins, which stay as they are: a profile that
            # disabled "*" would also drop VolumeBinding, PodTopologySpread, … in a real cluster.
            profile["plugins"] = {
                "filter": {"enabled": [{"name": LOADAWARE}]},
                "score": {"enabled": [{"name": LOADAWARE, "weight": self.loadaware_weight}]},
            }
            plugin_config.append(
                {
                    "name": LOADAWARE,
                    "args": {
                        "apiVersion": API,
                        "kind": "LoadAwareSchedulingArgs",
                        "usageThresholds": dict(self.thresholds),
                    },
                }
            )
        profile["pluginConfig"] = plugin_config
        return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [profile]}

    def yaml(self) -> str:
        """``document()`` as YAML, with a comment naming the configuration."""
        return scheduler_yaml(self.document(), self.name)


class _PlainDumper(yaml.SafeDumper):
    """A dumper that writes repeated objects in full: no ``&id001`` anchors in a pasted file."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def scheduler_yaml(document: Mapping[str, Any], name: str) -> str:
    """A KubeSchedulerConfiguration as plain YAML (no anchors), headed by a comment naming it."""
    body = yaml.dump(dict(document), Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)
    # the name can be a user's file name: one escaped comment line, never YAML of its own
    return f"{comment(f'analyzer whatif --search: {name}')}\n{body}"


@dataclass(frozen=True)
class SearchGrid:
    """The axes; ``configs()`` crosses them (without LoadAware, its weight axis collapses)."""

    scoring: tuple[str, ...] = ("MostAllocated", "RequestedToCapacityRatio")
    resource_weights: tuple[Weights, ...] = ((("cpu", 1), ("memory", 1)),)
    # Below Koordinator's default 65 %: a node filtered at 35–45 % of cpu keeps room for its
    # pods' daily peak, so packing does not turn into threshold violations later in the day.
    loadaware_thresholds: tuple[Weights | None, ...] = (
        (("cpu", 35), ("memory", 95)),
        (("cpu", 45), ("memory", 95)),
    )
    loadaware_weights: tuple[int, ...] = (1, 2)
    shape: tuple[tuple[int, int], ...] = DEFAULT_SHAPE
    baselines: tuple[str, ...] = field(default=("kube-default",))

    def configs(self) -> list[SearchConfig]:
        """Every distinct configuration, in axis order (``count()`` of them)."""
        out: dict[SearchConfig, None] = {}  # an ordered set: linear, not quadratic, in the size
        for scoring in self.scoring:
            for weights in self.resource_weights:
                for thresholds in self.loadaware_thresholds:
                    for lw in self.loadaware_weights if thresholds is not None else (0,):
                        shape = self.shape if scoring == "RequestedToCapacityRatio" else ()
                        out.setdefault(SearchConfig(scoring, weights, thresholds, lw, shape))
        return list(out)

    def count(self) -> int:
        """How many configurations ``configs()`` gives, from the axes alone (nothing built).

        A configuration is its four axis values (the shape follows from the scoring), so the
        distinct ones are the product of each axis's distinct values, a LoadAware weight
        counting only with thresholds: a grid of millions is counted, and refused, at once.
        """
        thresholds = dict.fromkeys(self.loadaware_thresholds)
        with_loadaware = sum(t is not None for t in thresholds)
        per_weights = with_loadaware * len(set(self.loadaware_weights)) + (None in thresholds)
        return len(set(self.scoring)) * len(set(self.resource_weights)) * per_weights

    def to_dict(self) -> dict[str, Any]:
        """The grid in its YAML format (what the page and report.json show)."""
        return {
            "scoring": list(self.scoring),
            "resourceWeights": [dict(w) for w in self.resource_weights],
            "loadAwareThresholds": [
                dict(t) if t is not None else None for t in self.loadaware_thresholds
            ],
            "loadAwareWeights": list(self.loadaware_weights),
            "shape": [{"utilization": u, "score": s} for u, s in self.shape],
            "baselines": list(self.baselines),
        }


DEFAULT_GRID = SearchGrid()


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}: expected a non-empty list")
    return raw


def _int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{where}: {describe_value(value)} must be an integer in [{low}, {high}]")
    return value


def _weights(raw: Any, where: str, low: int, high: int) -> Weights:
    if not isinstance(raw, Mapping) or not raw:
        raise InputError(
            f"{where}: expected a mapping of resource name to integer, e.g. {{cpu: 1}}"
        )
    return tuple((str(k), _int(v, f"{where}.{plain(k)}", low, high)) for k, v in raw.items())


def _parse_axes(doc: Mapping[str, Any], where: str) -> dict[str, tuple[Any, ...]]:
    """The axes a grid document names, validated like the plugins' args."""
    axes: dict[str, tuple[Any, ...]] = {}
    if "scoring" in doc:
        for i, kind in enumerate(_list(doc["scoring"], f"{where}.scoring")):
            if kind not in SCORING_TYPES:
                raise InputError(
                    f"{where}.scoring[{i}]: {preview(kind)} is not one of {', '.join(SCORING_TYPES)}"
                )
        axes["scoring"] = tuple(doc["scoring"])
    if "resourceWeights" in doc:
        items = _list(doc["resourceWeights"], f"{where}.resourceWeights")
        axes["resource_weights"] = tuple(
            _weights(w, f"{where}.resourceWeights[{i}]", 1, 100) for i, w in enumerate(items)
        )
    if "loadAwareThresholds" in doc:
        items = _list(doc["loadAwareThresholds"], f"{where}.loadAwareThresholds")
        axes["loadaware_thresholds"] = tuple(
            None if t is None else _weights(t, f"{where}.loadAwareThresholds[{i}]", 0, 100)
            for i, t in enumerate(items)
        )
    if "loadAwareWeights" in doc:
        items = _list(doc["loadAwareWeights"], f"{where}.loadAwareWeights")
        axes["loadaware_weights"] = tuple(
            _int(w, f"{where}.loadAwareWeights[{i}]", 1, 100) for i, w in enumerate(items)
        )
    if "baselines" in doc:
        baselines = _list(doc["baselines"], f"{where}.baselines")
        for i, name in enumerate(baselines):
            if not isinstance(name, str):
                raise InputError(
                    f"{where}.baselines[{i}]: {describe_value(name)} is not a strategy name or file"
                )
        axes["baselines"] = tuple(baselines)
    return axes


def _shape(raw: Any, where: str) -> tuple[tuple[int, int], ...]:
    points = []
    for i, point in enumerate(_list(raw, where)):
        if not isinstance(point, Mapping):
            raise InputError(f"{where}[{i}]: expected {{utilization: 0..100, score: 0..10}}")
        points.append(
            (
                _int(point.get("utilization"), f"{where}[{i}].utilization", 0, 100),
                _int(point.get("score"), f"{where}[{i}].score", 0, 10),
            )
        )
    return tuple(points)


def parse_grid(
    doc: Any, where: str = "--search-grid", base: SearchGrid = DEFAULT_GRID
) -> SearchGrid:
    """A grid from its YAML document: named axes replace ``base``'s (or extend them)."""
    if doc is None:
        return base
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: expected a mapping with keys {', '.join(GRID_KEYS)}")
    unknown = sorted(preview(key) for key in doc if key not in GRID_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]} (known: {', '.join(GRID_KEYS)})")
    extend = doc.get("extend", False)
    if not isinstance(extend, bool):
        raise InputError(f"{where}.extend: {describe_value(extend)} is not true/false")
    axes = _parse_axes(doc, where)
    values: dict[str, Any] = {}
    for key, axis in axes.items():
        values[key] = (*getattr(base, key), *axis) if extend else axis
    if "shape" in doc:
        values["shape"] = _shape(doc["shape"], f"{where}.shape")
    grid = SearchGrid(**{**_fields(base), **values})
    if not grid.count():
        raise InputError(f"{where}: the grid holds no configuration")
    return grid


def _fields(grid: SearchGrid) -> dict[str, Any]:
    return {
        "scoring": grid.scoring,
        "resource_weights": grid.resource_weights,
        "loadaware_thresholds": grid.loadaware_thresholds,
        "loadaware_weights": grid.loadaware_weights,
        "shape": grid.shape,
        "baselines": grid.baselines,
    }


def load_grid(path: Path | None) -> SearchGrid:
    """The grid of a YAML file (``None`` = the default grid); bad input → ``InputError``."""
    if path is None:
        return DEFAULT_GRID
    doc = load_yaml(path, what="--search-grid")  # aliases and nesting bounded (core.structured)
    return parse_grid(doc, f"--search-grid {path}")

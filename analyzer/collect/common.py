"""Helpers shared by the collector's table builders: label conventions, resources, window values."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from analyzer.core.quantity import sanitize_resource_name
from analyzer.prom.client import Series
from analyzer.prom.fetch import QueryResult

# Resource names we can recognise from kube-state-metrics' sanitised ``resource`` label. The
# sanitising is not invertible, so known names are sanitised and matched (DESIGN.md).
KNOWN_RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "storage",
    "pods",
    "nvidia.com/gpu",
    "amd.com/gpu",
    "hugepages-1Gi",
    "hugepages-2Mi",
)


def label(labels: dict[str, str], name: str, exported: set[str] | None = None) -> str:
    """A label's value, preferring ``exported_<name>`` (set when honor_labels is off).

    ``exported`` (see ``exported_names``) lists the names the scrape target itself sets: for
    those the plain label is the target's (e.g. the kube-state-metrics pod's ``node``), so only
    ``exported_<name>`` counts, and its absence means the object has no such label (a pending pod).
    """
    if exported is not None and name in exported:
        return labels.get(f"exported_{name}", "")
    return labels.get(f"exported_{name}") or labels.get(name) or ""


def exported_names(items: Iterable[WindowValue]) -> set[str]:
    """Label names that appear as ``exported_<name>`` on any of ``items``."""
    names: set[str] = set()
    for item in items:
        names.update(k[len("exported_") :] for k in item.labels if k.startswith("exported_"))
    return names


def resource_names(extra: Iterable[str] = ()) -> dict[str, str]:
    """Sanitised kube-state-metrics resource label → Kubernetes resource name."""
    names = {sanitize_resource_name(n): n for n in KNOWN_RESOURCES}
    names.update({sanitize_resource_name(n): n for n in extra})
    return names


def to_units(resource: str, value: float) -> int:
    """A kube-state-metrics value (cpu in cores) → analyzer integer units (cpu in millicores).

    kube-state-metrics exports ``MilliValue()/1000`` for cpu and ``Value()`` otherwise, so
    rounding half up recovers the exact integer (never Python's banker's ``round``).
    """
    scaled = value * 1000 if resource == "cpu" else value
    return math.floor(scaled + 0.5)


@dataclass(frozen=True)
class WindowValue:
    """A window query's merged value for one series and the time of the point it came from."""

    labels: dict[str, str]
    value: float
    time: float


def window_values(result: QueryResult | None) -> list[WindowValue]:
    """Merge each series' per-chunk points with the query's ``combine`` rule."""
    if result is None or result.error is not None:
        return []
    out = []
    for series in result.series:
        if len(series.values) == 0:
            continue
        out.append(_combine(series, result.spec.combine))
    return out


def _combine(series: Series, combine: str) -> WindowValue:
    values = series.values
    if combine == "min":
        index = int(np.nanargmin(values)) if not np.all(np.isnan(values)) else len(values) - 1
    elif combine == "max":
        index = int(np.nanargmax(values)) if not np.all(np.isnan(values)) else len(values) - 1
    else:
        index = len(values) - 1
    return WindowValue(series.labels, float(values[index]), float(series.timestamps[-1]))

"""Data sources that produce snapshots without Prometheus: the synthetic cluster generator (with
its OpenMetrics writer for ``promtool`` backfills) and trace loaders.

Public API of the generator::

    from analyzer.sources import SyntheticSpec, generate, write_openmetrics
    cluster = generate(SyntheticSpec(seed=1, nodes=20, days=1, step=300))
    cluster.snapshot        # ground-truth Snapshot
    cluster.containers      # uid -> PodSpecResources (containers, init containers, overhead)
    stats = write_openmetrics(cluster, path, instance_convention="node-name")  # or "host-ip"
    # size knobs: node_exporter_cpus=1, constant_step=300, exclude_metrics=[...];
    # opt-in KSM families: node_labels=True, node_annotations=True
    # label pitfalls: ksm_honor_labels=False (exported_*), ha_replicas=2 (HA duplicates)
    # (all are fields of OpenMetricsOptions)

See docs/synthetic.md for the model and the semantics a collector must reproduce.

Placement hook: ``generate(spec, place=fn)`` with ``fn(PlacementRequest, ClusterState) -> int | None``.
"""

from __future__ import annotations

from analyzer.sources.catalog import PRIORITY_CLASSES, RESOURCES
from analyzer.sources.openmetrics import OpenMetricsOptions, OpenMetricsStats, write_openmetrics
from analyzer.sources.placement import (
    ClusterState,
    PlacementRequest,
    Placer,
    least_allocated_place,
)
from analyzer.sources.spec import DEFAULT_START, Grid, SyntheticSpec
from analyzer.sources.synthetic import SyntheticCluster, SyntheticNode, generate

__all__ = [
    "DEFAULT_START",
    "PRIORITY_CLASSES",
    "RESOURCES",
    "ClusterState",
    "Grid",
    "OpenMetricsOptions",
    "OpenMetricsStats",
    "PlacementRequest",
    "Placer",
    "SyntheticCluster",
    "SyntheticNode",
    "SyntheticSpec",
    "generate",
    "least_allocated_place",
    "write_openmetrics",
]

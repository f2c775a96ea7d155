"""``analyzer collect``: run the query profile over a time range and build a snapshot.

The profile (``queries/*.promql``) runs through ``analyzer.prom`` (chunked, parallel range
queries); the results become the four snapshot tables (``collect_pods``, ``collect_usage``) and a
``meta.json`` with the source URL without credentials, the range, warnings (including Thanos
partial-response warnings) and coverage per query and per node. A failed required query stops the
run (exit 1); a failed optional query, unmapped node-exporter targets or nodes without usage make
the result *partial* (exit 3, snapshot still written); no kube-state-metrics data in the range at
all is ``PartialDataError`` with nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer import __version__
from analyzer.collect_constraints import add_constraints
from analyzer.collect_pod_usage import build_pod_usage
from analyzer.collect_pods import build_pods
from analyzer.collect_usage import NODE_USAGE_QUERIES, NodeMapper, build_node_usage, build_nodes
from analyzer.errors import PartialDataError
from analyzer.memory import release_free_memory
from analyzer.paths import queries_dir
from analyzer.prom.client import PromClient
from analyzer.prom.fetch import (
    DEFAULT_CHUNK_POINTS,
    DEFAULT_WINDOW_POINTS,
    FetchPlan,
    QueryResult,
    TimeGrid,
    make_grid,
    run_profile,
)
from analyzer.prom.profile import load_profile, require
from analyzer.prom.settings import PromSettings
from analyzer.snapshot import Snapshot, SnapshotMeta, make_snapshot

# Queries the collector cannot do without (it looks them up by file name).
CORE_QUERIES = (
    "pod_info",
    "pod_first_seen",
    "pod_last_seen",
    "pod_created",
    "pod_container_requests",
    "pod_container_limits",
    "node_info",
    "node_allocatable",
    "node_first_seen",
    "node_last_seen",
    "node_cpu_busy",
    "node_memory_total",
    "node_memory_available",
    "pod_cpu_usage",
    "pod_memory_working_set",
)


@dataclass(frozen=True)
class CollectRequest:
    """What to collect: where from, which range and step, which profile."""

    settings: PromSettings
    start: datetime
    end: datetime
    step_seconds: int = 60
    queries_dir: Path | None = None
    chunk_points: int = DEFAULT_CHUNK_POINTS
    window_points: int = DEFAULT_WINDOW_POINTS
    extra_resources: tuple[str, ...] = ()
    priority_classes: tuple[tuple[str, int], ...] = ()  # PriorityClass name → value


@dataclass(frozen=True)
class BuildContext:
    """What ``build_snapshot`` needs besides the query results."""

    source: str  # URL without credentials
    warnings: tuple[str, ...] = ()
    profile: str = ""
    extra_resources: tuple[str, ...] = ()
    priorities: tuple[tuple[str, int], ...] = ()


@dataclass
class CollectResult:
    """The snapshot and whether it is partial (exit 3)."""

    snapshot: Snapshot
    partial: bool = False
    problems: list[str] = field(default_factory=list)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def collect(
    request: CollectRequest, progress: Callable[[int, int], None] | None = None
) -> CollectResult:
    """Collect ``request`` into a snapshot (not written; see ``write_snapshot``)."""
    folder = queries_dir(request.queries_dir)
    profile = load_profile(request.queries_dir)
    require(profile, CORE_QUERIES, str(folder))
    grid = make_grid(request.start.timestamp(), request.end.timestamp(), request.step_seconds)
    plan = FetchPlan(
        grid=grid,
        chunk_points=request.chunk_points,
        window_points=request.window_points,
        parallelism=request.settings.parallelism,
    )
    with PromClient(request.settings) as client:
        results = run_profile(client, list(profile.values()), plan, progress)
        warnings = list(client.warnings)
        source = client.public_url
    release_free_memory()  # the responses are gone; give their pages back before building
    context = BuildContext(
        source=source,
        warnings=tuple(warnings),
        profile=str(folder),
        extra_resources=request.extra_resources,
        priorities=request.priority_classes,
    )
    return build_snapshot(results, grid, context)


def build_snapshot(
    results: dict[str, QueryResult], grid: TimeGrid, context: BuildContext
) -> CollectResult:
    """Turn the profile's results into a snapshot; pure (no network), so tests can feed it."""
    pods = build_pods(
        results, grid.end, grid.step, context.extra_resources, dict(context.priorities)
    )
    nodes = build_nodes(results, context.extra_resources)
    source = context.source
    warnings = list(context.warnings)
    if pods.empty and nodes.empty:
        raise PartialDataError(
            f"no kube-state-metrics data between {_iso(grid.start)} and {_iso(grid.end)} at {source} "
            "(kube_pod_info and kube_node_info are empty); check the range and that "
            "kube-state-metrics is scraped ('analyzer check')"
        )
    warnings.extend(add_constraints(results, nodes, pods))
    queries = _query_coverage(results)  # before the usage builders consume the sample tables
    mapper = NodeMapper.from_results(nodes, results)
    node_usage = build_node_usage(results, mapper, grid)
    _release_tables(results, NODE_USAGE_QUERIES)  # node rows are in node_usage now
    pod_usage, unmatched = build_pod_usage(results, pods, grid)
    problems: list[str] = []
    for result in results.values():
        if result.error is not None:
            problems.append(f"optional query {result.spec.name} failed: {result.error}")
    if mapper.unmapped:
        sample = ", ".join(sorted(mapper.unmapped)[:3])
        problems.append(
            f"{len(mapper.unmapped)} node-exporter target(s) match no node (e.g. {sample})"
        )
    coverage = _coverage(queries, nodes, node_usage, grid)
    missing_usage = coverage["nodes_without_usage"]
    if missing_usage:
        problems.append(
            f"{len(missing_usage)} node(s) have no node-exporter usage (e.g. {missing_usage[0]})"
        )
    if unmatched:
        warnings = [*warnings, f"{unmatched} cAdvisor series match no pod in kube_pod_info"]
    meta = SnapshotMeta(
        source=source,
        start=_iso(grid.start),
        end=_iso(grid.end),
        step_seconds=grid.step,
        collected_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        analyzer_version=__version__,
        query_profile=context.profile,
        instance_convention=mapper.convention,
        warnings=[*warnings, *problems],
        coverage=coverage,
    )
    snapshot = make_snapshot(meta, nodes, pods, node_usage, pod_usage)
    return CollectResult(snapshot, partial=bool(problems), problems=problems)


def _release_tables(results: dict[str, QueryResult], names: tuple[str, ...]) -> None:
    """Drop the sample tables of ``names`` that no other query's result shares."""
    keep = {id(r.table) for n, r in results.items() if n not in names and r.table is not None}
    for name in names:
        result = results.get(name)
        if result is not None and id(result.table) not in keep:
            result.table = None


def _query_coverage(results: dict[str, QueryResult]) -> dict[str, dict[str, Any]]:
    """Per query: series, requests, error, required."""
    return {
        name: {
            "series": r.series_count,
            "requests": r.requests,
            "error": r.error,
            "required": r.spec.required,
        }
        for name, r in sorted(results.items())
    }


def _coverage(
    queries: dict[str, dict[str, Any]],
    nodes: pd.DataFrame,
    node_usage: pd.DataFrame,
    grid: TimeGrid,
) -> dict[str, Any]:
    """Per query (``_query_coverage``); per node: fraction of grid points with cpu usage."""
    points = grid.points
    per_node: dict[str, float] = {}
    if not node_usage.empty:
        counts = node_usage.dropna(subset=["cpu"]).groupby("node", observed=True).size()
        per_node = {str(n): round(float(c) / points, 4) for n, c in counts.items()}
    all_nodes = [str(n) for n in nodes["node"]] if not nodes.empty else []
    without = sorted(n for n in all_nodes if n not in per_node)
    values = np.array([per_node.get(n, 0.0) for n in all_nodes]) if all_nodes else np.zeros(0)
    return {
        "queries": queries,
        "grid_points": points,
        "node_usage_min": float(values.min()) if len(values) else 0.0,
        "node_usage_mean": round(float(values.mean()), 4) if len(values) else 0.0,
        "nodes_below_full": {
            n: per_node.get(n, 0.0) for n in all_nodes if per_node.get(n, 0.0) < 1.0
        },
        "nodes_without_usage": without,
    }

"""What a collect's ``meta.json`` says: coverage per query and per node, the problems that
make it partial (exit 3), warnings; shared by the in-memory collect (``analyzer.collect.run``)
and the day-by-day one (``analyzer.collect.stream``), so both write the same meta."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from analyzer import __version__
from analyzer.collect.usage import NodeMapper
from analyzer.core.snapshot import SnapshotMeta
from analyzer.prom.fetch import QueryResult
from analyzer.prom.time_grid import TimeGrid


def iso_time(seconds: float) -> str:
    """Unix seconds as RFC 3339 UTC with a ``Z``."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class BuildContext:
    """What ``build_snapshot`` needs besides the query results."""

    source: str  # URL without credentials
    warnings: tuple[str, ...] = ()
    profile: str = ""
    extra_resources: tuple[str, ...] = ()
    priorities: tuple[tuple[str, int], ...] = ()
    scrape: dict[str, Any] = field(default_factory=dict)  # meta.extra["scrape"]


@dataclass
class Inventory:
    """What the summary queries say: the pods and nodes tables, and how to map node-exporter
    targets to nodes; built before the usage series so their results can be released first."""

    pods: pd.DataFrame
    nodes: pd.DataFrame
    mapper: NodeMapper
    warnings: list[str]
    queries: dict[str, dict[str, Any]]  # coverage of the queries it consumed
    failed: list[str]  # optional queries that failed
    control_plane: dict[str, str] = field(default_factory=dict)  # component → git_version


@dataclass
class UsageTally:
    """What meta says about the usage tables: rows with node CPU per node, pod-usage rows."""

    node_rows: dict[str, int] = field(default_factory=dict)
    pod_rows: int = 0

    def add(self, node_rows: dict[str, int], pod_rows: int) -> None:
        """Count one more part of the tables (a day of a streamed collect)."""
        for node, count in node_rows.items():
            self.node_rows[node] = self.node_rows.get(node, 0) + count
        self.pod_rows += pod_rows


def usage_meta(
    inventory: Inventory,
    context: BuildContext,
    grid: TimeGrid,
    queries: dict[str, dict[str, Any]],
    errors: list[tuple[str, str]],
    tally: UsageTally,
    unmatched: int,
) -> tuple[SnapshotMeta, list[str]]:
    """``meta.json`` and the problems (exit 3) of a collect whose usage tables ``tally`` counts;
    ``errors``: (query, error) of the usage queries that failed, in profile order."""
    nodes, pods, mapper = inventory.nodes, inventory.pods, inventory.mapper
    warnings = [*context.warnings, *inventory.warnings]
    problems = list(inventory.failed)
    for name, error in errors:
        problems.append(f"optional query {name} failed: {error}")
    if mapper.unmapped:
        sample = ", ".join(sorted(mapper.unmapped)[:3])
        problems.append(
            f"{len(mapper.unmapped)} node-exporter target(s) match no node (e.g. {sample})"
        )
    coverage = _coverage(dict(sorted(queries.items())), nodes, tally.node_rows, grid)
    missing_usage = coverage["nodes_without_usage"]
    if missing_usage:
        problems.append(
            f"{len(missing_usage)} node(s) have no node-exporter usage (e.g. {missing_usage[0]})"
        )
    if len(pods) and not tally.pod_rows:
        problems.append(
            f"no cAdvisor pod usage in the range for any of the {len(pods)} pods: scrape the "
            "kubelet's /metrics/cadvisor endpoint (container_cpu_usage_seconds_total, "
            "container_memory_working_set_bytes)"
        )
    if unmatched:
        warnings = [*warnings, f"{unmatched} cAdvisor series match no pod in kube_pod_info"]
    meta = SnapshotMeta(
        source=context.source,
        start=iso_time(grid.start),
        end=iso_time(grid.end),
        step_seconds=grid.step,
        collected_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        analyzer_version=__version__,
        query_profile=context.profile,
        instance_convention=mapper.convention,
        warnings=[*warnings, *problems],
        coverage=coverage,
        extra={
            **({"scrape": context.scrape} if context.scrape else {}),
            **({"control_plane": inventory.control_plane} if inventory.control_plane else {}),
        },
    )
    return meta, problems


def query_coverage(results: dict[str, QueryResult]) -> dict[str, dict[str, Any]]:
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


def node_row_counts(node_usage: pd.DataFrame) -> dict[str, int]:
    """Per node, its usage rows with a CPU value (what ``coverage`` divides by the grid)."""
    if node_usage.empty:
        return {}
    # only the node column of the rows with cpu (dropna would copy the whole table)
    counts = node_usage.loc[node_usage["cpu"].notna(), "node"].value_counts()
    return {str(n): int(c) for n, c in counts.items() if c}


def _coverage(
    queries: dict[str, dict[str, Any]],
    nodes: pd.DataFrame,
    node_rows: dict[str, int],
    grid: TimeGrid,
) -> dict[str, Any]:
    """Per query (``query_coverage``); per node: fraction of grid points with cpu usage."""
    points = grid.points
    per_node = {n: round(float(c) / points, 4) for n, c in node_rows.items()}
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

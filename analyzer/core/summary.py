"""What a snapshot holds, in a few numbers: ``analyzer inspect SNAPSHOT`` without ``--table``.

Coverage is computed from the data, the same way for collected and generated snapshots: a node's
coverage is the share of the range's grid points ``(start, end]`` (every ``step_seconds``) at which
it has a cpu usage sample; a sample at ``t`` covers ``(t − step, t]`` (docs/snapshot.md), so a
sample at ``start`` itself covers time before the range and is not counted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from analyzer.core.durations import format_duration
from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import Snapshot


@dataclass(frozen=True)
class Coverage:
    """Node cpu-usage coverage of the range, in percent of grid points (0–100)."""

    grid_points: int  # step-aligned instants in (start, end]
    mean_pct: float  # mean over nodes
    min_pct: float  # the least covered node
    nodes_without_usage: int


@dataclass(frozen=True)
class SnapshotSummary:
    """Counts and provenance of one snapshot; every count is a non-negative integer."""

    source: str
    start: str  # RFC 3339 UTC
    end: str
    span: str  # Prometheus duration syntax
    step: str
    nodes: int
    pools: dict[str, int]  # nodes per pool
    pods: int
    pods_scheduled: int  # pods with a node
    pods_running_at_end: int  # scheduled, not finished by the end of the range
    pods_pinned: int  # DaemonSet and static pods (stay on their node in every replay)
    node_usage_rows: int
    pod_usage_rows: int
    coverage: Coverage
    failed_queries: list[str]  # from the collector's meta.json coverage (collected snapshots)
    warnings: list[str]
    analyzer_version: str  # the version that wrote the snapshot
    schema_version: int
    collected_at: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the dataclass as nested dicts."""
        return asdict(self)


def _coverage(snapshot: Snapshot) -> Coverage:
    start, end = snapshot.start, snapshot.end
    step = pd.Timedelta(seconds=max(int(snapshot.meta.step_seconds), 1))
    points = max(int((end - start) // step), 0)
    usage = snapshot.node_usage
    inside = usage[
        (usage["timestamp"] > start) & (usage["timestamp"] <= end) & usage["cpu"].notna()
    ]
    counts = inside.groupby("node", observed=True)["timestamp"].nunique()
    names = [str(n) for n in snapshot.nodes["node"]]
    shares = [min(int(counts.get(n, 0)), points) / points * 100 if points else 0.0 for n in names]
    return Coverage(
        grid_points=points,
        mean_pct=round(sum(shares) / len(shares), 2) if shares else 0.0,
        min_pct=round(min(shares), 2) if shares else 0.0,
        nodes_without_usage=sum(1 for n in names if int(counts.get(n, 0)) == 0),
    )


def summarize(snapshot: Snapshot) -> SnapshotSummary:
    """The summary ``analyzer inspect`` prints (see ``SnapshotSummary``)."""
    meta, pods = snapshot.meta, snapshot.pods
    scheduled = pods["node"].notna() & (pods["node"].fillna("") != "")
    running = scheduled & (pods["finished"].isna() | (pods["finished"] > snapshot.end))
    pools = snapshot.nodes["pool"].fillna("(none)").astype(str).value_counts().sort_index()
    queries = (meta.coverage or {}).get("queries") or {}
    return SnapshotSummary(
        source=meta.source,
        start=meta.start,
        end=meta.end,
        span=format_duration(snapshot.end - snapshot.start),
        step=format_duration(pd.Timedelta(seconds=int(meta.step_seconds))),
        nodes=len(snapshot.nodes),
        pools={str(k): int(v) for k, v in pools.items()},
        pods=len(pods),
        pods_scheduled=int(scheduled.sum()),
        pods_running_at_end=int(running.sum()),
        pods_pinned=int((pinned_pods(pods) & scheduled).sum()),
        node_usage_rows=len(snapshot.node_usage),
        pod_usage_rows=len(snapshot.pod_usage),
        coverage=_coverage(snapshot),
        failed_queries=sorted(name for name, q in queries.items() if q.get("error")),
        warnings=[str(w) for w in meta.warnings],
        analyzer_version=meta.analyzer_version,
        schema_version=int(meta.schema_version),
        collected_at=meta.collected_at,
    )

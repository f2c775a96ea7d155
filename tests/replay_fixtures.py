"""Small hand-built snapshots for the replay and what-if tests (times in minutes from T0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot

T0 = pd.Timestamp("2026-11-01T00:00:00Z")
GI = 2**30


def at(minutes: float) -> pd.Timestamp:
    """T0 + ``minutes``."""
    return T0 + pd.Timedelta(minutes=minutes)


@dataclass
class N:
    """A node: name, cpu millicores, memory bytes, first/last seen in minutes (None = whole range)."""

    name: str
    cpu: int = 4000
    memory: int = 16 * GI
    first: float | None = None
    last: float | None = None
    pods: int | None = None
    annotations: str = "{}"
    labels: str = "{}"
    pool: str = "pool"


@dataclass
class P:
    """A pod: uid, real node, requests, arrival (scheduled) and finish minutes, usage per minute."""

    uid: str
    node: str | None
    cpu: int = 1000
    memory: int = 1 * GI
    start: float = 0
    end: float | None = None
    owner: str = "ReplicaSet"
    cpu_used: float = 0.0
    memory_used: float = 0.0
    qos: str = "Burstable"
    labels: str = "{}"
    limits: dict[str, int] = field(default_factory=dict)


def build(
    nodes: Sequence[N],
    pods: Sequence[P],
    *,
    minutes: int = 60,
    node_overhead_cpu: float = 100.0,
    node_overhead_memory: float = 1.0 * GI,
) -> Snapshot:
    """A snapshot over ``minutes`` (1-minute step): node usage = overhead + Σ usage of its pods."""
    meta = SnapshotMeta(
        source="test",
        start=T0.isoformat(),
        end=at(minutes).isoformat(),
        step_seconds=60,
        collected_at=T0.isoformat(),
        analyzer_version="test",
    )
    node_frame = pd.DataFrame(
        {
            "node": [n.name for n in nodes],
            "pool": [n.pool for n in nodes],
            "annotations": [n.annotations for n in nodes],
            "labels": [n.labels for n in nodes],
            "first_seen": [at(n.first if n.first is not None else 0) for n in nodes],
            "last_seen": [at(n.last if n.last is not None else minutes) for n in nodes],
            "allocatable:cpu": [n.cpu for n in nodes],
            "allocatable:memory": [n.memory for n in nodes],
        }
    )
    if any(n.pods is not None for n in nodes):
        node_frame["allocatable:pods"] = [n.pods if n.pods is not None else 110 for n in nodes]
    pod_frame = pd.DataFrame(
        {
            "uid": [p.uid for p in pods],
            "namespace": ["default"] * len(pods),
            "name": [p.uid for p in pods],
            "node": [p.node for p in pods],
            "owner_kind": [p.owner for p in pods],
            "qos_class": [p.qos for p in pods],
            "labels": [p.labels for p in pods],
            "created": [at(p.start) for p in pods],
            "scheduled": [at(p.start) if p.node else pd.NaT for p in pods],
            "started": [at(p.start) if p.node else pd.NaT for p in pods],
            "finished": [at(p.end) if p.end is not None else pd.NaT for p in pods],
            "last_seen": [at(p.end if p.end is not None else minutes) for p in pods],
            "requests:cpu": [p.cpu for p in pods],
            "requests:memory": [p.memory for p in pods],
            "nonzero_requests:cpu": [p.cpu or 100 for p in pods],
            "nonzero_requests:memory": [p.memory or 200 * 2**20 for p in pods],
            "limits:cpu": [p.limits.get("cpu", 0) for p in pods],
            "limits:memory": [p.limits.get("memory", 0) for p in pods],
        }
    )
    grid = [at(m) for m in range(minutes + 1)]
    pod_rows: list[tuple[str, pd.Timestamp, float, float]] = []
    node_cpu = {n.name: np.full(len(grid), node_overhead_cpu) for n in nodes}
    node_mem = {n.name: np.full(len(grid), node_overhead_memory) for n in nodes}
    for p in pods:
        if p.node is None:
            continue
        end = p.end if p.end is not None else minutes
        for k, t in enumerate(grid):
            if p.start < k <= end:  # sample at t averages (t - 1m, t]
                pod_rows.append((p.uid, t, p.cpu_used, p.memory_used))
                node_cpu[p.node][k] += p.cpu_used
                node_mem[p.node][k] += p.memory_used
    node_usage = pd.DataFrame(
        [
            (n.name, t, node_cpu[n.name][k], node_mem[n.name][k])
            for n in nodes
            for k, t in enumerate(grid)
            if (n.first or 0) <= k <= (n.last if n.last is not None else minutes)
        ],
        columns=["node", "timestamp", "cpu", "memory"],
    )
    pod_usage = pd.DataFrame(pod_rows, columns=["uid", "timestamp", "cpu", "memory"])
    return make_snapshot(meta, node_frame, pod_frame, node_usage, pod_usage)

"""Small hand-made snapshots for the aggregate / violations / fragmentation tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot

T0 = pd.Timestamp("2026-11-01T00:00:00Z")
GI = 2**30


def build(
    *,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]] | None = None,
    node_usage: dict[str, Sequence[float | None]] | None = None,
    memory_usage: dict[str, Sequence[float | None]] | None = None,
    pod_usage: dict[str, Sequence[float | None]] | None = None,
    step: str = "1min",
    start: pd.Timestamp = T0,
) -> Snapshot:
    """A snapshot whose usage sample ``i`` is at ``start + (i + 1) * step``.

    ``node_usage``/``memory_usage`` map node → cpu millicores / memory bytes per sample (None =
    gap); ``pod_usage`` maps uid → cpu per sample (memory = cpu × 1000). Nodes default to
    4 cpu / 16Gi; pods default to 100m / 1Gi on n1.
    """
    step_td = pd.Timedelta(step)
    node_rows = []
    for spec in nodes:
        row = {"node": spec["node"], "pool": spec.get("pool", "general"),
               "allocatable:cpu": spec.get("cpu", 4000), "allocatable:memory": spec.get("memory", 16 * GI)}  # fmt: skip
        if "annotations" in spec:
            row["annotations"] = json.dumps(spec["annotations"])
        for key, value in spec.items():
            if key.startswith("allocatable:"):
                row[key] = value
        node_rows.append(row)
    pod_rows = []
    for i, spec in enumerate(pods or []):
        row = {
            "uid": spec.get("uid", f"u{i}"),
            "namespace": spec.get("namespace", "default"),
            "name": spec.get("name", f"pod-{i}"),
            "node": spec.get("node", "n1"),
            "owner_kind": spec.get("owner_kind", "ReplicaSet"),
            "priority": spec.get("priority"),
            "qos_class": spec.get("qos_class", "Burstable"),
            "labels": json.dumps(spec.get("labels", {})),
            "scheduled": spec.get("scheduled", start),
            "finished": spec.get("finished"),
            "requests:cpu": spec.get("cpu", 100),
            "requests:memory": spec.get("memory", GI),
            "nonzero_requests:cpu": spec.get("cpu", 100) or 100,
            "nonzero_requests:memory": spec.get("memory", GI) or 200 * 2**20,
        }
        for key, value in spec.items():
            if key.startswith("requests:"):
                row[key] = value
        pod_rows.append(row)
    length = max(
        [len(v) for v in (node_usage or {}).values()]
        + [len(v) for v in (pod_usage or {}).values()]
        + [1]
    )
    usage_rows = []
    for node, series in (node_usage or {}).items():
        mem = (memory_usage or {}).get(node, [GI] * len(series))
        for i, (cpu, memory) in enumerate(zip(series, mem, strict=True)):
            if cpu is not None:
                usage_rows.append(
                    {
                        "node": node,
                        "timestamp": start + step_td * (i + 1),
                        "cpu": cpu,
                        "memory": memory,
                    }
                )
    pod_usage_rows = []
    for uid, series in (pod_usage or {}).items():
        for i, cpu in enumerate(series):
            if cpu is not None:
                pod_usage_rows.append(
                    {
                        "uid": uid,
                        "timestamp": start + step_td * (i + 1),
                        "cpu": cpu,
                        "memory": cpu * 1000,
                    }
                )
    meta = SnapshotMeta(
        source="test", start=start.isoformat(), end=(start + step_td * length).isoformat(),
        step_seconds=int(step_td.total_seconds()), collected_at=start.isoformat(), analyzer_version="test",
    )  # fmt: skip
    pods_frame = pd.DataFrame(pod_rows) if pod_rows else pd.DataFrame(
        {"uid": [], "requests:cpu": [], "requests:memory": [], "nonzero_requests:cpu": [], "nonzero_requests:memory": []}
    )  # fmt: skip
    return make_snapshot(
        meta,
        pd.DataFrame(node_rows),
        pods_frame,
        pd.DataFrame(usage_rows, columns=["node", "timestamp", "cpu", "memory"]),
        pd.DataFrame(pod_usage_rows, columns=["uid", "timestamp", "cpu", "memory"]),
    )

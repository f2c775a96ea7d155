"""Small hand-made snapshots for the report tests, with numbers simple enough to compute by hand.

``tiny_cluster``: ``n_nodes`` nodes of 4 cores / 16 GiB in pools general/memory (alternating),
5-minute samples from midnight (the first sample at 00:05). Every node uses 1000m CPU and 4 GiB;
the hot node uses 3000m (75 %) for the samples 72..143 of each day (06:05–12:00, 72 samples =
360 minutes). Each node runs two pods requesting 500m / 1 GiB each (so 25 % CPU, 12.5 % memory
requested).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot

STEP = 300
GIB = 2**30


def tiny_cluster(
    *,
    n_nodes: int = 4,
    days: int = 1,
    hot_name: str = "node-0",
    start: str = "2026-11-01T00:00:00Z",
    drop_node_samples: int = 0,
) -> Snapshot:
    """The cluster described in the module docstring; ``drop_node_samples`` removes that many
    usage samples of the last node (a data gap)."""
    t0 = pd.Timestamp(start)
    end = t0 + pd.Timedelta(days=days)
    names = [hot_name] + [f"node-{i}" for i in range(1, n_nodes)]
    nodes = pd.DataFrame(
        {
            "node": names,
            "pool": ["general" if i % 2 == 0 else "memory" for i in range(n_nodes)],
            "labels": "{}",
            "annotations": "{}",
            "allocatable:cpu": 4000,
            "allocatable:memory": 16 * GIB,
            "capacity:cpu": 4000,
            "capacity:memory": 16 * GIB,
        }
    )
    stamps = pd.date_range(t0 + pd.Timedelta(seconds=STEP), end, freq=f"{STEP}s")
    per_day = 86400 // STEP
    frames = []
    for i, name in enumerate(names):
        cpu = np.full(len(stamps), 1000.0)
        if i == 0:
            for day in range(days):
                cpu[day * per_day + 72 : day * per_day + 144] = 3000.0
        frame = pd.DataFrame({"node": name, "timestamp": stamps, "cpu": cpu, "memory": 4.0 * GIB})
        if i == n_nodes - 1 and drop_node_samples:
            frame = frame.iloc[drop_node_samples:]
        frames.append(frame)
    node_usage = pd.concat(frames, ignore_index=True)
    n_pods = 2 * n_nodes
    pods = pd.DataFrame(
        {
            "uid": [f"uid-{i}" for i in range(n_pods)],
            "namespace": "default",
            "name": [f"pod-{i}" for i in range(n_pods)],
            "node": [names[i // 2] for i in range(n_pods)],
            "owner_kind": "ReplicaSet",
            "owner_name": "web-1",
            "workload_kind": "Deployment",
            "workload_name": "web",
            "priority": 0,
            "qos_class": "Burstable",
            "phase": "Running",
            "labels": "{}",
            "created": t0,
            "scheduled": t0,
            "started": t0,
            "requests:cpu": 500,
            "requests:memory": GIB,
            "limits:cpu": 1000,
            "limits:memory": GIB,
            "nonzero_requests:cpu": 500,
            "nonzero_requests:memory": GIB,
        }
    )
    pod_usage = pd.DataFrame(
        {
            "uid": np.repeat(pods["uid"].to_numpy(), len(stamps)),
            "timestamp": np.tile(stamps.to_numpy(), n_pods),
            "cpu": 300.0,
            "memory": GIB / 2,
        }
    )
    meta = SnapshotMeta(
        source="test:tiny",
        start=t0.isoformat(),
        end=end.isoformat(),
        step_seconds=STEP,
        collected_at=end.isoformat(),
        analyzer_version="test",
    )
    return make_snapshot(meta, nodes, pods, node_usage, pod_usage)


def with_gpus(snapshot: Snapshot, *, gpu_nodes: int = 2, gpus_per_node: int = 4) -> Snapshot:
    """``snapshot`` with ``gpu_nodes`` nodes of ``gpus_per_node`` GPUs and one pod (the last)
    asking for one GPU: so few GPU pods that the common shapes (95 % of pods) ask for none."""
    nodes = snapshot.nodes.copy()
    gpus = [gpus_per_node if i < gpu_nodes else 0 for i in range(len(nodes))]
    nodes["allocatable:nvidia.com/gpu"] = gpus
    nodes["capacity:nvidia.com/gpu"] = gpus
    pods = snapshot.pods.copy()
    pods["requests:nvidia.com/gpu"] = 0
    pods.loc[pods.index[-1], "requests:nvidia.com/gpu"] = 1
    pods.loc[pods.index[-1], "node"] = nodes["node"].iloc[0]
    return make_snapshot(snapshot.meta, nodes, pods, snapshot.node_usage, snapshot.pod_usage)


def ending_early(snapshot: Snapshot, last: str) -> Snapshot:
    """``snapshot`` whose data stops at ``last`` (e.g. 23:55, collected just after midnight):
    no usage after it, every node and pod last seen then; the range still claims its end."""
    cut = pd.Timestamp(last)
    nodes = snapshot.nodes.copy()
    nodes["last_seen"] = cut
    pods = snapshot.pods.copy()
    pods["last_seen"] = cut
    node_usage = snapshot.node_usage[snapshot.node_usage["timestamp"] <= cut]
    pod_usage = snapshot.pod_usage[snapshot.pod_usage["timestamp"] <= cut]
    return make_snapshot(snapshot.meta, nodes, pods, node_usage, pod_usage)

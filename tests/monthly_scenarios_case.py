"""A month whose right-sizing and scenarios are known by hand (issue 17's acceptance cluster).

History (September 2026, 30 days): pool ``pool`` of three 4-core / 16 GiB nodes; Deployments
``default/db`` (1 replica) and ``default/web`` (2 replicas), each pod requesting 2.1 cores and
4 GiB, using a p95 of 1.5 cores and at most 2 GiB every day (288 samples a day).

krr (CPU: the largest daily p95, no headroom; memory: the max × 1.15, rounded up to a MiB):
CPU 1.5 cores, memory 2 × 1.15 = 2.3 GiB = 2355.2 MiB → 2356 MiB per pod.

Snapshot (the busiest week): the same three nodes, one pod each (db-0 on n2, web-a on n0, web-b on
n1), db-0 may only run on n2 (nodeSelector disk=ssd). 2 × 2.1 = 4.2 > 4 cores: today's requests
never share a node, so only the right-sized pods (2 × 1.5 = 3 ≤ 4 < 4.5) packed by a bin-packing
scheduler fit on two nodes: "both" needs 2 nodes, every other scenario 3 — "both" frees a node
that neither right-sizing nor repacking frees alone. At "both"'s peak, db-0 and web-a share n2
(db-0 arrives first and must be on n2; most-allocated puts web-a beside it) and web-b is alone
on n1: draining n2 strands db-0 (no other ssd node), draining n1 strands web-b (1.5 cores do not
fit beside n2's 3 on 4).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pandas as pd
from monthly_history import PoolTruth, WorkloadTruth, const, write_history
from replay_fixtures import GI, N, P, build

from analyzer.core.snapshot import Snapshot, write_snapshot

MONTH = "2026-09"
STRATEGIES = ("kube-default", "most-allocated")


def snapshot() -> Snapshot:
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    pods = [
        P("db-0", "n2", cpu=2100, memory=4 * GI, start=1, cpu_used=300.0),
        P("web-a", "n0", cpu=2100, memory=4 * GI, start=2, cpu_used=300.0),
        P("web-b", "n1", cpu=2100, memory=4 * GI, start=3, cpu_used=300.0),
    ]
    snap = build(nodes, pods, minutes=30)
    node_frame = snap.nodes.copy()
    node_frame["labels"] = pd.array(["{}", "{}", '{"disk": "ssd"}'], dtype="string")
    pod_frame = snap.pods.copy()
    pod_frame["node_selector"] = pd.array(['{"disk": "ssd"}', "{}", "{}"], dtype="string")
    owners = {"db-0": "db", "web-a": "web", "web-b": "web"}
    pod_frame["workload_kind"] = pd.array(["Deployment"] * len(pod_frame), dtype="string")
    pod_frame["workload_name"] = pd.array([owners[u] for u in pod_frame["uid"]], dtype="string")
    return replace(snap, nodes=node_frame, pods=pod_frame)


def write_case(base: Path) -> tuple[Path, Path]:
    """(the nightly OUT holding history/, the snapshot folder) under ``base``."""
    out = base / "out"
    pool = PoolTruth("pool", nodes=3, node_cpu=4.0, node_memory=16.0,
                     requested_cpu=const(6.3), requested_memory=const(12.0),
                     used_cpu_p95=const(0.9), used_memory_p95=const(6.0))  # fmt: skip
    workloads = [
        WorkloadTruth(name, "pool", namespace="default", cpu_request=const(2.1),
                      memory_request=const(4.0), replicas=const(replicas), cpu_p95=const(1.5),
                      memory_max=const(2.0))
        for name, replicas in (("db", 1.0), ("web", 2.0))
    ]  # fmt: skip
    write_history(out / "history", date(2026, 9, 1), 30, [pool], workloads)
    snap = base / "snap"
    write_snapshot(snapshot(), snap)
    return out, snap

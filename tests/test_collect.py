"""Collecting the hand-specified small cluster from a real Prometheus reproduces it exactly.

The cluster (tests/small_cluster.py) is written as OpenMetrics, backfilled with promtool and served
by prometheus 2.42; expectations are the hand-computed values in small_cluster. Variants cover
node-exporter instance = node name vs hostIP:9100, kube-state-metrics without honor_labels
(exported_* labels), and HA pairs (every series twice with a replica label).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import small_cluster as sc

from analyzer.collect.run import CollectRequest, collect
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.core.snapshot_schema import resource_map
from analyzer.prom.settings import PromSettings

pytestmark = pytest.mark.prometheus

VARIANTS = {
    "node-name": {"convention": "node-name"},
    "host-ip-exported": {"convention": "host-ip", "honor_labels": False},
    "ha-pairs": {"convention": "node-name", "ha": True},
}


def _ts(seconds: float | None) -> pd.Timestamp | None:
    return None if seconds is None else pd.Timestamp(seconds, unit="s", tz="UTC")


@pytest.fixture(scope="module", params=list(VARIANTS))
def collected(
    request: pytest.FixtureRequest, small_prometheus: Callable[..., object]
) -> tuple[str, object]:
    variant = request.param
    server = small_prometheus(**VARIANTS[variant])
    result = collect(
        CollectRequest(
            PromSettings(server.url),  # type: ignore[attr-defined]
            datetime.fromtimestamp(sc.T0, UTC),
            datetime.fromtimestamp(sc.END, UTC),
            step_seconds=sc.STEP,
            chunk_points=25,  # several chunks per range query, exercising the merge
        )
    )
    return variant, result


def test_nodes_and_allocatable(collected: tuple[str, object]) -> None:
    variant, result = collected
    snapshot = result.snapshot  # type: ignore[attr-defined]
    assert not result.partial, result.problems  # type: ignore[attr-defined]
    nodes = snapshot.nodes.set_index("node")
    assert sorted(nodes.index) == ["node-a", "node-b"]
    for node, expected in sc.EXPECTED_NODES.items():
        allocatable = resource_map(nodes.loc[node], "allocatable")
        assert {k: v for k, v in allocatable.items() if v} == expected
    assert nodes.loc["node-b", "host_ip"] == "10.0.0.2"
    expected_convention = "host-ip" if VARIANTS[variant]["convention"] == "host-ip" else "node-name"
    assert snapshot.meta.instance_convention == expected_convention


def test_pods_requests_limits_owner_and_lifecycle(collected: tuple[str, object]) -> None:
    _, result = collected
    pods = result.snapshot.pods.set_index("uid")  # type: ignore[attr-defined]
    assert sorted(pods.index) == sorted(sc.EXPECTED_PODS)
    for uid, expected in sc.EXPECTED_PODS.items():
        row = pods.loc[uid]
        assert (row["namespace"], row["name"], row["node"]) == (
            expected["namespace"],
            expected["name"],
            expected["node"],
        )
        requests = resource_map(row, "requests")
        assert {k: v for k, v in requests.items() if v or k in expected["requests"]} == expected[
            "requests"
        ]
        assert resource_map(row, "nonzero_requests") == expected["nonzero"]
        limits = resource_map(row, "limits")
        assert {k: v for k, v in limits.items() if v or k in expected["limits"]} == expected[
            "limits"
        ]
        assert (row["owner_kind"], row["owner_name"]) == expected["owner"]
        assert (row["workload_kind"], row["workload_name"]) == expected["workload"]
        assert row["qos_class"] == expected["qos"] and row["phase"] == expected["phase"]
        for column in ("created", "scheduled", "started"):
            assert row[column] == _ts(expected[column]), column
        if expected["finished"] is None:
            assert pd.isna(row["finished"])
        else:
            assert row["finished"] == _ts(expected["finished"])


def test_node_usage_matches_at_every_sample(collected: tuple[str, object]) -> None:
    _, result = collected
    usage = result.snapshot.node_usage  # type: ignore[attr-defined]
    for node in sc.NODES:
        rows = usage[usage["node"] == node].set_index("timestamp")
        assert len(rows) == sc.K
        for k in range(sc.K):
            row = rows.loc[_ts(sc.T0 + k * sc.STEP)]
            assert row["memory"] == sc.expected_node_memory(node, k)  # exact
            if k == 0:
                assert pd.isna(row["cpu"])  # a rate needs two samples
            else:
                assert row["cpu"] == pytest.approx(sc.expected_node_cpu(node, k), rel=1e-9)


def test_pod_usage_counts_app_containers_only_and_follows_uids(
    collected: tuple[str, object],
) -> None:
    _, result = collected
    usage = result.snapshot.pod_usage  # type: ignore[attr-defined]
    for uid, (ks, cpu_seconds, memory) in sc.POD_USAGE.items():
        rows = usage[usage["uid"] == uid].set_index("timestamp").sort_index()
        # Samples exactly while the pod's containers ran: no lookback tail, no other pod's data.
        assert list(rows.index) == [_ts(sc.T0 + k * sc.STEP) for k in ks]
        for k in ks:
            row = rows.loc[_ts(sc.T0 + k * sc.STEP)]
            assert row["memory"] == memory(k)
            if k == ks[0]:
                assert pd.isna(row["cpu"])
            else:
                assert row["cpu"] == pytest.approx(cpu_seconds / sc.STEP * 1000, rel=1e-9)


def test_snapshot_round_trips_through_disk(collected: tuple[str, object], tmp_path: Path) -> None:
    _, result = collected
    out = write_snapshot(result.snapshot, tmp_path / "snap")  # type: ignore[attr-defined]
    loaded = read_snapshot(out)
    assert loaded.meta.source.startswith("http://127.0.0.1:")
    assert loaded.meta.step_seconds == sc.STEP
    assert set(loaded.meta.coverage["queries"]) >= {"pod_info", "node_cpu_busy"}
    # series counts are taken before the usage tables are consumed: the three pods with app
    # containers have CPU and memory series, every node its node-exporter series
    series = {name: q["series"] for name, q in loaded.meta.coverage["queries"].items()}
    assert series["pod_cpu_usage"] == series["pod_memory_working_set"] == 3
    assert series["node_memory_total"] == series["node_memory_available"] == 2
    pd.testing.assert_frame_equal(loaded.pods, result.snapshot.pods)  # type: ignore[attr-defined]

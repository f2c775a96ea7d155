"""The synthetic cluster generator: determinism, model invariants, hand-checked shapes."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.resources import pod_limits, pod_requests
from analyzer.core.snapshot import read_snapshot
from analyzer.core.snapshot_schema import resource_map
from analyzer.sources import (
    PRIORITY_CLASSES,
    ClusterState,
    PlacementRequest,
    SyntheticCluster,
    SyntheticSpec,
    generate,
)
from analyzer.sources.usage import HOT_TARGET, SANDBOX_CPU, SANDBOX_MEMORY

GIB = 2**30
MIB = 2**20
SPEC = SyntheticSpec(seed=7, nodes=12, days=1, step=300, churn=2.0, pending_fraction=0.05)


@cache
def cluster() -> SyntheticCluster:
    return generate(SPEC)


def pods_of(workload: str) -> pd.DataFrame:
    pods = cluster().snapshot.pods
    return pods[pods["workload_name"] == workload]


def test_same_seed_same_cluster_other_seed_other_cluster() -> None:
    again = generate(SPEC)
    for table in ("nodes", "pods", "node_usage", "pod_usage"):
        pd.testing.assert_frame_equal(
            getattr(cluster().snapshot, table), getattr(again.snapshot, table)
        )
    assert again.containers == cluster().containers
    other = generate(SyntheticSpec(seed=8, nodes=12, days=1, step=300, churn=2.0))
    assert set(other.snapshot.pods["uid"]).isdisjoint(cluster().snapshot.pods["uid"])


def test_pools_and_allocatable_follow_the_reservation_tables() -> None:
    nodes = cluster().snapshot.nodes.set_index("node")
    assert set(nodes["pool"]) == {"general", "memory", "compute", "gpu"}
    general = nodes[nodes["pool"] == "general"].iloc[0]
    # 16 cores: 6 % of core 1 + 1 % of core 2 + 0.5 % of cores 3-4 + 0.25 % of 12 more = 110m
    assert general["capacity:cpu"] == 16000
    assert general["allocatable:cpu"] == 16000 - (60 + 10 + 10 + 30)
    # 64Gi: 25 % of 4Gi + 20 % of 4Gi + 10 % of 8Gi + 6 % of 48Gi, + 100Mi eviction threshold
    reserved = 4 * GIB // 4 + 4 * GIB * 20 // 100 + 8 * GIB // 10 + 48 * GIB * 6 // 100
    assert general["allocatable:memory"] == 64 * GIB - reserved - 100 * MIB
    gpu = nodes[nodes["pool"] == "gpu"]
    assert (gpu["allocatable:nvidia.com/gpu"] == 4).all()
    assert (nodes.loc[nodes["pool"] != "gpu", "allocatable:nvidia.com/gpu"] == 0).all()
    assert (nodes["allocatable:cpu"] < nodes["capacity:cpu"]).all()
    assert (nodes["allocatable:memory"] < nodes["capacity:memory"]).all()


def test_one_node_exporter_pod_per_node_and_device_plugin_only_on_gpu_nodes() -> None:
    nodes = cluster().snapshot.nodes
    exporters = pods_of("node-exporter")
    assert (exporters["owner_kind"] == "DaemonSet").all()
    assert sorted(exporters["node"]) == sorted(nodes["node"])
    plugin_nodes = set(pods_of("nvidia-device-plugin")["node"])
    assert plugin_nodes == set(nodes.loc[nodes["pool"] == "gpu", "node"])


def test_requests_and_limits_columns_are_the_kubernetes_rule_of_the_containers() -> None:
    pods = cluster().snapshot.pods
    for _, row in pods.iterrows():
        spec = cluster().containers[row["uid"]]
        requests = resource_map(row, "requests")
        assert {k: v for k, v in requests.items() if v} == {
            k: v for k, v in pod_requests(spec).items() if v
        }
        limits = resource_map(row, "limits")
        assert {k: v for k, v in limits.items() if v} == {
            k: v for k, v in pod_limits(spec).items() if v
        }
        assert resource_map(row, "nonzero_requests") == pod_requests(spec, non_zero=True)


def test_hand_computed_pod_shapes() -> None:
    # search: app 2 cpu/4Gi, init warm-index 4 cpu/1Gi -> init dominates cpu, app memory
    search = pods_of("search").iloc[0]
    assert (search["requests:cpu"], search["requests:memory"]) == (4000, 4 * GIB)
    # renderer: 500m/1Gi (limits 1/1Gi) + kata overhead 250m/160Mi on requests and limits
    renderer = pods_of("renderer").iloc[0]
    assert (renderer["requests:cpu"], renderer["requests:memory"]) == (750, GIB + 160 * MIB)
    assert (renderer["limits:cpu"], renderer["limits:memory"]) == (1250, GIB + 160 * MIB)
    # debug-toolbox: nothing set -> BestEffort, non-zero defaults 100m / 200Mi
    toolbox = pods_of("debug-toolbox").iloc[0]
    assert toolbox["qos_class"] == "BestEffort"
    assert (toolbox["requests:cpu"], toolbox["requests:memory"]) == (0, 0)
    assert (toolbox["nonzero_requests:cpu"], toolbox["nonzero_requests:memory"]) == (100, 200 * MIB)
    # web-frontend: app 250m/256Mi/1Gi storage + log-shipper 50m/64Mi; non-zero = the requests
    web = pods_of("web-frontend").iloc[0]
    assert (web["requests:cpu"], web["requests:memory"]) == (300, 320 * MIB)
    assert web["requests:ephemeral-storage"] == GIB
    # PodLimits sums the limits that are set: only the log-shipper's 100m (the app has none)
    assert web["limits:cpu"] == 100
    # reports (CronJob): app 500m/2Gi, init fetch 1 cpu/3Gi -> the init phase dominates both
    report = pods_of("reports").iloc[0]
    assert (report["requests:cpu"], report["requests:memory"]) == (1000, 3 * GIB)
    checkout = pods_of("checkout-api").iloc[0]
    assert checkout["qos_class"] == "Guaranteed"
    assert checkout["priority_class"] == "high" and checkout["priority"] == 10000
    assert set(cluster().snapshot.pods["qos_class"]) == {"BestEffort", "Burstable", "Guaranteed"}


def test_priorities_follow_the_classes() -> None:
    pods = cluster().snapshot.pods
    assert (pods["priority"] == pods["priority_class"].map(PRIORITY_CLASSES)).all()
    assert (pods_of("node-exporter")["priority"] == 2000001000).all()
    assert set(pods["priority_class"]) >= {"system-node-critical", "high", "", "batch-low"}


def test_workload_kinds_jobs_finish_and_names_are_reused_with_new_uids() -> None:
    pods = cluster().snapshot.pods
    assert pods["uid"].is_unique
    deployments = pods[pods["workload_kind"] == "Deployment"]
    assert (deployments["owner_kind"] == "ReplicaSet").all()
    assert all(
        o.startswith(w + "-")
        for o, w in zip(deployments["owner_name"], deployments["workload_name"], strict=True)
    )
    jobs = pods[pods["owner_kind"] == "Job"]
    done = jobs[jobs["phase"].isin(["Succeeded", "Failed"])]
    assert len(done) > 0 and done["finished"].notna().all()
    assert (done["finished"] > done["started"]).all()
    assert (pods_of("reports")["workload_kind"] == "CronJob").all()
    stateful = pods[pods["owner_kind"] == "StatefulSet"]
    reused = stateful.groupby("name")["uid"].nunique()
    assert (reused > 1).any(), "a restarted StatefulSet pod keeps its name with a new uid"


def test_some_pods_wait_pending_before_they_are_scheduled() -> None:
    pods = cluster().snapshot.pods
    waited = (pods["scheduled"] - pods["created"]).dt.total_seconds()
    assert (waited > 60).sum() >= 2
    placed = pods[pods["node"].notna()]
    assert (placed["scheduled"] >= placed["created"]).all()
    assert (placed["started"] >= placed["scheduled"]).all()
    assert pods.loc[pods["node"].isna(), "scheduled"].isna().all()


def test_gpu_nodes_run_only_gpu_workloads_and_daemonsets() -> None:
    snap = cluster().snapshot
    gpu_nodes = set(snap.nodes.loc[snap.nodes["pool"] == "gpu", "node"])
    on_gpu = snap.pods[snap.pods["node"].isin(gpu_nodes)]
    assert ((on_gpu["requests:nvidia.com/gpu"] > 0) | (on_gpu["owner_kind"] == "DaemonSet")).all()


def _node_vs_pods() -> pd.DataFrame:
    snap = cluster().snapshot
    usage = snap.pod_usage.merge(snap.pods[["uid", "node"]], on="uid")
    per_node = usage.groupby(["node", "timestamp"]).agg(
        cpu=("cpu", "sum"), memory=("memory", "sum"), pods=("uid", "count")
    )
    per_node.columns = ["cpu_pods", "memory_pods", "pods"]
    merged = snap.node_usage.set_index(["node", "timestamp"]).join(per_node)
    return merged.fillna({"cpu_pods": 0, "memory_pods": 0, "pods": 0})


def test_node_usage_is_overhead_plus_sandboxes_plus_its_pods() -> None:
    merged = _node_vs_pods()
    overhead_cpu = merged["cpu"] - merged["cpu_pods"] - SANDBOX_CPU * merged["pods"]
    overhead_mem = merged["memory"] - merged["memory_pods"] - SANDBOX_MEMORY * merged["pods"]
    assert (overhead_cpu > 0).all() and (overhead_mem > 0).all()
    assert (merged["cpu"] >= merged["cpu_pods"]).all()
    capacity = cluster().snapshot.nodes.set_index("node")
    nodes = merged.index.get_level_values("node")
    assert (merged["cpu"].to_numpy() <= capacity.loc[nodes, "capacity:cpu"].to_numpy()).all()
    assert (merged["memory"].to_numpy() <= capacity.loc[nodes, "capacity:memory"].to_numpy()).all()
    snap = cluster().snapshot
    assert len(snap.node_usage) == len(snap.nodes) * SPEC.points
    assert (snap.node_usage["cpu"] == np.floor(snap.node_usage["cpu"])).all()


def test_pod_usage_only_while_the_pod_runs() -> None:
    snap = cluster().snapshot
    usage = snap.pod_usage.merge(snap.pods[["uid", "started", "finished", "node"]], on="uid")
    assert usage["node"].notna().all()
    step = pd.Timedelta(seconds=SPEC.step)
    # a row at t covers (t - step, t]: the pod ran for all of it
    assert (usage["timestamp"] - step >= usage["started"]).all()
    ended = usage["finished"].notna()
    assert (usage.loc[ended, "timestamp"] <= usage.loc[ended, "finished"]).all()
    assert (usage["timestamp"] >= snap.start).all() and (usage["timestamp"] <= snap.end).all()


def test_hot_nodes_exceed_65_percent_cpu_for_hours() -> None:
    snap = cluster().snapshot
    hot = cluster().hot_nodes
    assert hot
    alloc = snap.nodes.set_index("node")["allocatable:cpu"]
    usage = snap.node_usage.assign(share=lambda f: f["cpu"] / f["node"].map(alloc).astype(float))
    for node in hot:
        over = usage.loc[usage["node"] == node, "share"] > 0.65
        hours = over.sum() * SPEC.step / 3600
        assert hours >= 4, (node, hours)
        assert usage.loc[usage["node"] == node, "share"].max() <= HOT_TARGET + 0.01
    cold = usage[~usage["node"].isin(hot)]
    assert (cold["share"] < 0.65).mean() > 0.9


def test_a_custom_placer_is_used() -> None:
    calls: list[str] = []

    def first_fit(pod: PlacementRequest, state: ClusterState) -> int | None:
        calls.append(pod.uid)
        feasible = np.flatnonzero(state.fits(pod))
        return int(feasible[0]) if len(feasible) else None

    small = generate(SyntheticSpec(seed=3, nodes=6, days=0.5, step=600), place=first_fit)
    pods = small.snapshot.pods
    assert set(calls) >= set(pods.loc[pods["node"].notna(), "uid"])
    apps = pods[(pods["owner_kind"] != "DaemonSet") & pods["node"].notna()]
    # first fit fills the first general node before using another one
    assert apps["node"].value_counts().idxmax() == "general-0000"


@pytest.mark.parametrize(
    "kwargs",
    [{"nodes": 0}, {"step": 0}, {"days": 0}, {"churn": -1.0}, {"hot_nodes": 2.0}],
)
def test_bad_spec_is_an_input_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(InputError):
        SyntheticSpec(**kwargs)  # type: ignore[arg-type]


def test_generate_command_writes_snapshot_and_openmetrics(tmp_path: Path) -> None:
    args = ["generate", "--nodes", "4", "--days", "0.1", "--step", "10m", "--seed", "5"]
    first = CliRunner().invoke(
        main,
        [*args, "--out", str(tmp_path / "a"), "--openmetrics", str(tmp_path / "a.om")],
    )
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b")])
    assert second.exit_code == 0, second.output
    snapshot = read_snapshot(tmp_path / "a")
    assert len(snapshot.nodes) == 4 and snapshot.meta.step_seconds == 600
    for name in ("meta.json", "nodes.parquet", "pods.parquet", "pod_usage.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a.om").read_text().endswith("# EOF\n")


def test_generate_command_rejects_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["generate", "--out", str(tmp_path / "s"), "--step", "1.5s"])
    assert result.exit_code == 2 and "--step" in result.output
    result = CliRunner().invoke(main, ["generate", "--out", str(tmp_path / "s"), "--nodes", "0"])
    assert result.exit_code == 2 and "--nodes" in result.output
    result = CliRunner().invoke(
        main,
        [
            *("generate", "--out", str(tmp_path / "s"), "--openmetrics", str(tmp_path / "s.om")),
            *("--step", "1m", "--constant-step", "90s"),
        ],
    )
    assert result.exit_code == 2 and "--constant-step" in result.output
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.om").exists()


def test_a_placer_choosing_a_missing_node_is_refused() -> None:
    def nowhere(pod: PlacementRequest, state: ClusterState) -> int | None:
        return len(state.nodes)

    with pytest.raises(ValueError, match="no such node"):
        generate(SyntheticSpec(seed=1, nodes=6, days=0.1, step=600), place=nowhere)

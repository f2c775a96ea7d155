"""Acceptance: collecting the synthetic cluster from a real Prometheus reproduces its ground truth.

The generator (analyzer.sources) gives the snapshot directly (ground truth) and as OpenMetrics in
kube-state-metrics / node-exporter / cAdvisor shape; promtool backfills it and prometheus 2.42
serves it. Both node-exporter instance conventions are tested. Tolerances are the issue's: same
nodes/allocatable and pods (uid, node, requests, limits) exactly; lifecycle times within one step
plus the 5 m lookback; cpu within 1 %; memory exactly at sample points.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analyzer.collect.run import CollectRequest, CollectResult, collect
from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import resources_in
from analyzer.prom.settings import PromSettings
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus
LOOKBACK = 300  # prometheus --query.lookback-delta default


@pytest.fixture(scope="module")
def cluster() -> object:
    return generate(SyntheticSpec(seed=3, nodes=6, days=1, step=300))


@pytest.fixture(scope="module", params=["node-name", "host-ip"])
def pair(
    request: pytest.FixtureRequest,
    cluster: object,
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Snapshot, CollectResult, str]:
    path = tmp_path_factory.mktemp("synthetic") / f"{request.param}.om"
    write_openmetrics(cluster, path, instance_convention=request.param)  # type: ignore[arg-type]
    server = prometheus_from_openmetrics(path)
    truth: Snapshot = cluster.snapshot  # type: ignore[attr-defined]
    result = collect(
        CollectRequest(
            PromSettings(server.url),  # type: ignore[attr-defined]
            truth.start.to_pydatetime(),
            truth.end.to_pydatetime(),
            step_seconds=truth.meta.step_seconds,
            # KSM does not export PriorityClass values; users pass them (--priority-class).
            priority_classes=tuple(truth.meta.extra["priority_classes"].items()),
            # host-ip also runs window queries as 6 evaluations of 4 h each, merged client-side.
            window_points=48 if request.param == "host-ip" else 1440,
        )
    )
    return truth, result, request.param


def _resources(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """``<kind>:*`` columns as a frame, columns missing on one side count as 0."""
    return frame[[f"{kind}:{r}" for r in resources_in(frame, kind)]].rename(
        columns=lambda c: c.split(":", 1)[1]
    )


def _assert_same_resources(truth: pd.DataFrame, got: pd.DataFrame, kind: str) -> None:
    a, b = _resources(truth, kind), _resources(got, kind)
    columns = sorted(set(a.columns) | set(b.columns))
    a = a.reindex(columns=columns, fill_value=0)
    b = b.reindex(index=a.index, columns=columns, fill_value=0)
    mismatch = (a != b).any(axis=1)
    assert not mismatch.any(), (
        f"{kind} differ:\n{pd.concat([a[mismatch], b[mismatch]], keys=['truth', 'got']).head(10)}"
    )


def test_same_nodes_and_allocatable(pair: tuple[Snapshot, CollectResult, str]) -> None:
    truth, result, convention = pair
    assert not result.partial, result.problems
    got = result.snapshot
    assert got.meta.instance_convention == convention
    t, g = truth.nodes.set_index("node"), got.nodes.set_index("node")
    assert sorted(t.index) == sorted(g.index)
    _assert_same_resources(t, g, "allocatable")
    _assert_same_resources(t, g, "capacity")


def test_same_pods_requests_limits_and_lifecycle(pair: tuple[Snapshot, CollectResult, str]) -> None:
    truth, result, _ = pair
    step = truth.meta.step_seconds
    t, g = truth.pods.set_index("uid"), result.snapshot.pods.set_index("uid")
    assert sorted(t.index) == sorted(g.index)
    g = g.loc[t.index]
    assert (t["node"].fillna("") == g["node"].fillna("")).all()
    assert (t["namespace"] == g["namespace"]).all() and (t["name"] == g["name"]).all()
    for kind in ("requests", "limits", "nonzero_requests"):
        _assert_same_resources(t, g, kind)
    assert (t["owner_kind"] == g["owner_kind"]).all()
    assert (t["workload_kind"] == g["workload_kind"]).all() and (
        t["workload_name"] == g["workload_name"]
    ).all()
    assert (t["qos_class"] == g["qos_class"]).all()
    assert (t["priority_class"].fillna("") == g["priority_class"].fillna("")).all()
    assert (t["priority"] == g["priority"]).all()
    for column in ("created", "scheduled", "started", "finished"):
        a, b = t[column], g[column]
        assert (a.isna() == b.isna()).all(), column
        delta = (b - a).dt.total_seconds().abs().dropna()
        assert (delta <= step + LOOKBACK).all(), f"{column}: max off by {delta.max()} s"


def _compare_usage(truth: pd.DataFrame, got: pd.DataFrame, key: str) -> pd.DataFrame:
    merged = truth.merge(
        got, on=[key, "timestamp"], how="left", suffixes=("_t", "_g"), indicator=True
    )
    assert (merged["_merge"] == "both").all(), "every ground-truth sample must be collected"
    assert (merged["memory_t"] == merged["memory_g"]).all(), "memory must be exact at sample points"
    cpu = merged.dropna(subset=["cpu_t"])
    assert cpu["cpu_g"].notna().all()
    error = (cpu["cpu_g"] - cpu["cpu_t"]).abs() / cpu["cpu_t"].abs().clip(lower=1.0)
    assert (error <= 0.01).all(), f"cpu off by up to {error.max():.3%}"
    return merged


def test_node_usage_within_tolerance(pair: tuple[Snapshot, CollectResult, str]) -> None:
    truth, result, _ = pair
    _compare_usage(truth.node_usage, result.snapshot.node_usage, "node")
    assert len(result.snapshot.node_usage) == len(truth.node_usage)


def test_pod_usage_within_tolerance(pair: tuple[Snapshot, CollectResult, str]) -> None:
    truth, result, _ = pair
    got = result.snapshot.pod_usage
    _compare_usage(truth.pod_usage, got, "uid")
    # Extra collected rows may only be a pod's first sample: memory known, cpu not (a rate needs two).
    extra = got.merge(
        truth.pod_usage[["uid", "timestamp"]], on=["uid", "timestamp"], how="left", indicator=True
    )
    extra = extra[extra["_merge"] == "left_only"]
    assert extra["cpu"].isna().all()
    first = got.groupby("uid")["timestamp"].min()
    assert np.array_equal(extra["timestamp"].to_numpy(), first.loc[extra["uid"]].to_numpy())


def _as_set(text: str) -> set[frozenset[tuple[str, str]]]:
    """A JSON list of objects as a set (order and duplicates carry no meaning)."""
    return {frozenset(item.items()) for item in json.loads(text)}


def test_same_scheduling_constraints(pair: tuple[Snapshot, CollectResult, str]) -> None:
    """Taints, tolerations and nodeSelectors survive KSM's label form and come back as generated.

    The generator taints GPU nodes, gives DaemonSets ``operator: Exists`` and GPU workloads a keyed
    toleration, and pool-restricted workloads a ``cloud.google.com/gke-nodepool`` selector, which
    KSM exports sanitised; node labels are not exported here, so the key comes back through the
    well-known keys, with no warning.
    """
    truth, result, _ = pair
    got = result.snapshot
    t, g = truth.nodes.set_index("node"), got.nodes.set_index("node").loc[truth.nodes["node"]]
    assert any(json.loads(x) for x in t["taints"]), "the fixture must have tainted nodes"
    for node in t.index:
        assert _as_set(t.at[node, "taints"]) == _as_set(g.at[node, "taints"]), node
    tp, gp = truth.pods.set_index("uid"), got.pods.set_index("uid").loc[truth.pods["uid"]]
    assert any(json.loads(x) for x in tp["tolerations"])
    assert any(json.loads(x) for x in tp["node_selector"])
    for uid in tp.index:
        assert _as_set(tp.at[uid, "tolerations"]) == _as_set(gp.at[uid, "tolerations"]), uid
        assert json.loads(tp.at[uid, "node_selector"]) == json.loads(gp.at[uid, "node_selector"])
    assert not [w for w in got.meta.warnings if "nodeSelector" in w]


def test_constraints_with_node_labels_and_without_honor_labels(
    cluster: object,
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With kube_node_labels exported and KSM scraped without honor_labels (``exported_node``),
    the node label keys recover the selector key and the constraints still match the truth."""
    path = tmp_path_factory.mktemp("synthetic") / "labels-no-honor.om"
    write_openmetrics(cluster, path, node_labels=True, ksm_honor_labels=False)  # type: ignore[arg-type]
    server = prometheus_from_openmetrics(path)
    truth: Snapshot = cluster.snapshot  # type: ignore[attr-defined]
    got = collect(
        CollectRequest(
            PromSettings(server.url),  # type: ignore[attr-defined]
            truth.start.to_pydatetime(),
            truth.end.to_pydatetime(),
            step_seconds=truth.meta.step_seconds,
        )
    ).snapshot
    assert any("cloud.google.com/gke-nodepool" in x for x in got.nodes["labels"])
    t, g = truth.nodes.set_index("node"), got.nodes.set_index("node").loc[truth.nodes["node"]]
    assert [_as_set(x) for x in t["taints"]] == [_as_set(x) for x in g["taints"]]
    tp, gp = truth.pods.set_index("uid"), got.pods.set_index("uid").loc[truth.pods["uid"]]
    assert [_as_set(x) for x in tp["tolerations"]] == [_as_set(x) for x in gp["tolerations"]]
    assert [json.loads(x) for x in tp["node_selector"]] == [
        json.loads(x) for x in gp["node_selector"]
    ]
    assert not [w for w in got.meta.warnings if "nodeSelector" in w]

"""The generator records the scheduling constraints its placement obeys, in the snapshot and in KSM.

Facts checked: GPU nodes (and only they) carry ``nvidia.com/gpu=present:NoSchedule``; every placed
pod's node passes the TaintToleration and NodeAffinity rules for the pod's recorded tolerations and
nodeSelector (so a replay sees the same constraints the generator placed under); the OpenMetrics
text has the matching ``kube_node_spec_taint``/``kube_pod_tolerations``/``kube_pod_nodeselectors``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from analyzer.scheduling.constraint_types import constraints_from_json, taints_from_json
from analyzer.sources import SyntheticCluster, SyntheticSpec, generate, write_openmetrics
from analyzer.sources.kube_placement import kube_placer

SPEC = SyntheticSpec(seed=5, nodes=10, days=0.25, step=300, churn=2.0, pending_fraction=0.05)
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


@cache
def cluster() -> SyntheticCluster:
    return generate(SPEC)


def _placements_obey_constraints(snapshot_cluster: SyntheticCluster) -> int:
    nodes = snapshot_cluster.snapshot.nodes.set_index("node")
    pods = snapshot_cluster.snapshot.pods
    checked = 0
    for _, pod in pods[pods["node"].notna()].iterrows():
        node = nodes.loc[pod["node"]]
        constraints = constraints_from_json(pod["tolerations"], pod["node_selector"])
        assert constraints.tolerates_all(taints_from_json(node["taints"])) is None, pod["name"]
        assert constraints.matches(json.loads(node["labels"])), pod["name"]
        checked += 1
    return checked


def test_gpu_nodes_are_tainted_and_placements_obey_constraints() -> None:
    nodes = cluster().snapshot.nodes
    for _, row in nodes.iterrows():
        expected = GPU_TAINT if row["pool"] == "gpu" else []
        assert json.loads(row["taints"]) == expected
    assert (nodes["pool"] == "gpu").any()
    pods = cluster().snapshot.pods
    # ordinary pods tolerate nothing; GPU workloads and DaemonSets tolerate the GPU taint
    assert (pods["tolerations"] == "[]").any() and (pods["tolerations"] != "[]").any()
    assert (pods["node_selector"] != "{}").any()
    assert _placements_obey_constraints(cluster()) > 20


def test_kube_placement_obeys_constraints() -> None:
    placed = generate(SPEC, place=kube_placer("most-allocated", seed=1))
    assert _placements_obey_constraints(placed) > 20


def test_ksm_constraint_series(tmp_path: Path) -> None:
    path = tmp_path / "c.om"
    write_openmetrics(cluster(), path, node_exporter_cpus=1)
    text = path.read_text()
    taint_nodes = set(re.findall(r'^kube_node_spec_taint\{[^}]*node="([^"]+)"', text, re.M))
    nodes = cluster().snapshot.nodes
    assert taint_nodes == set(nodes.loc[nodes["pool"] == "gpu", "node"])
    lines = [line for line in text.splitlines() if line.startswith("kube_node_spec_taint{")]
    assert all(
        'key="nvidia.com/gpu"' in x and 'value="present"' in x and 'effect="NoSchedule"' in x
        for x in lines
    )
    pods = cluster().snapshot.pods.set_index("uid")
    for match in re.finditer(r"^kube_pod_tolerations\{([^}]*)\}", text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        recorded = json.loads(pods.loc[labels["uid"], "tolerations"])
        own = {k: labels[k] for k in ("key", "operator", "value", "effect") if k in labels}
        assert own in recorded
    selectors = re.findall(r"^kube_pod_nodeselectors\{([^}]*)\}", text, re.M)
    assert selectors
    for body in selectors:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', body))
        recorded = json.loads(pods.loc[labels["uid"], "node_selector"])
        assert (
            labels["nodeselector_cloud_google_com_gke_nodepool"]
            == recorded["cloud.google.com/gke-nodepool"]
        )

"""Round trip: generate (zones, spread, anti-affinity) -> Kubernetes objects JSON -> collect
--kube-objects from a real Prometheus -> the snapshot pods carry their templates' fields.

kube-state-metrics exports no affinity and no topology spread constraints, so without the objects
the collected columns are empty; with them every pod gets exactly the generator's ground truth,
matched through its owner chain (pod -> ReplicaSet -> Deployment, pod -> Job -> CronJob, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.sources import SyntheticSpec, generate, write_openmetrics
from analyzer.sources.kube_objects import kube_objects
from analyzer.whatif.notes import field_source_notes

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(scope="module")
def cluster() -> Any:
    return generate(SyntheticSpec(seed=3, nodes=6, days=1, step=300, zones=2, pod_constraints=True))


@pytest.fixture(scope="module")
def server(
    cluster: Any,
    prometheus_from_openmetrics: Callable[..., Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    om = tmp_path_factory.mktemp("kubeobj") / "c.om"
    write_openmetrics(cluster, om, node_labels=True)
    return prometheus_from_openmetrics(om)


@pytest.mark.prometheus
def test_collect_with_kube_objects_matches_the_generator(
    cluster: Any, server: Any, tmp_path: Path
) -> None:
    truth: Snapshot = cluster.snapshot
    # the fixture has what the test is about: spread, required and preferred anti-affinity
    assert any("DoNotSchedule" in t for t in truth.pods["topology_spread"])
    assert any("requiredDuringScheduling" in a for a in truth.pods["affinity"])
    assert any("preferredDuringScheduling" in a for a in truth.pods["affinity"])
    objects = tmp_path / "objects.json"
    listed = kube_objects(cluster)
    # NodePorts: one ReplicaSet's containers bind host port 8080; one DaemonSet runs in the host
    # network, so its containerPort 9100 is a host port (API defaulting)
    rs = next(i for i in listed["items"] if i["kind"] == "ReplicaSet")
    rs["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "hostPort": 8080}
    ]
    ds = next(i for i in listed["items"] if i["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["hostNetwork"] = True
    ds["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
    objects.write_text(json.dumps(listed))
    args = [
        "collect",
        "--prometheus",
        server.url,
        "--start",
        truth.meta.start,
        "--end",
        truth.meta.end,
        "--step",
        "5m",
        "--kube-objects",
        str(objects),
    ]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "snap")])
    assert result.exit_code == 0, result.output
    got = read_snapshot(tmp_path / "snap")
    t = truth.pods.set_index("uid")
    g = got.pods.set_index("uid").loc[t.index]
    for uid in t.index:
        assert json.loads(g.at[uid, "affinity"]) == json.loads(t.at[uid, "affinity"]), uid
        assert json.loads(g.at[uid, "topology_spread"]) == json.loads(t.at[uid, "topology_spread"])
        # KSM's pod labels are not exported by the fixture: the template's labels fill them
        assert json.loads(g.at[uid, "labels"]) == json.loads(t.at[uid, "labels"]), uid
        assert int(g.at[uid, "priority"]) == int(t.at[uid, "priority"]), uid
        assert (g.at[uid, "workload_kind"], g.at[uid, "workload_name"]) == (
            t.at[uid, "workload_kind"],
            t.at[uid, "workload_name"],
        )
    ports = {
        ("ReplicaSet", rs["metadata"]["name"]): [["TCP", "0.0.0.0", 8080]],
        ("DaemonSet", ds["metadata"]["name"]): [["TCP", "0.0.0.0", 9100]],
    }
    for uid in t.index:
        owner = (t.at[uid, "owner_kind"], t.at[uid, "owner_name"])
        assert json.loads(g.at[uid, "host_ports"]) == ports.get(owner, []), uid
    assert set(ports) <= set(zip(t["owner_kind"], t["owner_name"], strict=True))
    sources = got.meta.extra["field_sources"]["pods"]
    n = len(t)
    assert sources["host_ports"] == {"objects": n}
    assert sources["affinity"] == {"objects": n} and sources["labels"] == {"objects": n}
    # tolerations and nodeSelectors were exported by KSM: observed, not taken from the objects
    assert sources["tolerations"] == {"metrics": n}
    nodes = got.nodes.set_index("node")
    zones = {json.loads(nodes.at[name, "labels"])[ZONE] for name in nodes.index}
    assert len(zones) == 2
    assert {pc["name"] for pc in got.objects["PriorityClass"]} >= {"high", "batch-low"}
    assert got.objects["PodDisruptionBudget"]
    # the generator's snapshot keeps the same PDBs and PriorityClasses as collect does
    assert got.objects == truth.objects
    # without the objects the same data has no affinity, and the notes say they are unknown
    bare = CliRunner().invoke(main, [*args[:-2], "--out", str(tmp_path / "bare")])
    assert bare.exit_code == 0, bare.output
    plain = read_snapshot(tmp_path / "bare")
    assert set(plain.pods["affinity"]) == {"{}"}
    assert "affinity and topology spread constraints are unknown" in field_source_notes(plain)[0]
    said = " ".join(field_source_notes(got))
    assert f"affinity: {n:,} read from Kubernetes objects" in said
    assert f"tolerations: {n:,} observed in Prometheus" in said
    assert f"host ports: {n:,} read from Kubernetes objects" in said


@pytest.mark.prometheus
def test_check_names_the_label_allowlist(cluster: Any, server: Any) -> None:
    """The fixture exports kube_node_labels (with zone, region and hostname, as the generator's
    nodes have them) but not kube_pod_labels: check says so and names the allowlist flag, and
    the verdict does not change."""
    truth: Snapshot = cluster.snapshot
    result = CliRunner().invoke(
        main,
        [
            "check",
            "--prometheus",
            server.url,
            "--start",
            truth.meta.start,
            "--end",
            truth.meta.end,
            "--step",
            "5m",
            "--format",
            "json",
        ],
    )
    report = json.loads(result.stdout)
    assert report["conventions"]["pod_labels"] == "not exported"
    assert report["conventions"]["node_topology_labels"] == "all exported"
    [warning] = [w for w in report["warnings"] if "metric-labels-allowlist" in w]
    assert "pod labels (kube_pod_labels)" in warning and "node labels" not in warning
    assert "--metric-labels-allowlist=pods=[*],nodes=[topology.kubernetes.io/zone," in warning
    assert result.exit_code == report["exit_code"] == (0 if report["usable"] else 3)
    assert "allowlist" not in " ".join(report["problems"])


def test_generate_writes_objects_that_name_every_owner(tmp_path: Path) -> None:
    out = tmp_path / "objects.json"
    result = CliRunner().invoke(
        main,
        [
            "generate",
            "--out",
            str(tmp_path / "snap"),
            "--nodes",
            "8",
            "--days",
            "0.25",
            "--step",
            "5m",
            "--zones",
            "3",
            "--pod-constraints",
            "--kube-objects",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    listing = json.loads(out.read_text())
    assert listing["kind"] == "List"
    by_kind: dict[str, set[tuple[str, str]]] = {}
    for item in listing["items"]:
        meta = item["metadata"]
        by_kind.setdefault(item["kind"], set()).add((meta.get("namespace", ""), meta["name"]))
    snap = read_snapshot(tmp_path / "snap")
    for row in snap.pods.to_dict("records"):
        owner = (row["namespace"], row["owner_name"])
        assert owner in by_kind[row["owner_kind"]], owner
    # zones round robin within each pool: a pool of >= 3 nodes spans the 3 zones
    zones: dict[str, set[str]] = {}
    for row in snap.nodes.to_dict("records"):
        zones.setdefault(row["pool"], set()).add(json.loads(row["labels"])[ZONE])
    assert max(len(z) for z in zones.values()) == 3
    assert all(len(z) == min(3, (snap.nodes["pool"] == p).sum()) for p, z in zones.items())


def test_defaults_add_no_constraints() -> None:
    """Without the opt-in fields the generator gives the same snapshot as before: no zone labels,
    no affinity, no spread, and meta.json does not name the new fields."""
    snap = generate(SyntheticSpec(seed=1, nodes=5, days=0.1, step=300)).snapshot
    assert not any(ZONE in labels for labels in snap.nodes["labels"])
    assert set(snap.pods["affinity"]) == {"{}"} and set(snap.pods["topology_spread"]) == {"[]"}
    assert snap.objects == {}
    generator = snap.meta.extra["generator"]
    assert "zones" not in generator and "pod_constraints" not in generator


def test_bad_kube_objects_fail_before_any_request(tmp_path: Path) -> None:
    bad = tmp_path / "objects.json"
    bad.write_text('{"kind": "List", "items": [{"kind": "Deployment", "metadata": {}}]}')
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--prometheus",
            "http://127.0.0.1:9",  # nothing listens: a request would fail with exit 1
            "--kube-objects",
            str(bad),
            "--out",
            str(tmp_path / "snap"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "a Deployment without metadata.name" in result.output
    assert not (tmp_path / "snap").exists()


@pytest.mark.prometheus
def test_check_without_node_labels_names_the_missing_keys(
    small_prometheus: Callable[..., Any],
) -> None:
    import small_cluster as sc

    server = small_prometheus(convention="node-name")
    result = CliRunner().invoke(
        main, ["check", "--prometheus", server.url, "--end", str(sc.END), "--since", "1h"]
    )
    assert result.exit_code == 0, result.output  # a warning, not a problem
    [line] = [x for x in result.stdout.splitlines() if "node topology labels:" in x]
    missing = "topology.kubernetes.io/zone, topology.kubernetes.io/region, kubernetes.io/hostname"
    assert line.split(":", 1)[1].strip() == f"missing {missing}"
    assert "warning: kube-state-metrics does not export pod labels (kube_pod_labels) and node " in (
        result.stdout
    )

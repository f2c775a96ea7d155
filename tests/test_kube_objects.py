"""``collect --kube-objects`` on hand-built objects: owner chains, field sources, bad input.

Each case is a snapshot row and a few Kubernetes objects written out by hand, with the template
the pod must end up with and why (which step of the owner chain found it); the round trip through
the generator and a real Prometheus is in test_collect_kube_objects.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analyzer.collect.enrich import enrich_snapshot
from analyzer.collect.kube_objects import KubeObjects, add_object, read_kube_objects
from analyzer.core.errors import InputError
from analyzer.core.snapshot import SnapshotMeta, make_snapshot, read_snapshot, write_snapshot
from analyzer.core.snapshot_schema import empty_table
from analyzer.scheduling.constraint_types import constraints_from_json
from analyzer.scheduling.kube_objects import from_kept

ZONE = "topology.kubernetes.io/zone"


def _template(app: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c"}], **spec}}


def _obj(
    kind: str, name: str, ns: str = "shop", owner: tuple[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    return {"kind": kind, "metadata": meta, **body}


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]
NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}
            ]
        }
    }
}


def _objects() -> list[dict[str, Any]]:
    return [
        # web: Deployment -> ReplicaSet web-5d9f8 (present), whose template the pod runs
        _obj("Deployment", "web", spec={"template": _template("web-new")}),
        _obj(
            "ReplicaSet",
            "web-5d9f8",
            owner=("Deployment", "web"),
            spec={
                "template": _template(
                    "web", affinity=ANTI, topologySpreadConstraints=SPREAD, priorityClassName="high"
                )
            },
        ),
        # api: the pod's ReplicaSet is gone; the Deployment (named by the RS naming rule) is used
        _obj("Deployment", "api", spec={"template": _template("api", affinity=NODE_AFFINITY)}),
        # a ReplicaSet whose name does not follow <deployment>-<hash>: its ownerReference says
        _obj(
            "ReplicaSet",
            "legacy",
            owner=("Deployment", "frontend"),
            spec={"template": _template("fe")},
        ),
        _obj("Deployment", "frontend", spec={"template": _template("fe")}),
        # report Jobs: the Job of the pod is deleted; its CronJob's jobTemplate is used
        _obj(
            "CronJob",
            "report",
            ns="batch",
            spec={
                "jobTemplate": {
                    "spec": {
                        "template": _template(
                            "report", tolerations=[{"key": "spot", "operator": "Exists"}]
                        )
                    }
                }
            },
        ),
        _obj("StatefulSet", "db", spec={"template": _template("db", nodeSelector={"pool": "mem"})}),
        # a Pod object wins over its owner's template
        _obj(
            "Pod",
            "special",
            spec={"priority": 7, "containers": [], "affinity": {"podAffinity": {}}},
        ),
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {
            "kind": "PriorityClass",
            "metadata": {"name": "default-prio"},
            "value": 50,
            "globalDefault": True,
        },
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web-pdb", "namespace": "shop"},
            "spec": {"minAvailable": 1},
            "status": {"disruptionsAllowed": 2, "conditions": []},
        },
        {
            "kind": "Service",
            "metadata": {"name": "external", "namespace": "shop"},
            "spec": {"type": "ExternalName"},
        },  # no selector: selects no pod, not kept
        {"kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}},
        # an old revision scaled to 0 whose pods are all gone: no pod can name it, not kept
        _obj(
            "ReplicaSet",
            "web-0ld00",
            owner=("Deployment", "web"),
            spec={"replicas": 0, "selector": {"matchLabels": {"app": "web"}}},
        ),
        {"kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop"}},
        {
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {ZONE: "z1", "pool": "mem"}},
            "spec": {
                "taints": [
                    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                    {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                ]
            },
        },
        {
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}},
        },
    ]


def _snapshot(tolerations_exported: bool = False) -> Any:
    rows = [
        # uid, ns, name, owner kind/name, workload kind/name, class
        (
            "u-web",
            "shop",
            "web-5d9f8-abcde",
            "ReplicaSet",
            "web-5d9f8",
            "Deployment",
            "web",
            "high",
        ),
        ("u-api", "shop", "api-7c6b5-xyzab", "ReplicaSet", "api-7c6b5", "Deployment", "api", ""),
        ("u-fe", "shop", "legacy-aaaaa", "ReplicaSet", "legacy", "ReplicaSet", "legacy", ""),
        (
            "u-rep",
            "batch",
            "report-29000000-qqqqq",
            "Job",
            "report-29000000",
            "CronJob",
            "report",
            "",
        ),
        ("u-db", "shop", "db-0", "StatefulSet", "db", "StatefulSet", "db", ""),
        ("u-sp", "shop", "special", "ReplicaSet", "web-5d9f8", "Deployment", "web", ""),
        (
            "u-static",
            "kube-system",
            "kube-proxy-n1",
            "Node",
            "n1",
            "Node",
            "n1",
            "system-node-critical",
        ),
        ("u-bare", "shop", "debug", "", "", "", "", ""),
    ]
    pods = pd.DataFrame(
        rows,
        columns=[
            "uid",
            "namespace",
            "name",
            "owner_kind",
            "owner_name",
            "workload_kind",
            "workload_name",
            "priority_class",
        ],
    )
    pods["priority"] = pd.array([None, 0, 0, 0, 0, 0, 2000001000, 0], dtype="Int64")
    pods["tolerations"] = '[{"operator": "Exists"}]' if tolerations_exported else "[]"
    for col in (
        "requests:cpu",
        "requests:memory",
        "nonzero_requests:cpu",
        "nonzero_requests:memory",
    ):
        pods[col] = 0
    nodes = pd.DataFrame(
        {"node": ["n1", "n2"], "labels": ['{"pool": "mem"}', "{}"], "pool": ["mem", None]}
    )
    nodes["taints"] = "[]"
    for col in ("allocatable:cpu", "allocatable:memory"):
        nodes[col] = 1000
    meta = SnapshotMeta(
        source="http://prom",
        start="2026-11-01T00:00:00Z",
        end="2026-11-02T00:00:00Z",
        step_seconds=60,
        collected_at="2026-11-02T00:00:00Z",
        analyzer_version="test",
        coverage={"queries": {"pod_tolerations": {"series": 8 if tolerations_exported else 0}}},
    )
    return make_snapshot(meta, nodes, pods, empty_table("node_usage"), empty_table("pod_usage"))


def _index(objects: list[dict[str, Any]]) -> KubeObjects:
    index = KubeObjects()
    for i, obj in enumerate(objects):
        add_object(index, obj, f"items[{i}]")
    return index


def _pods(snapshot: Any) -> dict[str, dict[str, Any]]:
    return {row["uid"]: row for row in snapshot.pods.to_dict("records")}


def test_owner_chain_picks_the_pods_template() -> None:
    got, warnings = enrich_snapshot(_snapshot(), _index(_objects()))
    pods = _pods(got)
    # pod -> ReplicaSet (present): the RS's template, not the Deployment's newer one
    assert json.loads(pods["u-web"]["affinity"]) == ANTI
    assert json.loads(pods["u-web"]["topology_spread"]) == SPREAD
    assert json.loads(pods["u-web"]["labels"]) == {"app": "web"}
    # pod -> RS gone -> Deployment "api" (named by the RS naming rule in workload_name)
    assert json.loads(pods["u-api"]["affinity"]) == NODE_AFFINITY
    # RS without the naming pattern: its ownerReference names the Deployment
    assert (pods["u-fe"]["workload_kind"], pods["u-fe"]["workload_name"]) == (
        "Deployment",
        "frontend",
    )
    # pod -> Job gone -> CronJob jobTemplate; tolerations not exported by KSM: from objects
    assert json.loads(pods["u-rep"]["tolerations"]) == [{"key": "spot", "operator": "Exists"}]
    assert json.loads(pods["u-rep"]["field_sources"])["tolerations"] == "objects"
    # StatefulSet template; node_selector not exported (no query coverage, all empty): objects
    assert json.loads(pods["u-db"]["node_selector"]) == {"pool": "mem"}
    # the Pod object itself wins over its ReplicaSet; spec.priority is the pod's own
    assert json.loads(pods["u-sp"]["affinity"]) == {"podAffinity": {}}
    assert pods["u-sp"]["priority"] == 7
    # static and bare pods: no template; only the bare one is reported
    assert json.loads(pods["u-static"]["field_sources"])["affinity"] == "none"
    assert (
        len(warnings) == 2
        and "1 of 8 pods match no owner" in warnings[1]
        and "shop/debug" in warnings[1]
    )
    assert "ConfigMap (1)" in warnings[0]


def test_priorities_from_priority_classes() -> None:
    got, _ = enrich_snapshot(_snapshot(), _index(_objects()))
    pods = _pods(got)
    sources = {uid: json.loads(row["field_sources"])["priority"] for uid, row in pods.items()}
    # "high" had no value (KSM does not export it): the PriorityClass object gives 1000
    assert pods["u-web"]["priority"] == 1000 and sources["u-web"] == "objects"
    # no class: the globalDefault class's value, inferred (admission would have set it)
    assert pods["u-api"]["priority"] == 50 and sources["u-api"] == "inferred"
    # a built-in class without an object keeps its fixed value, inferred
    assert pods["u-static"]["priority"] == 2000001000 and sources["u-static"] == "inferred"
    kept = got.objects
    assert {pc["name"]: pc["value"] for pc in kept["PriorityClass"]} == {
        "high": 1000,
        "default-prio": 50,
    }
    assert kept["PodDisruptionBudget"][0]["status"] == {"disruptionsAllowed": 2}


def test_a_missing_priority_class_label_is_no_class() -> None:
    # kube_pod_info without a priority_class label leaves <NA> in the column (not ""): the pod
    # has no class, so the globalDefault class's value applies as for u-api ("" above)
    snapshot = _snapshot()
    pods = snapshot.pods.copy()
    pods["priority_class"] = pods["priority_class"].mask(pods["uid"] == "u-api")
    assert pods.loc[pods["uid"] == "u-api", "priority_class"].isna().all()
    got, _ = enrich_snapshot(replace(snapshot, pods=pods), _index(_objects()))
    row = _pods(got)["u-api"]
    assert row["priority"] == 50 and json.loads(row["field_sources"])["priority"] == "inferred"


def test_objects_kept_for_default_spreading() -> None:
    objects = _objects()
    objects[3]["spec"]["replicas"] = 0  # scaled down, but a snapshot pod (u-fe) names it
    got, _ = enrich_snapshot(_snapshot(), _index(objects))
    kept = got.objects
    assert kept["Service"] == [{"namespace": "shop", "name": "web", "selector": {"app": "web"}}]
    assert kept["Namespace"] == [{"name": "shop", "labels": {"team": "a"}}]
    assert [(o["namespace"], o["name"]) for o in kept["ReplicaSet"]] == [
        ("shop", "legacy"),
        ("shop", "web-5d9f8"),
    ]  # sorted; web-0ld00 (0 replicas, no pod) left out
    assert [o["name"] for o in kept["StatefulSet"]] == ["db"]
    assert set(kept["ReplicaSet"][0]) == {"namespace", "name", "selector"}  # compact
    assert got.meta.extra["kube_objects"]["kept"]["ReplicaSet"] == 2
    # the replay reads them: the Service selects app=web pods of shop (DefaultSelector)
    held = from_kept(kept, "kube_objects.json")
    assert held.namespaces["shop"].labels == {"team": "a"}
    chosen = held.default_selector("shop", {"app": "web"}, None)
    assert chosen.matches({"app": "web"}) and not chosen.matches({"app": "api"})
    assert held.default_selector("other", {"app": "web"}, None).empty


def test_a_malformed_kept_object_is_one_line() -> None:
    bad = {"kind": "Service", "metadata": {"name": "s", "namespace": "shop"},
           "spec": {"selector": ["app"]}}  # fmt: skip
    with pytest.raises(InputError, match="Service shop/s"):
        _index([bad])


def test_metrics_win_when_exported_and_nodes_take_their_objects() -> None:
    got, _ = enrich_snapshot(_snapshot(tolerations_exported=True), _index(_objects()))
    pods = _pods(got)
    # KSM exported tolerations (the query had series): the observed value stays
    assert json.loads(pods["u-rep"]["tolerations"]) == [{"operator": "Exists"}]
    assert json.loads(pods["u-rep"]["field_sources"])["tolerations"] == "metrics"
    counts = got.meta.extra["field_sources"]["pods"]
    assert counts["tolerations"] == {"metrics": 8}
    assert sum(counts["affinity"].values()) == 8
    nodes = {row["node"]: row for row in got.nodes.to_dict("records")}
    # all labels of the Node object; the cordon (condition) taint dropped, the dedicated one kept
    assert json.loads(nodes["n1"]["labels"]) == {ZONE: "z1", "pool": "mem"}
    assert json.loads(nodes["n1"]["taints"]) == [
        {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    ]
    assert json.loads(nodes["n2"]["labels"]) == {}  # no Node object: as collected
    assert got.meta.extra["field_sources"]["nodes"]["labels"] == {"metrics": 1, "objects": 1}


def test_required_node_affinity_reaches_the_scheduler() -> None:
    got, _ = enrich_snapshot(_snapshot(), _index(_objects()))
    row = _pods(got)["u-api"]
    constraints = constraints_from_json(row["tolerations"], row["node_selector"], row["affinity"])
    assert constraints.matches({ZONE: "z1"}) and not constraints.matches({ZONE: "z2"})


def test_snapshot_keeps_objects_and_old_snapshots_read(tmp_path: Path) -> None:
    got, _ = enrich_snapshot(_snapshot(), _index(_objects()))
    write_snapshot(got, tmp_path / "s")
    back = read_snapshot(tmp_path / "s")
    assert back.objects == got.objects
    assert list(back.pods["affinity"]) == list(got.pods["affinity"])
    # a snapshot written before these columns and kube_objects.json existed
    old = tmp_path / "s" / "pods.parquet"
    frame = pd.read_parquet(old).drop(columns=["affinity", "topology_spread", "field_sources"])
    frame.to_parquet(old, index=False)
    (tmp_path / "s" / "kube_objects.json").unlink()
    back = read_snapshot(tmp_path / "s")
    assert set(back.pods["affinity"]) == {"{}"} and set(back.pods["topology_spread"]) == {"[]"}
    assert back.objects == {}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a Kubernetes List or object"),
        ('{"items": []}', "not a Kubernetes List or object"),
        ('{"kind": "List", "items": {}}', "without an 'items' list"),
        (
            '{"kind": "List", "items": [{"kind": "Deployment", "metadata": {}}]}',
            "without metadata.name",
        ),
        (
            '{"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": '
            '{"topologySpreadConstraints": [{"topologyKey": "z", "maxSkew": "1"}]}}}}',
            "integer maxSkew",
        ),
        (
            '{"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": '
            '{"tolerations": [{"operator": "Maybe"}]}}}}',
            "is not one of Equal, Exists, Gt, Lt",
        ),
        (
            '{"kind": "PriorityClass", "metadata": {"name": "p"}, "value": "high"}',
            "is not an integer",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        read_kube_objects(_write(tmp_path / "objects.json", text))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert "objects.json" in str(info.value)


def test_folder_of_lists_and_missing_paths(tmp_path: Path) -> None:
    folder = tmp_path / "objs"
    folder.mkdir()
    _write(folder / "a.json", json.dumps({"kind": "List", "items": _objects()[:3]}))
    _write(folder / "b.json", json.dumps({"kind": "NodeList", "items": [_objects()[-2]]}))
    _write(folder / "notes.txt", "ignored")
    objects = read_kube_objects(folder)
    assert objects.files == 2 and objects.count("ReplicaSet") == 1 and objects.count("Node") == 1
    with pytest.raises(InputError, match=r"holds no \.json file"):
        read_kube_objects(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        read_kube_objects(tmp_path / "nope.json")


def test_node_state_intervals_are_kept() -> None:
    """Enriching pods and nodes from objects keeps the collect's node-state intervals (a
    cordon of n1 for an hour): dropping them would leave ``meta.extra`` claiming a table the
    snapshot no longer has, and the replay would use the nodes' final taints instead."""
    state = pd.DataFrame(
        {
            "node": ["n1"],
            "kind": ["cordon"],
            "key": [""],
            "value": [""],
            "effect": [""],
            "start": [pd.Timestamp("2026-11-01T10:00:00Z")],
            "end": [pd.Timestamp("2026-11-01T11:00:00Z")],
        }
    )
    before = replace(_snapshot(), node_state=state)
    got, _ = enrich_snapshot(before, _index(_objects()))
    assert got.node_state is not None
    assert got.node_state[["node", "kind"]].values.tolist() == [["n1", "cordon"]]
    assert got.node_state["end"].iloc[0] - got.node_state["start"].iloc[0] == pd.Timedelta("1h")
    assert "node_state_version" in got.meta.extra

"""PodTopologySpread and the upstream-shaped ``analyzer score`` scenarios.

Every PodTopologySpread case of ``tests/data/vectors/kube-plugins-vectors.yaml`` (transcribed from
kube-scheduler's ``scoring_test.go`` / ``filtering_test.go``) runs through the scenario loader and
through the CLI; the expectations are the upstream tests' asserted values. The other tests check
facts worked out by hand in their comments (research/kube-plugins.md §1 formulas).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from plugin_vectors import PLUGINS, cases, plugin_scenario

from analyzer.cli import main
from analyzer.scheduling.label_selectors import parse_label_selector
from analyzer.scheduling.pod_index import PlacedPod, PodIndex
from analyzer.scheduling.scenario import build_scenario, result_json

PTS = "PodTopologySpread"
SCORE = cases(PTS, "score")
FILTER = cases(PTS, "filter")
# the reasons the upstream code emits (vector meta expected_meaning.filter; not asserted upstream)
REASONS = {
    "Success": [],
    "Unschedulable": ["node(s) didn't match pod topology spread constraints"],
    "UnschedulableAndUnresolvable": [
        "node(s) didn't match pod topology spread constraints (missing required label)"
    ],
}


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [str(c["id"]) for c in items]


def run_cli(tmp_path: Path, scenario: dict[str, Any], *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path), *extra])
    return result.exit_code, result.stdout, result.stderr


def cli_json(tmp_path: Path, scenario: dict[str, Any]) -> dict[str, Any]:
    code, out, err = run_cli(tmp_path, scenario)
    assert code == 0, err
    payload: dict[str, Any] = json.loads(out)
    return payload


def loader_json(scenario: dict[str, Any]) -> dict[str, Any]:
    built = build_scenario(scenario)
    return result_json(built, built.evaluate(), 0)


def test_vector_file_counts() -> None:
    # the copied file is whole: its meta counts match its cases
    counts = PLUGINS["meta"]["counts_per_plugin_phase"]
    assert len(SCORE) == counts["PodTopologySpread/score"] == 17
    assert len(FILTER) == counts["PodTopologySpread/filter"] == 22
    assert len(PLUGINS["cases"]) == PLUGINS["meta"]["total_cases"]


@pytest.mark.parametrize("case", SCORE, ids=_ids(SCORE))
def test_score_vector(case: dict[str, Any], tmp_path: Path) -> None:
    scenario = plugin_scenario(case)
    for payload in (loader_json(scenario), cli_json(tmp_path, scenario)):
        # only the candidate nodes are listed, every one feasible (no DoNotSchedule constraint)
        assert [n["name"] for n in payload["nodes"]] == case["candidate_nodes"]
        assert all(n["feasible"] and n["status"] == "Success" for n in payload["nodes"])
        got = {n["name"]: n["scores"][PTS] for n in payload["nodes"]}
        assert got == case["expected"]
        assert payload["weights"] == {PTS: 2}  # the v1 default weight of a multiPoint entry


@pytest.mark.parametrize("case", FILTER, ids=_ids(FILTER))
def test_filter_vector(case: dict[str, Any], tmp_path: Path) -> None:
    scenario = plugin_scenario(case)
    for payload in (loader_json(scenario), cli_json(tmp_path, scenario)):
        got = {n["name"]: n["status"] for n in payload["nodes"]}
        assert got == {name: want["code"] for name, want in case["expected"].items()}
        for node in payload["nodes"]:
            assert node["feasible"] is (node["status"] == "Success")
            assert node["reasons"] == REASONS[node["status"]]


# ---------------------------------------------------------------- hand-worked scenarios


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, node: str | None = None, owner: str | None = None, **labels: str) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "labels": labels}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
        ]
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _spread_only(args: dict[str, Any] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "plugins": {"multiPoint": {"enabled": [{"name": PTS}], "disabled": [{"name": "*"}]}}
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": PTS, "args": args}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "profiles": [profile]}


REPLICASET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-1", "namespace": "shop"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}


def _replicaset_scenario() -> dict[str, Any]:
    return {
        "scheduler": _spread_only(),
        "nodes": [_node("a"), _node("b")],
        "pods": [
            _pod("w1", "a", owner="web-1", app="web"),
            _pod("w2", "a", owner="web-1", app="web"),
            _pod("other", "b", app="db"),
        ],
        "objects": [REPLICASET],
        "pod": _pod("w3", owner="web-1", app="web"),
    }


def test_system_defaults_take_the_replicaset_selector(tmp_path: Path) -> None:
    # The pod has no constraints: System defaults (hostname maxSkew 3, zone maxSkew 5) with the
    # ReplicaSet's selector app=web. No node has a zone label, so only hostname counts: 2
    # candidates → weight ln(2+2); a: 2·ln4 + 2 = 4.77 → 5, b: 0 + 2 = 2 (the db pod does not
    # match). Normalised with max 5, min 2: a 100·(5+2−5)/5 = 40, b 100·(5+2−2)/5 = 100.
    assert round(2 * math.log(4) + 2, 2) == 4.77
    payload = cli_json(tmp_path, _replicaset_scenario())
    assert {n["name"]: n["scores"][PTS] for n in payload["nodes"]} == {"a": 40, "b": 100}
    assert payload["chosen"] == "b"


def test_without_the_owner_object_defaults_do_not_apply(tmp_path: Path) -> None:
    # no ReplicaSet object, no Service: DefaultSelector is empty → PreScore Skip, no PTS score
    scenario = _replicaset_scenario()
    scenario["objects"] = []
    payload = cli_json(tmp_path, scenario)
    assert all(PTS not in n["scores"] for n in payload["nodes"])


def test_service_in_another_namespace_does_not_select(tmp_path: Path) -> None:
    scenario = _replicaset_scenario()
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "elsewhere"},
        "spec": {"selector": {"app": "web"}},
    }
    scenario["objects"] = [service]
    payload = cli_json(tmp_path, scenario)
    assert all(PTS not in n["scores"] for n in payload["nodes"])
    service["metadata"]["namespace"] = "shop"  # same namespace: same selector as the RS → 40/100
    payload = cli_json(tmp_path, scenario)
    assert {n["name"]: n["scores"][PTS] for n in payload["nodes"]} == {"a": 40, "b": 100}


def test_list_defaulting_filters_with_default_constraints(tmp_path: Path) -> None:
    # defaultingType List with a DoNotSchedule hostname constraint maxSkew 1: counts a 2, b 0,
    # min 0; the pod matches itself → a skew 3 > 1 refused, b skew 1 fits.
    scenario = _replicaset_scenario()
    scenario["scheduler"] = _spread_only(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                }
            ],
        }
    )
    payload = cli_json(tmp_path, scenario)
    status = {n["name"]: n["status"] for n in payload["nodes"]}
    assert status == {"a": "Unschedulable", "b": "Success"}
    assert payload["selected"] == ["b"]
    code, out, err = run_cli(tmp_path, scenario, "--explain")
    assert code == 0, err
    assert "skew = 2 in domain + 1 (pod matches) − 0 (global min) = 3 vs maxSkew 1: refused" in out
    assert "skew = 0 in domain + 1 (pod matches) − 0 (global min) = 1 vs maxSkew 1: fits" in out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "defaultConstraints",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "k",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector",
        ),
        ({"defaultingType": "Cluster"}, "defaultingType"),
    ],
)
def test_bad_args_are_one_line_errors(args: dict[str, Any], field: str, tmp_path: Path) -> None:
    scenario = _replicaset_scenario()
    scenario["scheduler"] = _spread_only(args)
    code, _, err = run_cli(tmp_path, scenario)
    assert code == 2
    assert f"args.{field}" in err
    assert len(err.strip().splitlines()) == 1


def test_candidate_nodes_still_count_for_domains(tmp_path: Path) -> None:
    # zone constraint, nodes a,b in z1 and c in z2; only a and c are candidates. b's two pods
    # count for z1 (upstream counts every node of a registered domain): z1 = 1 (a) + 2 (b) = 3,
    # z2 = 0. Weight ln(2 domains + 2); raw a 3·ln4 = 4.16 → 4, c 0. Normalised: a 0, c 100.
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    incoming = _pod("new", app="web")
    incoming["spec"]["topologySpreadConstraints"] = [spread]
    scenario = {
        "scheduler": _spread_only(),
        "nodes": [_node("a", zone="z1"), _node("b", zone="z1"), _node("c", zone="z2")],
        "pods": [
            _pod("p1", "a", app="web"),
            _pod("p2", "b", app="web"),
            _pod("p3", "b", app="web"),
        ],
        "pod": incoming,
        "candidateNodes": ["a", "c"],
    }
    payload = cli_json(tmp_path, scenario)
    assert {n["name"]: n["scores"][PTS] for n in payload["nodes"]} == {"a": 0, "c": 100}
    # b's pods terminating (deletionTimestamp set): they no longer count, z1 = 1
    for pod in scenario["pods"][1:]:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    code, out, err = run_cli(tmp_path, scenario, "--explain")
    assert code == 0, err
    assert "domain zone=z1: 1 matching pod(s)" in out
    scenario["candidateNodes"] = ["a", "nowhere"]
    code, _, err = run_cli(tmp_path, scenario)
    assert code == 2 and "candidateNodes[1]" in err


def test_unmodelled_plugins_give_a_note_not_a_crash(tmp_path: Path) -> None:
    scenario = _replicaset_scenario()
    scenario["scheduler"]["profiles"][0]["plugins"]["multiPoint"]["enabled"] = [
        {"name": "VolumeBinding"}
    ]
    scenario["scheduler"]["profiles"][0]["pluginConfig"] = [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 600}}
    ]
    payload = cli_json(tmp_path, scenario)
    assert any("VolumeBinding is not modelled yet" in n for n in payload["notes"])
    assert all(n["scores"] == {} and n["feasible"] for n in payload["nodes"])


def test_full_v1_defaults_in_a_scenario(tmp_path: Path) -> None:
    # a configuration that only names the API: the v1 default profile, PodTopologySpread weight 2
    # beside the other modelled v1 default scores (TaintToleration 3, NodeAffinity 2,
    # ImageLocality 1)
    scenario = _replicaset_scenario()
    scenario["scheduler"] = {"apiVersion": "kubescheduler.config.k8s.io/v1"}
    payload = cli_json(tmp_path, scenario)
    assert payload["weights"] == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert {n["name"]: n["scores"][PTS] for n in payload["nodes"]} == {"a": 40, "b": 100}


def test_status_codes_of_the_other_filters(tmp_path: Path) -> None:
    # TaintToleration and NodeAffinity refuse with UnschedulableAndUnresolvable, NodeResourcesFit
    # with Unschedulable (upstream's codes; preemption only tries Unschedulable nodes)
    tainted = _node("t")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    small = _node("s")
    small["status"]["allocatable"]["cpu"] = "100m"
    pod = _pod("p")
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    scenario = {"scheduler": "kube-default", "nodes": [tainted, small, _node("ok")], "pod": pod}
    payload = cli_json(tmp_path, scenario)
    status = {n["name"]: n["status"] for n in payload["nodes"]}
    assert status == {"t": "UnschedulableAndUnresolvable", "s": "Unschedulable", "ok": "Success"}


def test_feature_gate_values_must_be_booleans(tmp_path: Path) -> None:
    scenario = _replicaset_scenario()
    scenario["featureGates"] = {"MatchLabelKeysInPodTopologySpread": "yes"}
    code, _, err = run_cli(tmp_path, scenario)
    assert code == 2 and "featureGates.MatchLabelKeysInPodTopologySpread" in err
    scenario["featureGates"] = {"SomethingElse": True}
    payload = cli_json(tmp_path, scenario)
    assert any("SomethingElse" in n for n in payload["notes"])


# ---------------------------------------------------------------- the pod index


@pytest.mark.parametrize("kept_limit", [512, 2])
def test_pod_index_counts_follow_binds_and_unbinds(
    kept_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # counts asked before the binds are kept up to date; they equal a fresh recount afterwards.
    # With room for only 2 kept arrays, the dropped ones are recounted when asked again.
    monkeypatch.setattr("analyzer.scheduling.pod_index.MAX_KEPT", kept_limit)
    rng = np.random.default_rng(7)
    web = parse_label_selector({"matchLabels": {"app": "web"}}, "s")
    not_db = parse_label_selector(
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, "s"
    )
    index = PodIndex(5)
    kept = {(sel, ns): index.match_counts(sel, ns) for sel in (web, not_db) for ns in ("a", "b")}
    placed: list[tuple[int, PlacedPod]] = []
    for i in range(300):
        if placed and rng.random() < 0.3:
            node, pod = placed.pop(int(rng.integers(len(placed))))
            index.remove(node, pod)
            continue
        pod = PlacedPod(
            f"p{i}",
            str(rng.choice(["a", "b"])),
            {"app": str(rng.choice(["web", "db", "cache"]))},
            terminating=bool(rng.random() < 0.1),
        )
        node = int(rng.integers(5))
        index.add(node, pod)
        placed.append((node, pod))
    for (sel, ns), counts in kept.items():
        if kept_limit == 2:
            counts = index.match_counts(sel, ns)
        expected = np.zeros(5, dtype=np.int64)
        for node, pod in placed:
            if pod.namespace == ns and not pod.terminating and sel.matches(pod.labels):
                expected[node] += 1
        assert counts.tolist() == expected.tolist()
        fresh = PodIndex(5)
        for node, pod in placed:
            fresh.add(node, pod)
        assert fresh.match_counts(sel, ns).tolist() == expected.tolist()


def test_empty_and_nil_selectors_count_nothing() -> None:
    # countPodsMatchSelector: an empty selector {} counts 0 (Selector.Empty()); nil matches nothing
    index = PodIndex(1)
    index.add(0, PlacedPod("p", "ns", {"app": "web"}))
    assert index.match_counts(parse_label_selector({}, "s"), "ns").tolist() == [0]
    assert index.match_counts(parse_label_selector(None, "s"), "ns").tolist() == [0]
    assert parse_label_selector({}, "s").matches({"app": "web"})  # but it matches the pod


def test_scenario_keeps_the_vectors_unchanged() -> None:
    # building a scenario must not edit the case it came from (the file is shared by helpers)
    case = copy.deepcopy(SCORE[0])
    build_scenario(plugin_scenario(case))
    assert case == SCORE[0]


# ---------------------------------------------------------------- the worked example


def test_topology_spread_example(tmp_path: Path) -> None:
    # examples/score-topology-spread.yaml works the numbers out in its comments
    example = Path(__file__).parent.parent / "examples" / "score-topology-spread.yaml"
    payload = cli_json(tmp_path, yaml.safe_load(example.read_text()))
    assert {n["name"]: n["scores"][PTS] for n in payload["nodes"]} == {
        "node-a": 46,
        "node-b": 53,
        "node-c": 100,
    }
    assert [n["total"] for n in payload["nodes"]] == [92, 106, 200]
    assert payload["chosen"] == "node-c"


# ---------------------------------------------------------------- against a plain loop


def _loop_spread(scenario: dict[str, Any]) -> tuple[dict[str, str], dict[str, int] | None]:
    """PodTopologySpread written node by node from research/kube-plugins.md §1 (the pod's own
    constraints): per-node status codes and final scores (None = PreScore Skip)."""
    nodes = scenario["nodes"]
    names = [n["metadata"]["name"] for n in nodes]
    labels = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in nodes}
    taints = {n["metadata"]["name"]: (n.get("spec") or {}).get("taints", []) for n in nodes}
    pod = scenario["pod"]
    ns = pod["metadata"].get("namespace", "default")
    own = pod["metadata"].get("labels", {})
    selector_map = pod["spec"].get("nodeSelector", {})
    tolerated = {t["key"] for t in pod["spec"].get("tolerations", [])}
    candidates = scenario.get("candidateNodes", names)

    def selects(sel: dict[str, Any] | None, lab: dict[str, str]) -> bool:
        if sel is None:
            return False
        return all(lab.get(k) == v for k, v in sel.get("matchLabels", {}).items())

    def count(node: str, sel: dict[str, Any] | None) -> int:
        if sel is None or not sel.get("matchLabels"):
            return 0  # nil selects nothing; {} is Empty() → 0
        total = 0
        for p in scenario["pods"]:
            meta = p["metadata"]
            if p["spec"].get("nodeName") != node or meta.get("deletionTimestamp"):
                continue
            if meta.get("namespace", "default") == ns and selects(sel, meta.get("labels", {})):
                total += 1
        return total

    policies = (scenario.get("featureGates") or {}).get(
        "NodeInclusionPolicyInPodTopologySpread", True
    )

    def included(node: str, c: dict[str, Any]) -> bool:
        if not policies:  # gate off: the pod's node affinity applies, taints never
            c = {}
        affinity = c.get("nodeAffinityPolicy", "Honor") == "Honor"
        if affinity and any(labels[node].get(k) != v for k, v in selector_map.items()):
            return False
        taint = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
        return not (taint and any(t["key"] not in tolerated for t in taints[node]))

    constraints = pod["spec"]["topologySpreadConstraints"]
    hard = [c for c in constraints if c["whenUnsatisfiable"] == "DoNotSchedule"]
    soft = [c for c in constraints if c["whenUnsatisfiable"] == "ScheduleAnyway"]
    status = {}
    tp: list[dict[str, int]] = []
    for c in hard:
        counts: dict[str, int] = {}
        for n in names:
            if all(h["topologyKey"] in labels[n] for h in hard) and included(n, c):
                value = labels[n][c["topologyKey"]]
                counts[value] = counts.get(value, 0) + count(n, c.get("labelSelector"))
        tp.append(counts)
    for n in candidates:
        status[n] = "Success"
        for c, counts in zip(hard, tp, strict=True):
            if c["topologyKey"] not in labels[n]:
                status[n] = "UnschedulableAndUnresolvable"
                break
            low = min(counts.values()) if len(counts) >= c.get("minDomains", 1) else 0
            self_match = 1 if selects(c.get("labelSelector"), own) else 0
            if counts.get(labels[n][c["topologyKey"]], 0) + self_match - low > c["maxSkew"]:
                status[n] = "Unschedulable"
                break
    passed = [n for n in candidates if status[n] == "Success"]
    if not soft or not passed:
        return status, None
    ignored = {n for n in passed if any(c["topologyKey"] not in labels[n] for c in soft)}
    scored = [n for n in passed if n not in ignored]
    weights, domain_counts = [], []
    for c in soft:
        key = c["topologyKey"]
        if key == "kubernetes.io/hostname":
            weights.append(math.log(len(scored) + 2))
            domain_counts.append({})
            continue
        registered = {labels[n][key] for n in scored}
        weights.append(math.log(len(registered) + 2))
        counts = dict.fromkeys(registered, 0)
        for n in names:
            every_key = all(s["topologyKey"] in labels[n] for s in soft)
            if every_key and included(n, c) and labels[n][key] in counts:
                counts[labels[n][key]] += count(n, c.get("labelSelector"))
        domain_counts.append(counts)
    raw = {}
    for n in scored:
        total = 0.0
        for c, w, counts in zip(soft, weights, domain_counts, strict=True):
            key = c["topologyKey"]
            cnt = (
                count(n, c.get("labelSelector"))
                if key == "kubernetes.io/hostname"
                else counts[labels[n][key]]
            )
            total += cnt * w + (c["maxSkew"] - 1)
        raw[n] = math.floor(total + 0.5)  # totals are positive: half away from zero
    high = max([0, *raw.values()])
    low = min(raw.values()) if raw else 0
    final = {}
    for n in passed:
        if n in ignored:
            final[n] = 0
        elif high == 0:
            final[n] = 100
        else:
            final[n] = 100 * (high + low - raw[n]) // high
    return status, final


def _random_scenario(rng: np.random.Generator) -> dict[str, Any]:
    keys = ["kubernetes.io/hostname", "zone", "rack"]
    nodes = []
    for i in range(int(rng.integers(2, 9))):
        name = f"n{i}"
        labs = {"kubernetes.io/hostname": name}
        if rng.random() < 0.85:
            labs["zone"] = f"z{rng.integers(3)}"
        if rng.random() < 0.7:
            labs["rack"] = f"r{rng.integers(4)}"
        if rng.random() < 0.5:
            labs["ssd"] = "yes"
        node = _node(name)
        node["metadata"]["labels"] = labs
        if rng.random() < 0.2:
            node["spec"] = {"taints": [{"key": "gpu", "value": "", "effect": "NoSchedule"}]}
        nodes.append(node)
    pods = []
    for j in range(int(rng.integers(0, 25))):
        p = _pod(f"p{j}", f"n{rng.integers(len(nodes))}", app=str(rng.choice(["web", "db"])))
        p["metadata"]["namespace"] = str(rng.choice(["shop", "shop", "other"]))
        if rng.random() < 0.1:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        pods.append(p)
    constraints = []
    for _ in range(int(rng.integers(1, 4))):
        c: dict[str, Any] = {
            "maxSkew": int(rng.integers(1, 4)),
            "topologyKey": str(rng.choice(keys)),
            "whenUnsatisfiable": str(rng.choice(["DoNotSchedule", "ScheduleAnyway"])),
        }
        choice = rng.random()
        if choice < 0.8:
            c["labelSelector"] = {"matchLabels": {"app": str(rng.choice(["web", "db"]))}}
        elif choice < 0.9:
            c["labelSelector"] = {}
        if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = int(rng.integers(1, 5))
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = str(rng.choice(["Honor", "Ignore"]))
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = str(rng.choice(["Honor", "Ignore"]))
        if (c["topologyKey"], c["whenUnsatisfiable"]) not in {
            (x["topologyKey"], x["whenUnsatisfiable"]) for x in constraints
        }:
            constraints.append(c)
    incoming = _pod("new", app="web")
    incoming["spec"]["topologySpreadConstraints"] = constraints
    if rng.random() < 0.3:
        incoming["spec"]["nodeSelector"] = {"ssd": "yes"}
    if rng.random() < 0.3:
        incoming["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    scenario: dict[str, Any] = {
        "scheduler": _spread_only(),
        "nodes": nodes,
        "pods": pods,
        "pod": incoming,
    }
    if rng.random() < 0.2:
        scenario["featureGates"] = {"NodeInclusionPolicyInPodTopologySpread": False}
    if rng.random() < 0.5:
        names = [n["metadata"]["name"] for n in nodes]
        keep = [n for n in names if rng.random() < 0.7] or names[:1]
        scenario["candidateNodes"] = keep
    return scenario


@pytest.mark.parametrize("seed", range(300))
def test_vectorised_plugin_equals_a_plain_loop(seed: int) -> None:
    scenario = _random_scenario(np.random.default_rng(seed))
    status, scores = _loop_spread(scenario)
    payload = loader_json(scenario)
    assert {n["name"]: n["status"] for n in payload["nodes"]} == status
    got = {n["name"]: n["scores"].get(PTS) for n in payload["nodes"] if n["feasible"]}
    if scores is None:
        assert all(v is None for v in got.values())
    else:
        assert got == scores
        assert all(0 <= v <= 100 for v in got.values())


def test_separate_files_with_objects(tmp_path: Path) -> None:
    # the worked example split into kubectl-style List files gives the same scores
    example = Path(__file__).parent.parent / "examples" / "score-topology-spread.yaml"
    doc = yaml.safe_load(example.read_text())
    files = {}
    for key in ("nodes", "pods", "objects"):
        files[key] = tmp_path / f"{key}.yaml"
        files[key].write_text(yaml.safe_dump({"kind": "List", "items": doc[key]}))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(doc["pod"]))
    (tmp_path / "sched.yaml").write_text(yaml.safe_dump(doc["scheduler"]))
    argv = ["score", "--nodes", str(files["nodes"]), "--pods", str(files["pods"])]
    argv += ["--objects", str(files["objects"]), "--pod", str(tmp_path / "pod.yaml")]
    argv += ["--config", str(tmp_path / "sched.yaml")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [n["scores"][PTS] for n in payload["nodes"]] == [46, 53, 100]

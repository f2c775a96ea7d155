"""InterPodAffinity through the upstream-shaped ``analyzer score`` scenarios.

Every InterPodAffinity case of ``tests/data/vectors/kube-plugins-vectors.yaml`` (transcribed from
kube-scheduler's ``interpodaffinity/scoring_test.go`` / ``filtering_test.go``) runs through the
scenario loader and through the CLI; the expectations are the upstream tests' asserted values.
The other tests check facts worked out by hand in their comments (research/kube-plugins.md §2)
and compare the vectorised plugin with a plain pod-by-pod loop written from the same notes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from plugin_vectors import PLUGINS, cases, plugin_scenario

from analyzer.cli import main
from analyzer.scheduling import load_strategy
from analyzer.scheduling.affinity_types import PodAffinity
from analyzer.scheduling.label_selectors import parse_label_selector
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.pod_index import PlacedPod, PodIndex
from analyzer.scheduling.scenario import build_scenario, result_json
from analyzer.scheduling.state import ClusterState

IPA = "InterPodAffinity"
SCORE = cases(IPA, "score")
FILTER = cases(IPA, "filter")
REASON = {
    "affinity": "node(s) didn't match pod affinity rules",
    "anti": "node(s) didn't match pod anti-affinity rules",
    "existing": "node(s) didn't satisfy existing pods anti-affinity rules",
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
    counts = PLUGINS["meta"]["counts_per_plugin_phase"]
    assert len(SCORE) == counts["InterPodAffinity/score"] == 19
    assert len(FILTER) == counts["InterPodAffinity/filter"] == 8


@pytest.mark.parametrize("case", SCORE, ids=_ids(SCORE))
def test_score_vector(case: dict[str, Any], tmp_path: Path) -> None:
    scenario = plugin_scenario(case)
    if case.get("expected_status") == "Error":
        # PreScore fails on an invalid selector; here it is bad input: exit 2, one line
        code, _, err = run_cli(tmp_path, scenario)
        assert code == 2
        assert case["expected_status_message_contains"] in err
        assert len(err.strip().splitlines()) == 1
        return
    for payload in (loader_json(scenario), cli_json(tmp_path, scenario)):
        assert [n["name"] for n in payload["nodes"]] == case["candidate_nodes"]
        assert all(n["feasible"] and n["status"] == "Success" for n in payload["nodes"])
        assert payload["weights"] == {IPA: 2}  # the v1 default weight of a multiPoint entry
        if case.get("expected_status") == "Skip":
            # PreScore Skip: the plugin contributes nothing, so it is absent from the scores
            assert all(IPA not in n["scores"] for n in payload["nodes"])
        else:
            assert {n["name"]: n["scores"][IPA] for n in payload["nodes"]} == case["expected"]


@pytest.mark.parametrize("case", FILTER, ids=_ids(FILTER))
def test_filter_vector(case: dict[str, Any], tmp_path: Path) -> None:
    scenario = plugin_scenario(case)
    for payload in (loader_json(scenario), cli_json(tmp_path, scenario)):
        got = {n["name"]: (n["status"], n["reasons"]) for n in payload["nodes"]}
        want = {k: (v["code"], v.get("reasons", [])) for k, v in case["expected"].items()}
        assert got == want
        for node in payload["nodes"]:
            assert node["feasible"] is (node["status"] == "Success")


# ---------------------------------------------------------------- hand-worked scenarios


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, node: str | None = None, ns: str = "shop", **labels: str) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": ns, "labels": labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _term(key: str, **match: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": match}, "topologyKey": key}


def _only(args: dict[str, Any] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "plugins": {"multiPoint": {"enabled": [{"name": IPA}], "disabled": [{"name": "*"}]}}
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": IPA, "args": args}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "profiles": [profile]}


NODES = [_node("a", zone="z1"), _node("b", zone="z1"), _node("c", zone="z2"), _node("d")]


def _statuses(payload: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    return {n["name"]: (n["status"], n["reasons"]) for n in payload["nodes"]}


def test_first_pod_of_a_group(tmp_path: Path) -> None:
    # web-0 must share a zone with app=web pods. None exists anywhere and web-0 matches its own
    # term: every node with a zone passes (upstream's exception for the first pod); d has no
    # zone label: UnschedulableAndUnresolvable.
    incoming = _pod("web-0", app="web")
    incoming["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="web")]
        }
    }
    scenario = {"scheduler": _only(), "nodes": NODES, "pods": [], "pod": incoming}
    unresolvable = ("UnschedulableAndUnresolvable", [REASON["affinity"]])
    ok = ("Success", [])
    want = {"a": ok, "b": ok, "c": ok, "d": unresolvable}
    assert _statuses(cli_json(tmp_path, scenario)) == want
    # a web pod in namespace "other" does not match (the term covers the pod's own namespace)
    scenario["pods"] = [_pod("web-x", "c", ns="other", app="web")]
    assert _statuses(cli_json(tmp_path, scenario)) == want
    # one in shop on c: only zone z2 has a matching pod now
    scenario["pods"] = [_pod("web-1", "c", app="web")]
    want = {"a": unresolvable, "b": unresolvable, "c": ok, "d": unresolvable}
    assert _statuses(cli_json(tmp_path, scenario)) == want
    # a pod that does not match its own term gets no exception: nothing fits
    scenario["pods"] = []
    scenario["pod"]["metadata"]["labels"] = {"app": "api"}
    payload = cli_json(tmp_path, scenario)
    assert all(s == unresolvable for s in _statuses(payload).values())
    assert payload["chosen"] is None


def test_anti_affinity_order_and_terminating_pods(tmp_path: Path) -> None:
    # db-1 on a refuses app=web pods in its zone (z1): a and b fail the existing pods' check.
    db = _pod("db-1", "a", app="db")
    db["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="web")]
        }
    }
    scenario = {"scheduler": _only(), "nodes": NODES, "pods": [db], "pod": _pod("web", app="web")}
    existing = ("Unschedulable", [REASON["existing"]])
    ok = ("Success", [])
    assert _statuses(cli_json(tmp_path, scenario)) == {
        "a": existing,
        "b": existing,
        "c": ok,
        "d": ok,
    }
    # the incoming pod also refuses hosts running app=db: a fails that check first (the checks
    # run in order and the first failure is reported), b still fails the existing pods' check
    scenario["pod"]["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _term("kubernetes.io/hostname", app="db")
            ]
        }
    }
    anti = ("Unschedulable", [REASON["anti"]])
    assert _statuses(cli_json(tmp_path, scenario)) == {"a": anti, "b": existing, "c": ok, "d": ok}
    # unlike PodTopologySpread, InterPodAffinity does not skip terminating pods
    db["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert _statuses(cli_json(tmp_path, scenario)) == {"a": anti, "b": existing, "c": ok, "d": ok}


def _cache_scenario(args: dict[str, Any] | None = None) -> dict[str, Any]:
    cache = _pod("cache-1", "a", app="cache")
    cache["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="web")]
        }
    }
    return {"scheduler": _only(args), "nodes": NODES, "pods": [cache], "pod": _pod("w", app="web")}


def test_hard_pod_affinity_weight_and_negative_scores(tmp_path: Path) -> None:
    # cache-1 (on a, zone z1) requires app=web in its zone; the incoming web pod matches, so z1
    # gets hardPodAffinityWeight 5: raw a 5, b 5, c 0, d 0 (no zone) → min 0, max 5: 100/100/0/0
    payload = cli_json(tmp_path, _cache_scenario({"hardPodAffinityWeight": 5}))
    assert {n["name"]: n["scores"][IPA] for n in payload["nodes"]} == {
        "a": 100,
        "b": 100,
        "c": 0,
        "d": 0,
    }
    # the pod also prefers (weight 10) hosts without app=cache: hostname a −10. Raw a 5 − 10 = −5,
    # b 5, c 0, d 0; min −5, max 5: 100·(s + 5)/10 → a 0, b 100, c 50, d 50
    scenario = _cache_scenario({"hardPodAffinityWeight": 5})
    scenario["pod"]["spec"]["affinity"] = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": _term("kubernetes.io/hostname", app="cache")}
            ]
        }
    }
    payload = cli_json(tmp_path, scenario)
    scores = {n["name"]: n["scores"][IPA] for n in payload["nodes"]}
    assert scores == {"a": 0, "b": 100, "c": 50, "d": 50}
    assert [n["total"] for n in payload["nodes"]] == [0, 200, 100, 100]  # weight 2


def test_skips_without_matching_terms(tmp_path: Path) -> None:
    # hardPodAffinityWeight 0: cache-1's required term adds nothing → PreScore Skip
    payload = cli_json(tmp_path, _cache_scenario({"hardPodAffinityWeight": 0}))
    assert all(IPA not in n["scores"] for n in payload["nodes"])
    # ignorePreferredTermsOfExistingPods skips pods without preferred terms of their own —
    # upstream returns Skip before looking at existing pods, the hard weight included
    args = {"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}
    payload = cli_json(tmp_path, _cache_scenario(args))
    assert all(IPA not in n["scores"] for n in payload["nodes"])


NAMESPACES = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"team": t}}}
    for n, t in (("shop", "a"), ("tools", "a"), ("batch", "b"))
]


def test_namespace_selector(tmp_path: Path) -> None:
    # preferred affinity weight 3 to app=web in zones, namespaceSelector team=a (shop, tools).
    # web pods: tools on a (z1), batch on c (z2, team b), ghost on b (no Namespace object).
    # Raw: z1 3 (only the tools pod), z2 0 → a 100, b 100, c 0, d 0 (no zone).
    term = _term("zone", app="web") | {"namespaceSelector": {"matchLabels": {"team": "a"}}}
    incoming = _pod("w", app="web")
    incoming["spec"]["affinity"] = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "podAffinityTerm": term}
            ]
        }
    }
    pods = [
        _pod("p1", "a", ns="tools", app="web"),
        _pod("p2", "c", ns="batch", app="web"),
        _pod("p3", "b", ns="ghost", app="web"),
    ]
    scenario = {
        "scheduler": _only(),
        "nodes": NODES,
        "pods": pods,
        "pod": incoming,
        "objects": NAMESPACES,
    }
    scores = {n["name"]: n["scores"][IPA] for n in cli_json(tmp_path, scenario)["nodes"]}
    assert scores == {"a": 100, "b": 100, "c": 0, "d": 0}
    # namespaceSelector {} = every namespace, also one without a Namespace object: z1 has the
    # tools and ghost pods (6), z2 the batch pod (3) → a, b 100; c 100·3/6 = 50; d 0
    term["namespaceSelector"] = {}
    scores = {n["name"]: n["scores"][IPA] for n in cli_json(tmp_path, scenario)["nodes"]}
    assert scores == {"a": 100, "b": 100, "c": 50, "d": 0}
    # namespaces + no selector: exactly the listed ones (batch) → z2 3, z1 0
    del term["namespaceSelector"]
    term["namespaces"] = ["batch"]
    scores = {n["name"]: n["scores"][IPA] for n in cli_json(tmp_path, scenario)["nodes"]}
    assert scores == {"a": 0, "b": 0, "c": 100, "d": 0}


def test_truncation_of_the_normalised_score(tmp_path: Path) -> None:
    # hostname terms weight 1 (app=web) and 2 (tier=front); x runs one web pod (1), y a web
    # front pod (3), z nothing: 100·1/3 = 33.3 → 33 (Go int64() truncates), y 100, z 0
    incoming = _pod("new", app="web")
    incoming["spec"]["affinity"] = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": _term("kubernetes.io/hostname", app="web")},
                {"weight": 2, "podAffinityTerm": _term("kubernetes.io/hostname", tier="front")},
            ]
        }
    }
    scenario = {
        "scheduler": _only(),
        "nodes": [_node("x"), _node("y"), _node("z")],
        "pods": [_pod("p1", "x", app="web"), _pod("p2", "y", app="web", tier="front")],
        "pod": incoming,
    }
    scores = {n["name"]: n["scores"][IPA] for n in cli_json(tmp_path, scenario)["nodes"]}
    assert scores == {"x": 33, "y": 100, "z": 0}
    code, out, err = run_cli(tmp_path, scenario, "--explain")
    assert code == 0, err
    assert "domain kubernetes.io/hostname=y: Σ matched term weights 3" in out


def test_inter_pod_affinity_example(tmp_path: Path) -> None:
    # examples/score-inter-pod-affinity.yaml works the numbers out in its comments
    example = Path(__file__).parent.parent / "examples" / "score-inter-pod-affinity.yaml"
    payload = cli_json(tmp_path, yaml.safe_load(example.read_text()))
    assert _statuses(payload) == {
        "node-a": ("Success", []),
        "node-b": ("Success", []),
        "node-c": ("Unschedulable", [REASON["anti"]]),
        "node-d": ("Unschedulable", [REASON["existing"]]),
        "node-e": ("Success", []),
    }
    feasible = {n["name"]: n["scores"][IPA] for n in payload["nodes"] if n["feasible"]}
    assert feasible == {"node-a": 100, "node-b": 60, "node-e": 0}
    assert [n["total"] for n in payload["nodes"] if n["feasible"]] == [200, 120, 0]
    assert payload["chosen"] == "node-a"


def test_default_profile_and_presets(tmp_path: Path) -> None:
    # analyzer score with only the API named: the v1 defaults, InterPodAffinity weight 2
    scenario = _cache_scenario()
    scenario["scheduler"] = {"apiVersion": "kubescheduler.config.k8s.io/v1"}
    payload = cli_json(tmp_path, scenario)
    assert payload["weights"][IPA] == 2
    assert {n["name"]: n["scores"][IPA] for n in payload["nodes"]} == {
        "a": 100,
        "b": 100,
        "c": 0,
        "d": 0,
    }
    # the kube presets run it too (replays track placed pods' terms, replay/topology.py)
    profile = load_strategy("kube-default")
    assert {w.plugin.name: w.weight for w in profile.scorers}[IPA] == 2
    assert IPA in [f.name for f in profile.filters]


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("scheduler", "args", "hardPodAffinityWeight"), 101, "args.hardPodAffinityWeight"),
        (("scheduler", "args", "ignorePreferredTermsOfExistingPods"), "yes", "ignorePreferred"),
        (("pod", "weight"), 0, "].weight: Invalid value"),
        (("pod", "labelSelector"), {"matchLabels": {"app": "a b"}}, "matchLabels.app"),
        (("pod", "topologyKey"), 3, "topologyKey"),
    ],
)
def test_bad_input_is_a_one_line_error(
    where: tuple[str, ...], value: Any, field: str, tmp_path: Path
) -> None:
    scenario = _cache_scenario({"hardPodAffinityWeight": 1})
    term = _term("zone", app="cache")
    scenario["pod"]["spec"]["affinity"] = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": term}
            ]
        }
    }
    if where[0] == "scheduler":
        scenario["scheduler"]["profiles"][0]["pluginConfig"][0]["args"][where[2]] = value
    elif where[1] == "weight":
        affinity = scenario["pod"]["spec"]["affinity"]["podAffinity"]
        affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = value
    else:
        term[where[1]] = value
    code, _, err = run_cli(tmp_path, scenario)
    assert code == 2, err
    assert field in err
    assert len(err.strip().splitlines()) == 1


def test_explain_shows_the_filter_counts(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "score-inter-pod-affinity.yaml"
    code, out, err = run_cli(tmp_path, yaml.safe_load(example.read_text()), "--explain")
    assert code == 0, err
    assert "1 pod(s) matching the term in the node's kubernetes.io/hostname domain" in out
    assert "domain topology.kubernetes.io/zone=z1: Σ matched term weights 51" in out
    # the terms behind the 51 (worked in the example's comments) and node-b's −20
    assert "pod's preferred affinity [0] app in (cache): 1 pod(s) × weight 50" in out
    assert "existing pods' required affinity app in (web) (hardPodAffinityWeight): 1 pod(s)" in out
    assert "existing pods' preferred anti-affinity app in (web): 1 pod(s) × weight -20" in out


# ---------------------------------------------------------------- the pod index


def test_pod_index_tracks_affinity_pods_and_terminating_ones() -> None:
    # count_all counts terminating pods too; affinity_groups follows binds and unbinds
    rng = np.random.default_rng(3)
    index = PodIndex(4)
    terms = PodAffinity(required_anti=())
    placed: list[tuple[int, PlacedPod]] = []
    for i in range(200):
        if placed and rng.random() < 0.3:
            node, pod = placed.pop(int(rng.integers(len(placed))))
            index.remove(node, pod)
            continue
        pod = PlacedPod(
            f"p{i}",
            str(rng.choice(["a", "b"])),
            {"app": str(rng.choice(["web", "db"]))},
            terminating=bool(rng.random() < 0.2),
            affinity=terms if rng.random() < 0.3 else None,
        )
        node = int(rng.integers(4))
        index.add(node, pod)
        placed.append((node, pod))
    web = parse_label_selector({"matchLabels": {"app": "web"}}, "s")
    got = index.count_all(lambda ns, labels: ns == "a" and web.matches(labels))
    want = np.zeros(4, dtype=np.int64)
    for node, pod in placed:
        if pod.namespace == "a" and pod.labels["app"] == "web":
            want[node] += 1
    assert got.tolist() == want.tolist()
    with_terms: dict[int, int] = {}
    for node, pod in placed:
        if pod.affinity is not None:
            with_terms[node] = with_terms.get(node, 0) + 1
    assert index.affinity_groups.get(terms, {}) == with_terms


def test_inert_means_no_filter_and_no_score(tmp_path: Path) -> None:
    # a pod without terms in a cluster where no placed pod has terms: Filter passes every node
    # and PreScore skips, so a replay may leave the plugin out for it
    scenario = _cache_scenario()
    del scenario["pods"][0]["spec"]["affinity"]
    built = build_scenario(scenario)
    plugin = InterPodAffinity()
    assert plugin.inert(built.state, built.pod)
    assert plugin.filter(built.state, built.pod, 0.0).feasible.all()
    assert plugin.score(built.state, built.pod, 0.0) is None
    # once a placed pod carries terms (cache-1 again), the plugin is no longer inert
    built = build_scenario(_cache_scenario())
    assert not plugin.inert(built.state, built.pod)
    assert plugin.score(built.state, built.pod, 0.0) is not None


def test_without_a_pod_index_the_error_names_the_fix() -> None:
    state = ClusterState.from_nodes(["n"], [{"pods": 10}])
    state.pod_index = None  # a state that does not track its pods (from_nodes tracks them)
    pod = build_scenario(_cache_scenario()).pod
    with pytest.raises(Exception, match="attach_pod_index"):
        InterPodAffinity().filter(state, pod, 0.0)


# ---------------------------------------------------------------- against a plain loop


def _selects(sel: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if sel is None:
        return False
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for e in sel.get("matchExpressions") or []:
        has = e["key"] in labels
        if e["operator"] == "In" and not (has and labels[e["key"]] in e["values"]):
            return False
        if e["operator"] == "NotIn" and has and labels[e["key"]] in e["values"]:
            return False
        if e["operator"] == "Exists" and not has:
            return False
    return True


def _loop_ipa(scenario: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int] | None]:
    """InterPodAffinity written pod by pod from research/kube-plugins.md §2: per candidate node
    (status, reasons), and the final scores of the nodes that passed (None = Skip)."""
    labels = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in scenario["nodes"]}
    names = list(labels)
    ns_labels = {o["metadata"]["name"]: o["metadata"]["labels"] for o in scenario["objects"]}
    args = scenario["scheduler"]["profiles"][0]["pluginConfig"][0]["args"]
    hard = args["hardPodAffinityWeight"]
    pods = scenario["pods"]
    pod = scenario["pod"]
    pns = pod["metadata"]["namespace"]
    plabels = pod["metadata"]["labels"]

    def terms(p: dict[str, Any], kind: str, field: str) -> list[Any]:
        body = ((p["spec"].get("affinity") or {}).get(kind)) or {}
        return list(body.get(field) or [])

    def matches(term: dict[str, Any], owner_ns: str, ns: str, lab: dict[str, str],
                nsl: dict[str, str] | None, incoming: bool) -> bool:  # fmt: skip
        listed = set(term.get("namespaces") or [])
        nssel = term.get("namespaceSelector")
        if not listed and nssel is None:
            listed = {owner_ns}
        if incoming and nssel:  # unrolled into names; {} stays "every namespace"
            listed |= {n for n, nl in ns_labels.items() if _selects(nssel, nl)}
            nssel = None
        ok_ns = ns in listed or (nssel is not None and _selects(nssel, nsl or {}))
        return ok_ns and _selects(term.get("labelSelector"), lab)

    def pmeta(p: dict[str, Any]) -> tuple[str, dict[str, str]]:
        return p["metadata"]["namespace"], p["metadata"].get("labels", {})

    req = terms(pod, "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    anti = terms(pod, "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    aff_counts: dict[tuple[str, str], int] = {}
    anti_counts: dict[tuple[str, str], int] = {}
    existing: dict[tuple[str, str], int] = {}
    for p in pods:
        m = p["spec"]["nodeName"]
        ns, lab = pmeta(p)
        if req and all(matches(t, pns, ns, lab, None, True) for t in req):
            for t in req:
                if t["topologyKey"] in labels[m]:
                    pair = (t["topologyKey"], labels[m][t["topologyKey"]])
                    aff_counts[pair] = aff_counts.get(pair, 0) + 1
        for t in anti:
            if matches(t, pns, ns, lab, None, True) and t["topologyKey"] in labels[m]:
                pair = (t["topologyKey"], labels[m][t["topologyKey"]])
                anti_counts[pair] = anti_counts.get(pair, 0) + 1
        for t in terms(p, "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
            if t["topologyKey"] in labels[m] and matches(
                t, ns, pns, plabels, ns_labels.get(pns), False
            ):
                pair = (t["topologyKey"], labels[m][t["topologyKey"]])
                existing[pair] = existing.get(pair, 0) + 1
    self_match = bool(req) and all(matches(t, pns, pns, plabels, None, True) for t in req)
    status: dict[str, Any] = {}
    for n in scenario.get("candidateNodes", names):
        lab = labels[n]
        ok = all(t["topologyKey"] in lab for t in req)
        if ok and not all(aff_counts.get((t["topologyKey"], lab[t["topologyKey"]]), 0) > 0
                          for t in req):  # fmt: skip
            ok = not aff_counts and self_match
        if not ok:
            status[n] = ("UnschedulableAndUnresolvable", [REASON["affinity"]])
        elif any(t["topologyKey"] in lab and anti_counts.get((t["topologyKey"],
                 lab[t["topologyKey"]]), 0) > 0 for t in anti):  # fmt: skip
            status[n] = ("Unschedulable", [REASON["anti"]])
        elif any(existing.get((k, v), 0) > 0 for k, v in lab.items()):
            status[n] = ("Unschedulable", [REASON["existing"]])
        else:
            status[n] = ("Success", [])
    passed = [n for n, s in status.items() if s[0] == "Success"]
    pref = terms(pod, "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    pref_anti = terms(pod, "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    if not passed or (args["ignorePreferredTermsOfExistingPods"] and not (pref or pref_anti)):
        return status, None
    topo: dict[str, dict[str, int]] = {}

    def add(term: dict[str, Any], weight: int, node: str) -> None:
        key = term["topologyKey"]
        if key in labels[node]:
            values = topo.setdefault(key, {})
            values[labels[node][key]] = values.get(labels[node][key], 0) + weight

    for p in pods:
        m = p["spec"]["nodeName"]
        if not labels[m]:
            continue
        ns, lab = pmeta(p)
        for sign, group in ((1, pref), (-1, pref_anti)):
            for w in group:
                if matches(w["podAffinityTerm"], pns, ns, lab, None, True):
                    add(w["podAffinityTerm"], sign * w["weight"], m)
        nsl = ns_labels.get(pns)
        if hard > 0:
            for t in terms(p, "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
                if matches(t, ns, pns, plabels, nsl, False):
                    add(t, hard, m)
        for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
            for w in terms(p, kind, "preferredDuringSchedulingIgnoredDuringExecution"):
                if matches(w["podAffinityTerm"], ns, pns, plabels, nsl, False):
                    add(w["podAffinityTerm"], sign * w["weight"], m)
    if not topo:
        return status, None
    raw = {
        n: sum(v.get(labels[n][k], 0) for k, v in topo.items() if k in labels[n]) for n in passed
    }
    low, high = min(raw.values()), max(raw.values())
    return status, {
        n: int(100.0 * ((s - low) / (high - low))) if high > low else 0 for n, s in raw.items()
    }


def _random_term(rng: np.random.Generator) -> dict[str, Any]:
    app = str(rng.choice(["web", "db", "cache"]))
    pick = rng.random()
    term: dict[str, Any] = {
        "topologyKey": str(rng.choice(["kubernetes.io/hostname", "zone", "rack"]))
    }
    if pick < 0.6:
        term["labelSelector"] = {"matchLabels": {"app": app}}
    elif pick < 0.75:
        term["labelSelector"] = {
            "matchExpressions": [{"key": "app", "operator": "NotIn", "values": [app]}]
        }
    elif pick < 0.85:
        term["labelSelector"] = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    elif pick < 0.93:
        term["labelSelector"] = {}
    ns = rng.random()
    if ns < 0.15:
        term["namespaces"] = [str(rng.choice(["shop", "tools", "batch", "ghost"]))]
    elif ns < 0.3:
        term["namespaceSelector"] = {"matchLabels": {"team": str(rng.choice(["a", "b"]))}}
    elif ns < 0.35:
        term["namespaceSelector"] = {}
    return term


def _random_affinity(rng: np.random.Generator, chance: float) -> dict[str, Any] | None:
    if rng.random() >= chance:
        return None
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        body: dict[str, Any] = {}
        if rng.random() < 0.4:
            count = int(rng.integers(1, 3))
            body["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _random_term(rng) for _ in range(count)
            ]
        if rng.random() < 0.5:
            body["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": int(rng.integers(1, 101)), "podAffinityTerm": _random_term(rng)}
                for _ in range(int(rng.integers(1, 3)))
            ]
        if body:
            out[kind] = body
    return out or None


def _random_scenario(rng: np.random.Generator) -> dict[str, Any]:
    nodes = []
    for i in range(int(rng.integers(2, 9))):
        name = f"n{i}"
        node = _node(name)
        labs = {"kubernetes.io/hostname": name}
        if rng.random() < 0.8:
            labs["zone"] = f"z{rng.integers(3)}"
        if rng.random() < 0.6:
            labs["rack"] = f"r{rng.integers(4)}"
        node["metadata"]["labels"] = labs if rng.random() < 0.9 else {}
        nodes.append(node)
    pods = []
    for j in range(int(rng.integers(0, 20))):
        labels = {"app": str(rng.choice(["web", "db", "cache"]))}
        if rng.random() < 0.3:
            labels["tier"] = "front"
        ns = str(rng.choice(["shop", "shop", "tools", "batch", "ghost"]))
        p = _pod(f"p{j}", f"n{rng.integers(len(nodes))}", ns=ns, **labels)
        if rng.random() < 0.1:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        affinity = _random_affinity(rng, 0.35)
        if affinity:
            p["spec"]["affinity"] = affinity
        pods.append(p)
    incoming = _pod("new", ns=str(rng.choice(["shop", "tools", "ghost"])), app="web")
    if rng.random() < 0.3:
        incoming["metadata"]["labels"]["tier"] = "front"
    affinity = _random_affinity(rng, 0.8)
    if affinity:
        incoming["spec"]["affinity"] = affinity
    args = {
        "hardPodAffinityWeight": int(rng.integers(0, 4)),
        "ignorePreferredTermsOfExistingPods": bool(rng.random() < 0.2),
    }
    scenario: dict[str, Any] = {
        "scheduler": _only(args),
        "nodes": nodes,
        "pods": pods,
        "pod": incoming,
        "objects": copy.deepcopy(NAMESPACES),
    }
    if rng.random() < 0.4:
        names = [n["metadata"]["name"] for n in nodes]
        scenario["candidateNodes"] = [n for n in names if rng.random() < 0.7] or names[:1]
    return scenario


@pytest.mark.parametrize("seed", range(300))
def test_vectorised_plugin_equals_a_plain_loop(seed: int) -> None:
    scenario = _random_scenario(np.random.default_rng(seed))
    status, scores = _loop_ipa(scenario)
    payload = loader_json(scenario)
    assert _statuses(payload) == status
    got = {n["name"]: n["scores"].get(IPA) for n in payload["nodes"] if n["feasible"]}
    if scores is None:
        assert all(v is None for v in got.values())
    else:
        assert got == scores
        assert all(0 <= v <= 100 for v in got.values())

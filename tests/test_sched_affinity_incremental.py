"""InterPodAffinity on a state that changes under it: the pod index's term lookup (which placed
term sets match an incoming pod, remembered per pod identity) and its kept counts must give, after
any sequence of binds and unbinds, what the plain pod-by-pod loop of ``test_sched_affinity``
computes from the pods placed at that moment."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from test_sched_affinity import (
    NAMESPACES,
    REASON,
    _loop_ipa,
    _node,
    _only,
    _pod,
    _random_affinity,
    _selects,
)

from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.scenario import build_scenario

STATUS = {REASON["affinity"]: "UnschedulableAndUnresolvable"}


def _pool(rng: np.random.Generator, nodes: int) -> list[dict[str, Any]]:
    """Pods to bind: a few identities and a few term sets, so both repeat (a workload's replicas
    share labels and terms); some terminating."""
    term_sets = [_random_affinity(rng, 1.0) for _ in range(4)] + [None]
    identities = [(str(rng.choice(["shop", "tools", "batch", "ghost"])),
                   {"app": str(rng.choice(["web", "db", "cache"]))}) for _ in range(4)]  # fmt: skip
    pods = []
    for j in range(40):
        ns, labels = identities[int(rng.integers(len(identities)))]
        extra = {"tier": "front"} if rng.random() < 0.2 else {}
        pod = _pod(f"p{j}", f"n{rng.integers(nodes)}", ns=ns, **labels, **extra)
        affinity = term_sets[int(rng.integers(len(term_sets)))]
        if affinity:
            pod["spec"]["affinity"] = copy.deepcopy(affinity)
        if rng.random() < 0.1:
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        pods.append(pod)
    return pods


def _incoming(rng: np.random.Generator, i: int) -> dict[str, Any]:
    pod = _pod(f"new{i}", ns=str(rng.choice(["shop", "tools", "ghost"])),
               app=str(rng.choice(["web", "db"])))  # fmt: skip
    affinity = _random_affinity(rng, 0.5)
    if affinity:
        pod["spec"]["affinity"] = affinity
    return pod


def _placed_terms_match(live: list[dict[str, Any]], pod: dict[str, Any], hard: int) -> bool:
    """Some placed pod has a required anti-affinity term, a required affinity term (when
    hardPodAffinityWeight > 0) or a preferred term matching ``pod`` (pod by pod)."""
    ns, labels = pod["metadata"]["namespace"], pod["metadata"]["labels"]
    ns_labels = {o["metadata"]["name"]: o["metadata"]["labels"] for o in NAMESPACES}.get(ns)
    for placed in live:
        affinity = placed["spec"].get("affinity") or {}
        terms = []
        for kind in ("podAffinity", "podAntiAffinity"):
            body = affinity.get(kind) or {}
            if kind == "podAntiAffinity" or hard > 0:
                terms += body.get("requiredDuringSchedulingIgnoredDuringExecution") or []
            terms += [
                w["podAffinityTerm"]
                for w in body.get("preferredDuringSchedulingIgnoredDuringExecution") or []
            ]
        for term in terms:
            listed = set(term.get("namespaces") or [])
            selector = term.get("namespaceSelector")
            if not listed and selector is None:
                listed = {placed["metadata"]["namespace"]}
            in_ns = ns in listed or (selector is not None and _selects(selector, ns_labels or {}))
            if in_ns and _selects(term.get("labelSelector"), labels):
                return True
    return False


@pytest.mark.parametrize("seed", range(60))
def test_binds_and_unbinds_keep_the_plugin_equal_to_a_plain_loop(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seed % 2:  # room for one kept count array: the others are dropped and recounted when asked
        monkeypatch.setattr("analyzer.scheduling.pod_index.MAX_KEPT", 1)
    rng = np.random.default_rng(10_000 + seed)
    nodes = []
    for i in range(int(rng.integers(2, 7))):
        labels = {"zone": f"z{rng.integers(3)}"} if rng.random() < 0.8 else {}
        if rng.random() < 0.5:
            labels["rack"] = f"r{rng.integers(2)}"
        nodes.append(_node(f"n{i}", **labels))
    if rng.random() < 0.2:
        nodes[0]["metadata"]["labels"] = {}  # a node without labels: its pods score nothing
    pool = _pool(rng, len(nodes))
    args = {"hardPodAffinityWeight": int(rng.integers(0, 3)),
            "ignorePreferredTermsOfExistingPods": bool(rng.random() < 0.15)}  # fmt: skip
    base = {"scheduler": _only(args), "nodes": nodes, "objects": copy.deepcopy(NAMESPACES)}
    # one state and one plugin for the whole sequence: the index and the memo carry over
    built = build_scenario({**base, "pods": [], "pod": _pod("first")})
    state, profile = built.state, built.profile
    plugin = next(f for f in profile.filters if isinstance(f, InterPodAffinity))
    position = {n["metadata"]["name"]: i for i, n in enumerate(nodes)}
    live: list[dict[str, Any]] = []
    checks = 0
    for step in range(50):
        if live and rng.random() < 0.35:
            gone = live.pop(int(rng.integers(len(live))))
            state.unbind(position[gone["spec"]["nodeName"]],
                         parse_pod(gone, "pod").demand(state.resources))  # fmt: skip
        else:
            pod = copy.deepcopy(pool[int(rng.integers(len(pool)))])
            pod["metadata"]["name"] = f"{pod['metadata']['name']}-{step}"
            live.append(pod)
            state.bind(position[pod["spec"]["nodeName"]],
                       parse_pod(pod, "pod").demand(state.resources))  # fmt: skip
        for k in range(2):
            incoming = _incoming(rng, 2 * step + k)
            demand = parse_pod(incoming, "pod").demand(state.resources)
            status, scores = _loop_ipa({**base, "pods": live, "pod": incoming})
            result = plugin.filter(state, demand, 0.0)
            got = {}
            for name, i in position.items():
                reasons = result.reasons(i)
                if result.feasible[i]:
                    got[name] = ("Success", [])
                else:
                    got[name] = (STATUS.get(reasons[0], "Unschedulable"), reasons)
            assert got == status, (step, incoming)
            feasible = result.feasible
            if feasible.any():
                score = plugin.score_feasible(state, demand, 0.0, feasible)
                if scores is None:
                    assert score is None, (step, incoming)
                else:
                    assert score is not None
                    assert {n: int(score[i]) for n, i in position.items() if feasible[i]} == scores
            if not (demand.affinity and (demand.affinity.required or demand.affinity.required_anti
                                         or demand.affinity.preferred
                                         or demand.affinity.preferred_anti)):  # fmt: skip
                expected = _placed_terms_match(live, incoming, args["hardPodAffinityWeight"])
                assert plugin.placed_terms_match(state, demand) == expected
                checks += 1
    assert checks > 0

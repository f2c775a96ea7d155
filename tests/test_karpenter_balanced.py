"""Karpenter's ``Balanced`` consolidation policy (kubernetes-sigs/karpenter v1.14.0,
``pkg/controllers/disruption/balanced.go``): a move passes when the share of the NodePool's cost
it saves over the share of the pool's disruption it causes is at least 1/k, k = 2.

- the score of a move, on hand-made numbers;
- ``analyzer autoscale`` (one instant): a cheap node whose pods would fit elsewhere is kept when
  its pods weigh more in the pool's disruption than its price does in the pool's cost, and taken
  where they weigh less (the same node, more pods elsewhere in the pool); a node kept by
  do-not-disrupt counts in both totals;
- the replay (``whatif --autoscaler karpenter``): the node WhenEmptyOrUnderutilized deletes stays
  under Balanced, counted ``BalancedScore``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscale_cases import DATA, node, pod, run
from replay_fixtures import GI, N, P
from test_autoscale_karpenter import NOW, RS, _node, _pod, _scenario
from test_replay_karpenter import _karpenter, _row, _snapshot, _whatif

from analyzer.autoscaler.karpenter import (
    BALANCED_K,
    DELETION_COST,
    Candidate,
    Decision,
    PoolTotals,
    approved,
    decide,
    move_score,
    pod_eviction_cost,
    pool_totals,
)


def test_the_score_is_the_savings_share_over_the_disruption_share() -> None:
    # savings 0.05 of a pool costing 0.45 (1/9) against 2 of 8 units of disruption (1/4): 4/9
    totals = PoolTotals(0.45, 8.0)
    assert move_score(0.05, 2.0, totals) == pytest.approx(4 / 9)
    assert not approved(move_score(0.05, 2.0, totals))
    assert approved(0.5) and not approved(0.4999)  # the threshold 1/k, k = 2, is inclusive
    # nothing saved (a replacement as dear as the node): 0 whatever the disruption
    assert move_score(0.0, 0.5, totals) == 0.0 and move_score(-0.1, 0.5, totals) == 0.0
    # no disruption share: +inf; totals not positive: nothing to normalise against, 0
    assert math.isinf(move_score(0.05, 0.0, totals))
    assert move_score(0.05, 2.0, PoolTotals(0.0, 8.0)) == 0.0
    assert move_score(0.05, 2.0, PoolTotals(0.45, 0.0)) == 0.0
    assert move_score(0.05, 2.0, None) == 0.0


def _pods(where: str, count: int, millicores: int) -> list[dict[str, Any]]:
    return [_pod(f"{where}-{i}", where, millicores) for i in range(count)]


def _balanced(
    tmp_path: Path, big: list[dict[str, Any]], *more: dict[str, Any], policy: str = "Balanced"
) -> dict[str, Any]:
    """A large node (0.4) holding the pods ``big`` and a small one (0.05) holding one pod of
    500m, which fits on the large; ``more`` nodes and pods (``{"node":, "pods":}``); one
    disruption at a time (a budget of 1: no multi-node command)."""
    nodes = [_node("big", "large"), _node("s", "small"), *(m["node"] for m in more)]
    pods = [*big, _pod("w", "s", 500), *(p for m in more for p in m["pods"])]
    scenario = _scenario(nodes, pods, consolidationPolicy=policy, budgets=[{"nodes": "1"}])
    return run(tmp_path, scenario)["decision"]


def test_a_cheap_node_whose_pods_weigh_more_than_its_price_stays(tmp_path: Path) -> None:
    # big: 3 pods of 1600m (1 + 3 = 4 units of disruption), s: 1 pod (2 units). Pool cost
    # 0.45, disruption 6. big first by savings ratio (0.4/4 > 0.05/2): deleting it would score
    # (0.4/0.45)/(4/6) = 1.33, but none of its pods fits on s (1.5 cores free) and no cheaper
    # shape holds their 4.8 cores (medium has 4): tried, failed. s, even deleted, scores
    # (0.05/0.45)/(2/6) = 0.333 < 0.5: refused. WhenEmptyOrUnderutilized deletes s (its pod
    # fits on big).
    big = _pods("big", 3, 1600)
    decision = _balanced(tmp_path, big)
    assert decision["type"] == "none" and decision["nodes"] == []
    assert decision["refusedByScore"] == ["s"] and decision["score"] is None
    assert "Balanced" in decision["reason"]
    plain = _balanced(tmp_path, big, policy="WhenEmptyOrUnderutilized")
    assert (plain["type"], plain["nodes"]) == ("single", ["s"])
    assert "score" not in plain  # the score is shown for Balanced pools only


def test_the_same_node_goes_where_the_pool_holds_more_disruption(tmp_path: Path) -> None:
    # The same pods, one of them of priority 9 x 2^25: its EvictionCost is 1 + 9 = 10, so big
    # weighs 1 + 10 + 1 + 1 = 13 units and the pool 15. big, first, could pass
    # ((0.4/0.45)/(13/15) = 1.03) but fits nowhere; s scores (0.05/0.45)/(2/15) = 0.833
    heavy = _pod("big-x", "big", 1600, priority=9 * 2**25)
    decision = _balanced(tmp_path, [heavy, *_pods("big", 2, 1600)])
    assert (decision["type"], decision["nodes"]) == ("single", ["s"])
    assert decision["score"] == pytest.approx((0.05 / 0.45) / (2 / 15))
    assert decision["refusedByScore"] == []
    assert "Balanced score 0.833" in decision["reason"]


def test_nodes_that_are_no_candidates_count_in_both_totals(tmp_path: Path) -> None:
    # big kept by a do-not-disrupt pod: no candidate, but its price (0.4) and its disruption
    # (1 + 3 pods) count, so s scores 0.333 as in the first case and is refused. A medium node
    # (0.2) kept by do-not-disrupt with 8 pods (9 units) more: pool cost 0.65, disruption 15;
    # s scores (0.05/0.65)/(2/15) = 0.577 and goes.
    held = {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}
    big = [_pod("big-0", "big", 1600, **held), *_pods("big", 2, 1600)]
    decision = _balanced(tmp_path, big)
    assert decision["type"] == "none" and decision["refusedByScore"] == ["s"]
    kept = {"node": _node("kept", "medium", **held), "pods": _pods("kept", 8, 100)}
    decision = _balanced(tmp_path, big, kept)
    assert (decision["type"], decision["nodes"]) == ("single", ["s"])
    assert decision["score"] == pytest.approx((0.05 / 0.65) / (2 / 15))


def test_the_replay_keeps_the_node_whose_move_scores_too_little(tmp_path: Path) -> None:
    # Four 4-core nodes of one price: a with six 0.2-core pods (7 units of disruption), b, c, d
    # with one 3.5-core pod each (2 units; each fits nowhere else: a has 2.8 cores free, the
    # others 0.5). The budget lets one node go (10 % of 4, rounded up). a's pods fit on b, c, d
    # (two each): WhenEmptyOrUnderutilized deletes a at 0:10. Balanced: a scores (1/4)/(7/13)
    # = 0.464 < 0.5, so a stays, counted BalancedScore at every pass from the first (0:10) to
    # the end; b, c, d NotCheaper (their pods fit nowhere, no cheaper shape). (The big pods
    # arrive first: kube-default then puts each on an empty node and the small ones together
    # on the fourth, the emptiest.)
    pods = [P(f"{n}0", n, cpu=3500, memory=GI) for n in "bcd"]
    pods += [P(f"a{i}", "a", cpu=200, memory=GI // 8) for i in range(6)]
    snap = _snapshot(tmp_path, [N("a"), N("b"), N("c"), N("d")], pods)
    plain = _row(_whatif(tmp_path, snap, None))
    assert (plain["nodes_removed"], plain["pods_evicted"]) == (1, 6)
    balanced = _row(_whatif(tmp_path, snap, _karpenter("{consolidationPolicy: Balanced}")))
    assert balanced["nodes_removed"] == 0 and balanced["pods_evicted"] == 0
    reasons = balanced["unremovable_reasons_node_hours"]
    assert reasons["BalancedScore"] == pytest.approx(2 - 10 / 3600, abs=1e-6)
    assert reasons["NotCheaper"] == pytest.approx(3 * (2 - 10 / 3600), abs=1e-6)
    # the page says which policy ruled (the row's notes are listed under its tables)
    assert any("consolidationPolicy Balanced" in n for n in balanced["notes"])
    assert not any("consolidationPolicy" in n for n in plain["notes"])


def _decide(
    ordered: list[Candidate], totals: dict[str, PoolTotals], policy: str = "Balanced"
) -> Decision:
    """``decide`` where every candidate's pods fit on the nodes that stay (deletes only)."""
    return decide(ordered, lambda _p, _r: 100, policy, lambda _c: [], lambda _n: [], totals)


def _three_pods(name: str, pool: str = "p") -> Candidate:
    return Candidate.of(name, pool, [1.0, 1.0, 1.0], 0.02, "small")  # 1 + 3 = 4 units


def test_multi_node_commands_are_scored_too() -> None:
    # Two candidates of 0.02 and 4 units each. In a pool costing 1.0 with 10 units, deleting
    # both saves 0.04 of its cost for 0.8 of its disruption: 0.05, refused; each alone scores
    # (0.02/1)/(4/10) = 0.05 too (refused before it is tried): no command, where
    # WhenEmptyOrUnderutilized deletes both. In a pool costing 0.05 the pair scores
    # (0.04/0.05)/0.8 = 1.0: deleted together.
    pair = [_three_pods("x"), _three_pods("y")]
    refused = _decide(pair, {"p": PoolTotals(1.0, 10.0)})
    assert refused.kind == "none" and refused.refused == ["x", "y"] and not refused.failed
    plain = _decide(pair, {}, "WhenEmptyOrUnderutilized")
    assert (plain.kind, plain.nodes) == ("multi", ["x", "y"]) and plain.score is None
    taken = _decide(pair, {"p": PoolTotals(0.05, 10.0)})
    assert (taken.kind, taken.nodes) == ("multi", ["x", "y"])
    assert taken.score == pytest.approx(1.0)


def test_a_move_over_two_pools_must_pass_in_each() -> None:
    # x in pool p (cost 0.04, 10 units), y in pool q (cost 1.0, 10 units); the pair saves 0.04,
    # split by the pools' shares of the candidates' price (half each): p scores
    # (0.02/0.04)/(4/10) = 1.25, q (0.02/1)/(4/10) = 0.05: refused as a pair. x alone passes
    # in p ((0.02/0.04)/0.4 = 1.25) and goes; y alone would not.
    x, y = _three_pods("x", "p"), _three_pods("y", "q")
    totals = {"p": PoolTotals(0.04, 10.0), "q": PoolTotals(1.0, 10.0)}
    decision = _decide([x, y], totals)
    assert (decision.kind, decision.nodes) == ("single", ["x"])
    assert decision.score == pytest.approx(1.25)
    # with q as dear as p per unit, the pair passes in both pools: deleted together
    assert _decide([x, y], {"p": PoolTotals(0.04, 10.0), "q": PoolTotals(0.04, 10.0)}).kind == (
        "multi"
    )


def test_a_pool_without_totals_scores_nothing_but_is_not_filtered_out() -> None:
    # CanPassThreshold passes a candidate of a pool with no positive cost total (nothing to
    # normalise against); the move itself then scores 0 and is refused (EvaluateBalancedMove).
    decision = _decide([_three_pods("x")], {"p": PoolTotals(0.0, 4.0)})
    assert decision.kind == "none" and decision.refused == ["x"]


# upstream's Balanced tests as facts (tests/data/autoscaler/karpenter_balanced.yaml, read in
# kubernetes-sigs/karpenter 226646810; its header states the rules and the source of each case)
FACTS = yaml.safe_load((DATA / "karpenter_balanced.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", FACTS["score_move"], ids=lambda c: c["source"][:90])
def test_upstream_score_move_cases(case: dict[str, Any]) -> None:
    # ScoreMove's score and approval. A case given as ScoreResult fractions is scored as a move
    # over totals of 1; one of several pools takes the command's savings by its share of the
    # source cost (EvaluateBalancedMove). The approval at the case's k (2 unless given: the
    # policy's BalancedK; other k are ScoreMove's argument in upstream's tests only).
    if "savings_fraction" in case and "savings" not in case:
        score = move_score(case["savings_fraction"], case["disruption_fraction"], PoolTotals(1, 1))
    else:
        savings = case["savings"]
        if "command_savings" in case:
            share = case["pool_source_cost"] / case["command_source_cost"]
            assert case["command_savings"] * share == pytest.approx(savings)
        totals = PoolTotals(case["total_cost"], case["total_disruption"])
        score = move_score(savings, case["disruption"], totals)
    expected = math.inf if case["score"] == "inf" else case["score"]
    if case.get("approx"):
        assert score == pytest.approx(expected)
    else:
        assert score == expected
    k = case.get("k", BALANCED_K)
    assert (score >= 1 / k) == case["approved"]
    if k == BALANCED_K:
        assert approved(score) == case["approved"]


@pytest.mark.parametrize("case", FACTS["pool_totals"], ids=lambda c: c["source"][:90])
def test_upstream_pool_totals_cases(case: dict[str, Any]) -> None:
    # computeNodePoolTotals: no ClusterCost in these cases, so the candidates' prices (a node
    # of no known price counts 0) and every node's disruption (here all candidates)
    for pool, want in case["expect"].items():
        nodes = [n for n in case["nodes"] if n["pool"] == pool]
        candidates = [
            Candidate.of(n["name"], pool, n["eviction_costs"], n["price"], "")
            for n in nodes
            if n["candidate"]
        ]
        others = [
            1.0 + sum(max(0.0, c) for c in n["eviction_costs"]) for n in nodes if not n["candidate"]
        ]
        got = pool_totals(case["cluster_cost"] or 0.0, candidates, others)
        assert got.cost == pytest.approx(want["total_cost"])
        assert got.disruption == pytest.approx(want["total_disruption"])
        assert not math.isnan(got.cost)


@pytest.mark.parametrize("case", FACTS["eviction_cost"], ids=lambda c: c["source"][:60])
def test_upstream_eviction_cost_cases(case: dict[str, Any]) -> None:
    annotations = {} if case["deletion_cost"] is None else {DELETION_COST: case["deletion_cost"]}
    assert pod_eviction_cost(annotations, case["priority"]) == case["eviction_cost"]


def _catalogue() -> list[dict[str, Any]]:
    """The fake cloud provider's shapes as the pool's instance types: allocatable (capacity
    less kube-reserved), 5 pods each, cheapest first."""
    assorted = FACTS["catalogues"]["assorted"]
    reserved = assorted["kube_reserved"]
    return [
        {"name": s["name"], "cpu": f"{s['cpu'] - reserved['cpu']}m",
         "memory": str(s["memory"] - reserved["memory"]), "pods": str(assorted["pods"]),
         "price": s["price"]}
        for s in sorted(assorted["shapes"], key=lambda s: s["price"])
    ]  # fmt: skip


@pytest.mark.parametrize("case", FACTS["decisions"], ids=lambda c: c["source"][:90])
def test_upstream_balanced_decisions(case: dict[str, Any], tmp_path: Path) -> None:
    # One reconcile of upstream's disruption controller on a Balanced pool, as far as the test
    # states it: the command's kind, nodes, delete or replace, its savings (the candidates'
    # prices less the replacement's), the nodes left after it.
    shapes = _catalogue()
    price = {s["name"]: s["price"] for s in shapes}
    nodes = []
    for n in case["nodes"]:
        labels = {"node.kubernetes.io/instance-type": n["instance_type"],
                  "karpenter.sh/capacity-type": n["capacity_type"],
                  "topology.kubernetes.io/zone": "test-zone-1"}  # fmt: skip
        facts = {"cpu": n["cpu"], "memory": n["memory"] or -1, "labels": labels}
        nodes.append(node(n["name"], facts))
    pods = [
        pod(p["name"], {"cpu": p["cpu"], "memory": p["memory"], "owner": RS}, NOW, p["node"])
        for p in case["pods"]
    ]
    scenario = {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodePool": {
            "disruption": {
                "consolidationPolicy": "Balanced",
                "budgets": [{"nodes": case["nodepool"]["budget"]}],
            },
            "instanceTypes": shapes,
        },
        "nodes": nodes,
        "pods": pods,
    }
    decision = run(tmp_path, scenario)["decision"]
    want = case["expect"]
    chosen = decision["nodes"]
    if "kind" in want:
        assert decision["type"] == want["kind"]
    if "nodes" in want:
        assert chosen == want["nodes"]
    assert set(want.get("nodes_include", [])) <= set(chosen)
    assert not set(want.get("nodes_exclude", [])) & set(chosen)
    if "min_nodes" in want:
        assert len(chosen) >= want["min_nodes"]
    if want.get("commands") or want.get("min_commands"):
        assert decision["type"] != "none"
    replacement = decision["replacement"]
    if "decision" in want:
        assert (replacement is None) == (want["decision"] == "delete")
    if "excludes" in (want.get("replacement") or {}):
        assert replacement is not None
        assert replacement["instanceType"] != want["replacement"]["excludes"]
    if "remaining_nodeclaims_lt" in want:
        left = len(case["nodes"]) - len(chosen) + (replacement is not None)
        assert left < want["remaining_nodeclaims_lt"]
    if "approved_event" in want:  # a ConsolidationApproved event: the score passed 1/k
        assert decision["score"] >= 1 / want["approved_event"]["k"]
    if "savings" in want:
        kinds = {n["name"]: n["instance_type"] for n in case["nodes"]}
        saved = sum(price[kinds[n]] for n in chosen)
        saved -= 0.0 if replacement is None else replacement["price"]
        bound = want["savings"]
        if isinstance(bound, dict):
            assert bound["gt"] < saved < bound["lt"]
        else:
            assert saved == pytest.approx(bound, abs=0.01)

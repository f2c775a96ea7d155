"""Karpenter's consolidation decision through ``analyzer autoscale`` (``autoscaler: karpenter``).

The facts are Karpenter's rules (pkg/controllers/disruption, docs/autoscaling.md): emptiness
first, then multi-node (a prefix of ≥ 2 candidates by disruption cost, at most one cheaper
replacement, cheaper than any candidate of the same type), then single-node; do-not-disrupt
nodes and pods, and pods whose PDB allows no eviction, keep their node out; budgets round up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from autoscale_cases import by_name, node, pod, run
from click.testing import CliRunner

from analyzer.cli import main

NOW = "2026-11-01T12:00:00Z"
TYPE = "node.kubernetes.io/instance-type"
OFFERING = {"karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": "z1"}
SHAPES = [
    {"name": "small", "cpu": "2", "memory": "4Gi", "price": 0.05},
    {"name": "medium", "cpu": "4", "memory": "16Gi", "price": 0.2},
    {"name": "large", "cpu": "8", "memory": "32Gi", "price": 0.4},
]
RS = ["ReplicaSet", "rs", "apps/v1"]


def _node(name: str, shape: str, **extra: Any) -> dict[str, Any]:
    cpu = {"small": 2000, "medium": 4000, "large": 8000}[shape]
    # a Karpenter node carries its capacity type and zone (consolidation needs both for its price)
    labels = {TYPE: shape, **OFFERING, **extra.pop("labels", {})}
    return node(name, {"cpu": cpu, "memory": 16 * 2**30, "labels": labels, **extra})


def _scenario(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], **pool: Any
) -> dict[str, Any]:
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": [{"nodes": "100%"}]}
    disruption.update(pool)
    return {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodePool": {"disruption": disruption, "instanceTypes": SHAPES},
        "nodes": nodes,
        "pods": pods,
    }


def _pod(name: str, where: str, millicores: int, **extra: Any) -> dict[str, Any]:
    return pod(name, {"cpu": millicores, "memory": 2**20, "owner": RS, **extra}, NOW, where)


def test_empty_nodes_go_first_and_do_not_disrupt_keeps_a_node(tmp_path: Path) -> None:
    """Emptiness: the empty candidates are deleted; an annotated empty node is no candidate."""
    keep = {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}
    scenario = _scenario(
        [_node("busy", "large"), _node("idle", "small"), _node("pinned", "small", **keep)],
        [_pod("w", "busy", 1000)],
    )
    result = run(tmp_path, scenario)
    assert result["decision"]["type"] == "empty"
    assert result["decision"]["nodes"] == ["idle"] == result["removed"]
    nodes = by_name(result)
    assert nodes["pinned"]["candidate"] is False
    assert "do-not-disrupt" in nodes["pinned"]["notCandidateReason"]


def test_when_empty_policy_leaves_underutilized_nodes(tmp_path: Path) -> None:
    """consolidationPolicy WhenEmpty: no empty node, so no command even where pods would fit."""
    scenario = _scenario(
        [_node("a", "large"), _node("b", "large")],
        [_pod("w1", "a", 1000), _pod("w2", "b", 1000)],
        consolidationPolicy="WhenEmpty",
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "none" and decision["nodes"] == []
    assert "WhenEmpty" in decision["reason"]


def test_multi_node_consolidation_with_one_cheaper_replacement(tmp_path: Path) -> None:
    """Three medium nodes with 1 cpu each: two pods fit on the pinned large node's 2 free cpu,
    the third needs one new node; the cheapest shape that holds it (small, 0.05) is cheaper than
    any medium, so the three go for one small."""
    pinned = {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}
    scenario = _scenario(
        [
            _node("keep", "large", **pinned),
            _node("x", "medium"),
            _node("y", "medium"),
            _node("z", "medium"),
        ],
        [
            _pod("base", "keep", 6000),
            _pod("px", "x", 1000),
            _pod("py", "y", 1000),
            _pod("pz", "z", 1000),
        ],
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "multi"
    assert decision["nodes"] == ["x", "y", "z"]
    assert decision["replacement"] == {"instanceType": "small", "price": 0.05}


def test_no_replacement_of_the_candidates_own_type(tmp_path: Path) -> None:
    """filterOutSameInstanceType: two large nodes (7 + 1 cpu) would fit one large, but a large
    is not cheaper than a large candidate; single-node consolidation deletes the first node by
    disruption cost instead, its pod fitting exactly on the other."""
    scenario = _scenario(
        [_node("a", "large"), _node("b", "large")],
        [_pod("w1", "a", 7000), _pod("w2", "b", 1000)],
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "single"
    assert decision["nodes"] == ["a"] and decision["replacement"] is None


def test_disruption_cost_orders_candidates(tmp_path: Path) -> None:
    """EvictionCost: 1 + priority / 2^25 per pod; of nodes of one price, the one whose pods cost
    less to evict has the higher savings ratio and is consolidated first."""
    scenario = _scenario(
        [_node("a", "large"), _node("b", "large"), _node("c", "large")],
        [_pod("hi", "a", 500, priority=2**25), _pod("lo", "b", 500), _pod("big", "c", 7000)],
        budgets=[{"nodes": "1"}],
    )
    result = run(tmp_path, scenario)
    nodes = by_name(result)
    assert nodes["a"]["disruptionCost"] == 2.0
    assert nodes["b"]["disruptionCost"] == 1.0
    assert result["decision"]["type"] == "single"
    assert result["decision"]["nodes"] == ["b"]


def test_budget_of_zero_and_pdb_blocked_pods(tmp_path: Path) -> None:
    """A budget of 0 nodes allows nothing; a pod whose PDB allows no eviction keeps its node."""
    zero = _scenario(
        [_node("a", "large"), _node("idle", "small")],
        [_pod("w", "a", 100)],
        budgets=[{"nodes": "0"}],
    )
    decision = run(tmp_path, zero)["decision"]
    assert decision["type"] == "none" and "budget" in decision["reason"]
    blocked = _scenario(
        [_node("a", "large"), _node("b", "large")],
        [_pod("w1", "a", 100, labels={"app": "db"}), _pod("w2", "b", 100)],
    )
    blocked["objects"] = [
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}},
            "status": {"disruptionsAllowed": 0},
        }
    ]
    blocked["objects"].append(
        {"kind": "ReplicaSet", "metadata": {"name": "rs"}, "spec": {"replicas": 2}}
    )
    result = run(tmp_path, blocked)
    assert by_name(result)["a"]["candidate"] is False
    assert result["decision"]["nodes"] == ["b"]


def test_table_states_the_decision_and_escapes_names(tmp_path: Path) -> None:
    """--format table for Karpenter: a row per node and the decision line; a node name holding
    a terminal escape reaches the terminal escaped (core/text.py), never raw."""
    scenario = _scenario(
        [_node("busy", "large"), _node("idle\x1b[31m", "small")], [_pod("w", "busy", 1000)]
    )
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    result = CliRunner().invoke(main, ["autoscale", str(path), "--format", "table"])
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout
    assert "decision: empty: idle\\x1b[31m (1 empty node(s) deleted (emptiness))" in result.stdout
    assert result.stdout.splitlines()[0].split() == [
        "node",
        "util",
        "candidate",
        "cost",
        "removed",
        "why",
        "not",
    ]


def test_unknown_instance_type_goes_only_by_emptiness(tmp_path: Path) -> None:
    """ShouldDisrupt: without its instance type's price a node is no consolidation candidate,
    though an empty one of that type is still deleted by emptiness."""
    odd = {"labels": {TYPE: "custom"}}
    busy = _scenario(
        [_node("a", "large"), _node("b", "large", **odd)],
        [_pod("v", "a", 7000), _pod("w", "b", 100)],
    )
    result = run(tmp_path, busy)
    assert "instance type 'custom'" in by_name(result)["b"]["notCandidateReason"]
    assert result["decision"]["nodes"] == ["a"]  # a's pod fits on b; b itself cannot be chosen
    empty = _scenario([_node("a", "large"), _node("b", "large", **odd)], [_pod("w", "a", 100)])
    assert run(tmp_path, empty)["decision"] == {
        "type": "empty",
        "nodes": ["b"],
        "replacement": None,
        "reason": "1 empty node(s) deleted (emptiness)",
    }


def test_a_scheduled_zero_budget_blocks_only_within_its_window(tmp_path: Path) -> None:
    """``now`` is 12:00 UTC: a 0-node budget from 09:00 for 8h is active, one for 2h is not."""
    nodes = [_node("busy", "large"), _node("idle", "small")]
    pods = [_pod("w", "busy", 1000)]
    for hours, kind in ((8, "none"), (2, "empty")):
        budgets = [
            {"nodes": "100%"},
            {"nodes": "0", "schedule": "0 9 * * *", "duration": f"{hours}h"},
        ]
        result = run(tmp_path, _scenario(nodes, pods, budgets=budgets))
        assert result["decision"]["type"] == kind, hours


def _pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_savings_ratio_orders_candidates_and_caps_by_the_options_types(tmp_path: Path) -> None:
    """v1.14.0: price / (1 + Σ EvictionCost) highest first: host (0.4 / 2), big (0.4 / 3), tiny
    (0.05 / 2). Taking all three, their four 1-cpu pods fit nowhere: one medium (4 cpu, 0.2)
    holds them; filterOutSameInstanceType caps it by large (0.4), the one candidate type among
    the options (a small holds no 4 cpu), so the three go for a medium."""
    scenario = _scenario(
        [_node("tiny", "small"), _node("big", "large"), _node("host", "large")],
        [
            _pod("t", "tiny", 1000),
            _pod("b1", "big", 1000),
            _pod("b2", "big", 1000),
            _pod("h", "host", 1000),
        ],
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "multi"
    assert decision["nodes"] == ["host", "big", "tiny"]
    assert decision["replacement"] == {"instanceType": "medium", "price": 0.2}


def test_karpenter_disruption_cost_annotation_is_not_read(tmp_path: Path) -> None:
    """EvictionCost reads pod-deletion-cost and priority only."""
    scenario = _scenario(
        [_node("a", "large"), _node("b", "large")],
        [
            _pod("x", "a", 500, annotations={"karpenter.sh/disruption-cost": "1000000000"}),
            _pod("y", "b", 500, annotations={"controller.kubernetes.io/pod-deletion-cost": "0"}),
        ],
    )
    nodes = by_name(run(tmp_path, scenario))
    assert nodes["a"]["disruptionCost"] == 1.0 == nodes["b"]["disruptionCost"]


def test_a_node_whose_pods_cost_nothing_to_evict_is_empty(tmp_path: Path) -> None:
    """Candidate.IsEmpty (v1.14.0): no pod to move with an EvictionCost above 0; a pod of priority
    -2^25 costs 1 - 1 = 0, so its node goes by emptiness (under the Empty budget)."""
    scenario = _scenario(
        [_node("busy", "large"), _node("cheap", "small")],
        [_pod("w", "busy", 1000), _pod("batch", "cheap", 500, priority=-(2**25))],
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "empty" and decision["nodes"] == ["cheap"]


def test_empty_nodes_are_left_to_the_empty_budget(tmp_path: Path) -> None:
    """consolidation.ShouldDisrupt refuses empty nodes: with the Empty budget at 0 no method
    deletes the idle node, though the Underutilized budget is open."""
    scenario = _scenario(
        [_node("busy", "large"), _node("idle", "small")],
        [_pod("w", "busy", 7000)],
        budgets=[{"nodes": "0", "reasons": ["Empty"]}, {"nodes": "100%"}],
    )
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "none" and decision["nodes"] == []


def test_do_not_disrupt_duration_counts_from_the_pod_start(tmp_path: Path) -> None:
    """pod.IsDoNotDisruptActive (since v1.12.0): a duration blocks while the pod is younger than
    it (NOW is 12:00: started 11:30 with 1h blocks, started 10:00 does not); an annotation that is
    neither "true" nor a duration is ignored."""
    nodes = [_node("young", "large"), _node("old", "large"), _node("odd", "large")]
    pods = [
        _pod("y", "young", 500, annotations={"karpenter.sh/do-not-disrupt": "1h"}),
        _pod("o", "old", 500, annotations={"karpenter.sh/do-not-disrupt": "1h"}),
        _pod("d", "odd", 500, annotations={"karpenter.sh/do-not-disrupt": "soon"}),
    ]
    pods[0]["status"]["startTime"] = "2026-11-01T11:30:00Z"
    pods[1]["status"]["startTime"] = "2026-11-01T10:00:00Z"
    pods[2]["status"]["startTime"] = "2026-11-01T11:59:00Z"
    result = by_name(run(tmp_path, _scenario(nodes, pods)))
    assert result["young"]["candidate"] is False
    assert "do-not-disrupt" in result["young"]["notCandidateReason"]
    assert result["old"]["candidate"] is True and result["odd"]["candidate"] is True


def test_pdbs_of_daemonset_pods_and_of_two_budgets_block(tmp_path: Path) -> None:
    """pdb.Limits.isEvictable: a pod matched by two PDBs blocks (eviction refuses it) even if
    both allow; a DaemonSet pod's PDB counts too, unless the pod tolerates the
    karpenter.sh/disruption taint (then it is not evicted)."""
    ds = ["DaemonSet", "agent", "apps/v1"]
    nodes = [_node(n, "large") for n in ("two", "ds", "tolerant", "free")]
    tolerate = {"tolerations": [{"operator": "Exists"}]}
    pods = [
        _pod("w", "two", 500, labels={"app": "web", "tier": "front"}),
        _pod("d", "ds", 100, labels={"app": "agent"}, owner=ds),
        _pod("t", "tolerant", 100, labels={"app": "agent"}, owner=ds),
        _pod("f", "free", 500),
    ]
    pods[2]["spec"].update(tolerate)
    scenario = _scenario(nodes, pods)
    scenario["objects"] = [
        _pdb("web", "web", 5),
        {**_pdb("front", "web", 5), "spec": {"selector": {"matchLabels": {"tier": "front"}}}},
        _pdb("agent", "agent", 0),
    ]
    result = by_name(run(tmp_path, scenario))
    assert "more than one PodDisruptionBudget" in result["two"]["notCandidateReason"]
    assert "PodDisruptionBudget" in result["ds"]["notCandidateReason"]
    assert result["tolerant"]["candidate"] is True and result["free"]["candidate"] is True


def test_consolidation_needs_the_capacity_type_and_zone_labels(tmp_path: Path) -> None:
    """consolidation.ShouldDisrupt: without karpenter.sh/capacity-type or
    topology.kubernetes.io/zone a node is no consolidation candidate (its price is unknown);
    emptiness still takes such a node when it is empty."""
    bare = {TYPE: "large"}
    nodes = [
        node("nolabels", {"cpu": 8000, "memory": 16 * 2**30, "labels": bare}),
        node("idle", {"cpu": 2000, "memory": 16 * 2**30, "labels": {TYPE: "small"}}),
        _node("host", "large"),
    ]
    scenario = _scenario(nodes, [_pod("w", "nolabels", 500), _pod("h", "host", 500)])
    result = run(tmp_path, scenario)
    assert "karpenter.sh/capacity-type" in by_name(result)["nolabels"]["notCandidateReason"]
    assert result["decision"]["type"] == "empty" and result["decision"]["nodes"] == ["idle"]
    scenario["nodes"] = [nodes[0], nodes[2]]
    decision = run(tmp_path, scenario)["decision"]
    # only host may be consolidated: its pod fits on the unlabelled node
    assert decision["type"] == "single" and decision["nodes"] == ["host"]

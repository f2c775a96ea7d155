"""PodDisruptionBudgets in the replay under Karpenter (``KarpenterAutoscaler._pdb_blocked``).

Karpenter's disruption controller leaves out a node whose pods a budget refuses to evict
(kubernetes-sigs/karpenter ``pkg/utils/pdb/pdb.go`` ``Limits.CanEvictPods``): a pod selected by
more than one budget (it refuses any eviction, whatever they allow), or by one that allows no
disruption now; the node's reason is ``PodDisruptionBudget``.

The cluster: three 4-core nodes a, b, c, a 1.5-core ReplicaSet pod on each for two hours, so
that any one node's pod fits beside another's. Under Karpenter's defaults, with no budget, one
node goes (``test_replay_karpenter``: chosen at the 0:10 pass).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from autoscaled_row import autoscaled_row
from replay_fixtures import GI, N, P, build

WEB = '{"app": "web"}'


def _row(tmp_path: Path, budgets: list[dict[str, Any]], labelled: str = "abc") -> dict[str, Any]:
    """The Karpenter row of the what-if: the pods on ``labelled`` nodes carry app=web."""
    pods = [
        P(f"p{i}", n, cpu=1500, memory=GI, labels=WEB if n in labelled else "{}")
        for i, n in enumerate("abc")
    ]
    snap = build([N("a"), N("b"), N("c")], pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: they may move
    objects = [
        {"namespace": "default", "name": f"web-{i}",
         "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}
        for i, spec in enumerate(budgets)
    ]  # fmt: skip
    snap = dataclasses.replace(snap, objects={"PodDisruptionBudget": objects})
    return autoscaled_row(tmp_path, snap, "karpenter", "autoscaler: {}\n")


def test_a_budget_that_allows_no_eviction_keeps_every_node(tmp_path: Path) -> None:
    row = _row(tmp_path, [{"maxUnavailable": 0}])
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    # each node held by the budget from the first pass (0:10) to the end of the two hours
    held = row["unremovable_reasons_node_hours"]["PodDisruptionBudget"]
    assert held == pytest.approx(3 * (2 - 10 / 3600), abs=1e-6)


def test_a_budget_that_allows_one_eviction_lets_one_node_go(tmp_path: Path) -> None:
    row = _row(tmp_path, [{"maxUnavailable": 1}])
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1
    assert row["unremovable_reasons_node_hours"].get("PodDisruptionBudget", 0) == 0


def test_a_pod_under_two_budgets_is_refused_whatever_they_allow(tmp_path: Path) -> None:
    # both budgets allow 5 disruptions, yet every pod is selected by both
    row = _row(tmp_path, [{"maxUnavailable": 5}, {"maxUnavailable": 5}])
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    held = row["unremovable_reasons_node_hours"]["PodDisruptionBudget"]
    assert held == pytest.approx(3 * (2 - 10 / 3600), abs=1e-6)


def test_only_the_node_of_the_budgets_pod_is_held(tmp_path: Path) -> None:
    # a's pod alone carries app=web, under a budget allowing none: b or c may still go
    row = _row(tmp_path, [{"maxUnavailable": 0}], labelled="a")
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1
    held = row["unremovable_reasons_node_hours"]["PodDisruptionBudget"]
    assert held == pytest.approx(2 - 10 / 3600, abs=1e-6)


def test_an_empty_selector_covers_every_pod_of_its_namespace(tmp_path: Path) -> None:
    # policy/v1: selector {} selects every pod of the namespace (Karpenter reads it through
    # LabelSelectorAsSelector), though kube-scheduler's preemption skips an empty selector; no
    # pod here carries app=web
    row = _row(tmp_path, [{"selector": {}, "maxUnavailable": 0}], labelled="")
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    held = row["unremovable_reasons_node_hours"]["PodDisruptionBudget"]
    assert held == pytest.approx(3 * (2 - 10 / 3600), abs=1e-6)


def test_a_budget_without_a_selector_covers_no_pod(tmp_path: Path) -> None:
    # a nil selector selects nothing: the node goes as with no budget
    row = _row(tmp_path, [{"selector": None, "maxUnavailable": 0}])
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1

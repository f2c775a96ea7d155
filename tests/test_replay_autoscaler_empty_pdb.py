"""A PodDisruptionBudget with an empty selector in the replay under cluster-autoscaler.

policy/v1: ``selector: {}`` selects every pod of the budget's namespace, and cluster-autoscaler
reads it so (``core/scaledown/pdb/basic.go``: ``metav1.LabelSelectorAsSelector``, whose empty
selector matches everything); only kube-scheduler's preemption skips an empty selector
(``filterPodsWithPDBViolation``: ``selector.Empty()``, tested in ``test_replay_budgets``). A
budget without a selector selects nothing.

The cluster: three 4-core nodes a, b, c, a 1.5-core ReplicaSet pod on each for an hour, one
node group at minSize 0. Without a budget CA finds a node unneeded at its first pass (0:10) and
deletes it ten minutes later.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from autoscaled_row import autoscaled_row
from replay_fixtures import GI, N, P, build


def _row(tmp_path: Path, budget: dict[str, Any] | None, namespace: str = "default") -> Any:
    pods = [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")]
    snap = build([N("a"), N("b"), N("c")], pods, minutes=60)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: they may move
    if budget is not None:
        pdb = {"namespace": namespace, "name": "all", "spec": budget}
        snap = dataclasses.replace(snap, objects={"PodDisruptionBudget": [pdb]})
    config = "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n"
    return autoscaled_row(tmp_path, snap, "cluster-autoscaler", config)


def test_without_a_budget_one_node_goes(tmp_path: Path) -> None:
    row = _row(tmp_path, None)
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1


def test_an_empty_selector_that_allows_no_eviction_keeps_every_node(tmp_path: Path) -> None:
    row = _row(tmp_path, {"selector": {}, "maxUnavailable": 0})
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    assert row["unremovable_reasons_node_hours"]["BlockedByPod"] > 0


def test_an_empty_selector_in_another_namespace_covers_none_of_these_pods(tmp_path: Path) -> None:
    row = _row(tmp_path, {"selector": {}, "maxUnavailable": 0}, namespace="other")
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1


def test_a_budget_without_a_selector_covers_no_pod(tmp_path: Path) -> None:
    row = _row(tmp_path, {"maxUnavailable": 0})
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1

"""A pod waiting for its preemption in ``analyzer autoscale`` (cluster-autoscaler).

Upstream (``core/utils/utils.go`` ``FilterOutExpendableAndSplit``, then
``processors/pods/filter_out_expendable.go`` ``addPreemptingPodsToSnapshot``): an unschedulable
pod whose ``status.nominatedNodeName`` names a node of the cluster is added to CA's snapshot on
that node — "such pods don't require scale up but should be considered during scale down" — so
it counts in that node's utilisation and takes its room. An expendable one is dropped first; one
nominated to a node that is gone stays an ordinary pending pod (no part of the scale-down).

The cluster, written here (1000m nodes, threshold 0.5): n1 holds ``a`` (ReplicaSet, 300m), n2
holds ``b`` (ReplicaSet, 300m); ``p`` (priority 1000, 600m, no node) is nominated to n1. Without
``p`` both nodes are at 0.3 and either could be drained onto the other. With it n1 is at 0.9
(not underutilised) and has 100m left, so n2's ``b`` has no place: nothing is removable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscale_cases import by_name, node, pod, run

NOW = "2020-12-18T17:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]
OBJECTS = [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 5}}]  # fmt: skip


def _scenario(nominated: str | None, priority: int = 1000) -> dict[str, Any]:
    shape = {"cpu": 1000, "memory": 2000000}
    waiting = pod("p", {"cpu": 600, "memory": 1000, "owner": RS, "priority": priority}, NOW, "")
    del waiting["spec"]["nodeName"]
    if nominated is not None:
        waiting["status"] = {**waiting.get("status", {}), "nominatedNodeName": nominated}
    bound = [pod(name, {"cpu": 300, "memory": 1000, "owner": RS}, NOW, on)
             for name, on in (("a", "n1"), ("b", "n2"))]  # fmt: skip
    return {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodes": [node("n1", shape), node("n2", shape)],
        "pods": [*bound, waiting],
        "objects": OBJECTS,
    }


def test_a_pod_waiting_for_its_preemption_counts_on_its_nominated_node(tmp_path: Path) -> None:
    result = run(tmp_path, _scenario("n1"))
    nodes = by_name(result)
    assert nodes["n1"]["utilization"] == 0.9
    assert nodes["n1"]["unremovableReason"] == "NotUnderutilized"
    assert nodes["n2"]["candidate"] and not nodes["n2"]["removable"]
    assert nodes["n2"]["unremovableReason"] == "NoPlaceToMovePods"
    assert result["removed"] == []
    assert any("default/p" in note and "nominated to n1" in note for note in result["notes"])


def test_without_a_nomination_the_pending_pod_is_no_part_of_the_scale_down(
    tmp_path: Path,
) -> None:
    nodes = by_name(run(tmp_path, _scenario(None)))
    assert nodes["n1"]["utilization"] == 0.3 and nodes["n2"]["utilization"] == 0.3
    assert nodes["n1"]["removable"]


def test_a_nomination_to_a_node_that_is_gone_or_an_expendable_pod_counts_nowhere(
    tmp_path: Path,
) -> None:
    for scenario in (_scenario("n9"), _scenario("n1", priority=-20)):
        nodes = by_name(run(tmp_path, scenario))
        assert nodes["n1"]["utilization"] == 0.3
        assert nodes["n1"]["removable"]

"""``analyzer autoscale`` reads a pod's priority as the cluster holds it: the Priority admission
plugin sets ``spec.priority`` from the pod's ``priorityClassName`` (a PriorityClass among the
scenario's objects, or ``system-cluster-critical`` 2000000000 / ``system-node-critical``
2000001000), else from the ``globalDefault`` class, else 0 (kubernetes
``plugin/pkg/admission/priority``). A pod whose class is not given keeps no priority, with a
note. What reads it: cluster-autoscaler's expendable pods (priority below
``expendable-pods-priority-cutoff``) and Karpenter's ``EvictionCost`` (priority / 2^25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import beside_spare, by_name, run
from test_karpenter_upstream_more import NOW, _node, _pod

RS = ["ReplicaSet", "rs", "apps/v1"]


def _class(name: str, value: int, default: bool = False) -> dict[str, Any]:
    return {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": name}, "value": value, "globalDefault": default}  # fmt: skip


def _ca_node(tmp_path: Path, spec: dict[str, Any], objects: list[Any]) -> Any:
    """A 500m pod without a controller on "node" (1000m): blocking (NotReplicated) unless
    expendable, then out of the snapshot and the node empty."""
    scenario = beside_spare("1.36", NOW, {"p": {"cpu": 500, "memory": 1}}, objects)
    scenario["pods"][0]["spec"].update(spec)
    result = run(tmp_path, scenario)
    return result, by_name(result)["node"]


@pytest.mark.parametrize(
    ("spec", "objects", "expendable"),
    [
        ({"priorityClassName": "batch-low"}, [_class("batch-low", -100)], True),
        ({"priorityClassName": "batch-low"}, [_class("batch-low", -10)], False),  # not below
        ({}, [_class("everyone-low", -50, default=True)], True),  # the global default
        ({"priorityClassName": "system-node-critical"}, [], False),
        ({"priorityClassName": "batch-low", "priority": 5}, [_class("batch-low", -100)], False),
    ],
)
def test_cluster_autoscaler_reads_the_class_priority(
    tmp_path: Path, spec: dict[str, Any], objects: list[Any], expendable: bool
) -> None:
    _, got = _ca_node(tmp_path, spec, objects)
    if expendable:
        assert got["empty"] and got["removable"] and got["utilization"] == 0.0
    else:
        assert got["blockingPod"] == {"pod": "default/p", "reason": "NotReplicated"}


def test_an_unknown_class_is_noted(tmp_path: Path) -> None:
    result, got = _ca_node(tmp_path, {"priorityClassName": "nowhere"}, [_class("other", -100)])
    assert got["blockingPod"] == {"pod": "default/p", "reason": "NotReplicated"}
    assert any("priorityClassName nowhere" in note for note in result["notes"])


def test_karpenter_counts_a_system_class_in_the_eviction_cost(tmp_path: Path) -> None:
    """``EvictionCost`` = 1 + priority / 2^25, clamped to 10: a system-cluster-critical pod
    (2000000000 / 2^25 ≈ 59.6) costs 10; a pod without a class 1."""
    scenario = {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodePool": {"instanceTypes": [{"name": "1-cpu-1-mem", "cpu": "1", "memory": "1Gi",
                                        "pods": "5", "price": 0.2}]},
        "nodes": [_node("n1", "1-cpu-1-mem"), _node("n2", "1-cpu-1-mem")],
        "pods": [_pod("critical", "n1", spec={"priorityClassName": "system-cluster-critical"}),
                 _pod("plain", "n2")],
    }  # fmt: skip
    nodes = by_name(run(tmp_path, scenario))
    assert nodes["n1"]["disruptionCost"] == 10.0
    assert nodes["n2"]["disruptionCost"] == 1.0

"""Expendable pods in ``analyzer autoscale`` (cluster-autoscaler): a pod whose spec.priority is
below ``--expendable-pods-priority-cutoff`` (default -10; ``core/utils/expendable.go``
``IsExpendablePod``: priority set and strictly below) is filtered out before CA's snapshot is
built (``static_autoscaler.go``: ``FilterOutExpendablePods`` then ``SetClusterState``). So it
counts in no node's utilisation, is neither moved nor blocking when its node is drained, and
its room is free for the pods that are moved.

The cluster, written here (1000m nodes, threshold 0.5):

- n1: ``a`` (ReplicaSet, 400m) and ``x`` (no controller, 500m, priority -20);
- n2: ``b`` (ReplicaSet, 550m) and ``y`` (ReplicaSet, 400m, priority -11);
- n3: ``e`` (ReplicaSet, 100m, priority -20) only;
- n4: ``z`` (no controller, 950m, priority -10: at the cutoff, so not expendable).

With the default cutoff: n1's utilisation is 0.4 (``x`` out), it is removable although ``x`` is
not replicated, and ``a`` goes to n2, whose room is 450m with ``y`` out (50m with it); n2 is
at 0.55; n3 is empty; n4 is at 0.95. CA deletes the empty n3, then drains n1.
With ``expendable-pods-priority-cutoff: -30`` no pod is expendable: n1 (0.9), n2 (0.95) and
n4 are over the threshold, and n3 (0.1) is drained: its ``e`` (100m) fits only n1's 100m.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscale_cases import by_name, node, pod, run
from click.testing import CliRunner

from analyzer.cli import main

NOW = "2020-12-18T17:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]
NODES = {name: {"cpu": 1000, "memory": 2000000} for name in ("n1", "n2", "n3", "n4")}
PODS: dict[str, dict[str, Any]] = {
    "a": {"cpu": 400, "memory": 1000, "owner": RS, "priority": 0, "node": "n1"},
    "x": {"cpu": 500, "memory": 1000, "priority": -20, "node": "n1"},
    "b": {"cpu": 550, "memory": 1000, "owner": RS, "priority": 0, "node": "n2"},
    "y": {"cpu": 400, "memory": 1000, "owner": RS, "priority": -11, "node": "n2"},
    "e": {"cpu": 100, "memory": 1000, "owner": RS, "priority": -20, "node": "n3"},
    "z": {"cpu": 950, "memory": 1000, "priority": -10, "node": "n4"},
}
OBJECTS = [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 5}}]  # fmt: skip


def _scenario(options: dict[str, Any] | None = None) -> dict[str, Any]:
    scenario: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodes": [node(name, facts) for name, facts in NODES.items()],
        "pods": [pod(name, facts, NOW, facts["node"]) for name, facts in PODS.items()],
        "objects": OBJECTS,
    }
    if options is not None:
        scenario["options"] = options
    return scenario


def test_expendable_pods_are_out_of_cas_snapshot(tmp_path: Path) -> None:
    result = run(tmp_path, _scenario())
    nodes = by_name(result)
    assert nodes["n1"]["utilization"] == pytest.approx(0.4)
    assert nodes["n1"]["removable"] and nodes["n1"]["blockingPod"] is None
    assert nodes["n1"]["destinations"] == {"default/a": "n2"}  # 450m free on n2 with y out
    assert nodes["n2"]["utilization"] == pytest.approx(0.55)
    assert nodes["n2"]["unremovableReason"] == "NotUnderutilized"
    assert nodes["n3"]["empty"] and nodes["n3"]["removable"]
    assert nodes["n4"]["utilization"] == pytest.approx(0.95)  # priority -10 is not below -10
    assert result["removed"] == ["n3", "n1"]  # the empty one first, then one drain
    said = " ".join(result["notes"])
    for key in ("default/x", "default/y", "default/e"):
        assert key in said
    assert "default/z" not in said


def test_the_cutoff_is_read(tmp_path: Path) -> None:
    """At a cutoff of -30 every pod counts: n1 and n2 are over the threshold; n3 (0.1) is a
    candidate whose ``e`` (100m) fits only n1 (100m free), so it is removable by moving e there."""
    result = run(tmp_path, _scenario({"expendable-pods-priority-cutoff": -30}))
    nodes = by_name(result)
    assert nodes["n1"]["utilization"] == pytest.approx(0.9)
    assert nodes["n1"]["unremovableReason"] == "NotUnderutilized"
    assert nodes["n2"]["utilization"] == pytest.approx(0.95)
    assert not nodes["n3"]["empty"] and nodes["n3"]["destinations"] == {"default/e": "n1"}
    assert result["removed"] == ["n3"]
    assert not any("expendable" in note for note in result["notes"])


@pytest.mark.parametrize("value", ["-10", 1.5, True])
def test_a_cutoff_that_is_not_a_whole_number_is_refused(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_scenario({"expendable-pods-priority-cutoff": value})))
    out = CliRunner().invoke(main, ["autoscale", str(path)])
    assert out.exit_code != 0
    assert "expendable-pods-priority-cutoff" in out.output and "whole number" in out.output

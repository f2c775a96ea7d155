"""The replica-count drain rule and a StatefulSet of another API group (cluster-autoscaler
1.33+, upstream commit cc3a9f5d10 "Allow draining when StatefulSet kind has custom API Group";
simulator/drainability/rules/replicacount/rule.go): CA has a lister for ``apps`` StatefulSets
only, so from 1.33 a pod owned by ``StatefulSet`` of ``example.com/v1`` is not looked up
(``Undefined``) and goes on to the replicated rule, which takes the kind ``StatefulSet`` as
replicated: the pod is moved. Before it (up to 1.32.1, 1.31.2, 1.30.4: the commit was
backported to 1.32.2, 1.31.3 and 1.30.5; every 1.29 and older) the rule looked it up among the
StatefulSets and, not finding it, blocked the drain (``ControllerNotFound``). An ``apps/v1`` StatefulSet missing
from the listers blocks at every version.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from autoscale_cases import beside_spare, by_name, run

NOW = "2026-06-10T12:00:00Z"
# the listers hold one ReplicaSet and no StatefulSet
OBJECTS = [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 5}}]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "api", "blocking"),
    [
        ("1.33", "example.com/v1", None),
        ("1.36", "example.com/v1", None),
        ("1.32.0", "example.com/v1", "ControllerNotFound"),
        ("1.32.1", "example.com/v1", "ControllerNotFound"),
        ("1.32.2", "example.com/v1", None),  # backported: 1.30.5, 1.31.3, 1.32.2
        ("1.32", "example.com/v1", None),  # 1.32's newest release known (1.32.7)
        ("1.31.2", "example.com/v1", "ControllerNotFound"),
        ("1.31.3", "example.com/v1", None),
        ("1.30.4", "example.com/v1", "ControllerNotFound"),
        ("1.30.5", "example.com/v1", None),
        ("1.29", "example.com/v1", "ControllerNotFound"),
        ("1.36", "apps/v1", "ControllerNotFound"),
        ("1.32", "apps/v1", "ControllerNotFound"),
    ],
)
def test_a_statefulset_of_another_group_is_not_looked_up(
    tmp_path: Path, version: str, api: str, blocking: str | None
) -> None:
    facts = {"cpu": 100, "memory": 1, "owner": ["StatefulSet", "db", api]}
    got = by_name(run(tmp_path, beside_spare(version, NOW, {"db-0": facts}, OBJECTS)))["node"]
    if blocking is None:
        assert got["removable"] and got["destinations"] == {"default/db-0": "spare"}
    else:
        assert got["blockingPod"] == {"pod": "default/db-0", "reason": blocking}

"""The drain rules by cluster-autoscaler version in ``analyzer autoscale`` (the scenario's
``kubernetesVersion``; CA's minor follows Kubernetes'), on cases written here from upstream's
code at the tags:

- up to 1.28, one function checks each pod (``utils/drain/drain.go``
  ``GetPodsForDeletionOnNodeDrain``): local storage before ``safe-to-evict: "false"``, and the
  PodDisruptionBudgets only after every pod passed (``simulator/drain.go`` ``checkPdbs``); from
  1.29 the drainability rules (``simulator/drainability/rules``) run pod by pod, the
  not-safe-to-evict rule before local storage and the PDB rule last in each pod's chain;
- 1.29's replica-count rule looks up a DaemonSet owner of any API group; from 1.30 only an
  ``apps`` one (``refGroup.Group != "apps"``: undefined).

Node "node" (1000m) holds the pods, "spare" (scale-down-disabled, 4000m) takes moved ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import beside_spare, by_name, run

NOW = "2026-06-10T12:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]
REPLICASET = {"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
              "spec": {"replicas": 5}}  # fmt: skip
PDB = {"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 1},
       "status": {"disruptionsAllowed": 0}}  # fmt: skip


def _blocking(tmp_path: Path, version: str, pods: dict[str, dict[str, Any]], objects: Any) -> Any:
    return by_name(run(tmp_path, beside_spare(version, NOW, pods, objects)))["node"]["blockingPod"]


@pytest.mark.parametrize(
    ("version", "reason"),
    [("1.28", "LocalStorageRequested"), ("1.29", "NotSafeToEvictAnnotation"),
     ("1.36", "NotSafeToEvictAnnotation")],
)  # fmt: skip
def test_local_storage_came_before_not_safe_to_evict_up_to_128(
    tmp_path: Path, version: str, reason: str
) -> None:
    facts = {"cpu": 100, "memory": 1, "owner": RS, "volumes": [{"name": "s", "emptyDir": {}}],
             "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}}  # fmt: skip
    got = _blocking(tmp_path, version, {"p": facts}, [REPLICASET])
    assert got == {"pod": "default/p", "reason": reason}


@pytest.mark.parametrize(
    ("version", "blocking"),
    [("1.28", {"pod": "default/naked", "reason": "NotReplicated"}),
     ("1.29", {"pod": "default/web", "reason": "NotEnoughPdb"})],
)  # fmt: skip
def test_budgets_were_checked_after_every_pod_up_to_128(
    tmp_path: Path, version: str, blocking: dict[str, str]
) -> None:
    """``web`` (first, a ReplicaSet's) is covered by a PDB allowing no disruption; ``naked``
    (second) has no controller. Up to 1.28 the pods pass one by one first: ``naked`` blocks;
    from 1.29 ``web``'s chain ends in the PDB rule."""
    pods = {
        "web": {"cpu": 100, "memory": 1, "owner": RS, "labels": {"app": "web"}},
        "naked": {"cpu": 100, "memory": 1},
    }
    assert _blocking(tmp_path, version, pods, [REPLICASET, PDB]) == blocking


@pytest.mark.parametrize(
    ("version", "blocking"),
    [("1.29", {"pod": "default/agent", "reason": "ControllerNotFound"}), ("1.30", None)],
)
def test_a_daemonset_of_another_group_was_looked_up_in_129(
    tmp_path: Path, version: str, blocking: dict[str, str] | None
) -> None:
    """A pod owned by a DaemonSet of example.com/v1 that the listers do not hold: 1.29 looks it
    up among the DaemonSets and blocks; from 1.30 it is not looked up, and the pod, a
    DaemonSet pod, is evicted with its node."""
    facts = {"cpu": 100, "memory": 1, "owner": ["DaemonSet", "agent", "example.com/v1"]}
    assert _blocking(tmp_path, version, {"agent": facts}, [REPLICASET]) == blocking

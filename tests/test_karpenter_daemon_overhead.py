"""``analyzer autoscale`` (Karpenter): a replacement must hold its DaemonSet pods too, and
only pods that tolerate the NodePool template's taints go on it.

Upstream (kubernetes-sigs/karpenter at 2266468, ``pkg/controllers/provisioning``):

- ``scheduling/scheduler.go`` ``buildDaemonOverheadGroups`` / ``isDaemonPodCompatible``: per
  instance type, the DaemonSet pods that tolerate the template's taints and whose node
  selection the template's requirements and the instance type allow; ``nodeclaim.go``
  ``filterInstanceTypesByRequirements``: an instance type is an option only if it holds the
  pods' requests plus that overhead;
- ``provisioner.go`` ``getDaemonSetPods``: one pod per DaemonSet, the newest it controls
  (``state/cluster.go`` ``UpdateDaemonSet``), else one made from its template, whose required
  node affinity replaces the pod's;
- ``nodeclaim.go`` ``CanAdd``: a pod goes on a NodeClaim only if it tolerates its taints;
- ``utils/pod/scheduling.go`` ``IsProvisionable``: a pending pod is scheduled only if the
  scheduler failed it (``PodScheduled`` reason ``Unschedulable``), not nominated by a
  preemption and not owned by a DaemonSet or a Node.

One node ``big`` (instance type ``large``, 8 cores, price 1.0) runs a 3500m pod and, in most
cases, a DaemonSet pod of 1000m. The pool may launch ``small`` (4 cores, 0.4), ``medium``
(6 cores, 0.7) and ``large``. The pod fits ``small`` alone (3500 ≤ 4000) but not beside the
DaemonSet pod (4500 > 4000), so with the overhead the replacement is ``medium``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import run
from test_karpenter_upstream_more import NOW, _node, _pod

SHAPES = [
    {"name": "small", "cpu": "4", "memory": "16Gi", "pods": "10", "price": 0.4},
    {"name": "medium", "cpu": "6", "memory": "16Gi", "pods": "10", "price": 0.7},
    {"name": "large", "cpu": "8", "memory": "16Gi", "pods": "10", "price": 1.0},
]
DS_OWNER = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": True}]


def _ds_pod(node: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    pod = _pod("agent-x", node, cpu=cpu, owner=None, meta={"ownerReferences": DS_OWNER})
    pod["spec"].update(spec)
    return pod


def _daemonset(cpu: str = "1", **template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": cpu}}}],
                    **template_spec,
                },
            }
        },
    }


def _scenario(
    pods: list[dict[str, Any]],
    objects: list[Any] | None = None,
    template: dict[str, Any] | None = None,
) -> dict[str, Any]:
    node = _node("big", "large", cpu="8", pods="10")
    node["status"]["allocatable"]["memory"] = "16Gi"
    scenario: dict[str, Any] = {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodes": [node],
        "pods": pods,
        "nodePool": {"instanceTypes": SHAPES, "template": template or {}},
    }
    if objects is not None:
        scenario["objects"] = objects
    return scenario


def _replacement(tmp_path: Path, scenario: dict[str, Any]) -> str | None:
    got = run(tmp_path, scenario)
    decision = got["decision"]
    if decision["type"] == "none":
        return None
    assert decision["type"] == "single" and decision["nodes"] == ["big"], decision
    replacement = decision["replacement"]
    return None if replacement is None else str(replacement["instanceType"])


def _work(**spec: Any) -> dict[str, Any]:
    pod = _pod("work", "big", cpu="3500m")
    pod["spec"].update(spec)
    return pod


def test_without_daemonsets_the_smallest_shape_that_holds_the_pod(tmp_path: Path) -> None:
    assert _replacement(tmp_path, _scenario([_work()])) == "small"


def test_a_daemonset_pod_makes_the_replacement_larger(tmp_path: Path) -> None:
    """3500m + 1000m = 4500m: ``small`` (4 cores) no longer holds them, ``medium`` does."""
    pods = [_work(), _ds_pod("big")]
    assert _replacement(tmp_path, _scenario(pods, [_daemonset()])) == "medium"
    # the DaemonSet named only by its pod's controller reference counts as well
    assert _replacement(tmp_path, _scenario(pods)) == "medium"


def test_a_daemonset_with_no_pod_counts_by_its_template(tmp_path: Path) -> None:
    """No pod of it runs (``PodForDaemonSet``): its template's 1000m request counts."""
    assert _replacement(tmp_path, _scenario([_work()], [_daemonset()])) == "medium"


def test_the_newest_pod_of_a_daemonset_gives_its_requests(tmp_path: Path) -> None:
    """Two pods of the DaemonSet, 1000m created first and 100m created later: the newest one
    (``UpdateDaemonSet``) is the DaemonSet's pod, so 3600m fits ``small``."""
    old = _ds_pod("big", "1")
    old["metadata"]["creationTimestamp"] = "2026-11-01T10:00:00Z"
    new = _ds_pod("big", "100m")
    new["metadata"].update(name="agent-y", creationTimestamp="2026-11-01T11:00:00Z")
    assert _replacement(tmp_path, _scenario([_work(), old, new], [_daemonset()])) == "small"


def test_a_daemonset_the_template_rules_out_adds_nothing(tmp_path: Path) -> None:
    """The DaemonSet runs only on arm64 nodes (none here: no pod of it runs on ``big``); the
    pool launches amd64 ones only."""
    arm = {"nodeSelector": {"kubernetes.io/arch": "arm64"}}
    template = {
        "spec": {
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
        }
    }
    assert _replacement(tmp_path, _scenario([_work()], [_daemonset(**arm)], template)) == "small"
    amd = {"nodeSelector": {"kubernetes.io/arch": "amd64"}}
    assert _replacement(tmp_path, _scenario([_work()], [_daemonset(**amd)], template)) == ("medium")


def test_a_daemonset_for_one_instance_type_counts_on_that_type_alone(tmp_path: Path) -> None:
    """The template's required node affinity (instance type ``large``) replaces the pod's
    ``matchFields`` pin: ``small`` and ``medium`` carry no DaemonSet pod, so ``small``."""
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "node.kubernetes.io/instance-type",
                                    "operator": "In",
                                    "values": ["large"],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    }
    pinned = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["big"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
    pods = [_work(), _ds_pod("big", **pinned)]
    assert _replacement(tmp_path, _scenario(pods, [_daemonset(**affinity)])) == "small"
    # the pin alone (no affinity in the template) asks for nothing: every type holds it
    assert _replacement(tmp_path, _scenario(pods, [_daemonset()])) == "medium"


TAINTED = {"spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]}}
TOLERATES = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch"}]}


def test_a_daemonset_that_does_not_tolerate_the_template_taints_adds_nothing(
    tmp_path: Path,
) -> None:
    pods = [_work(**TOLERATES), _ds_pod("big")]
    assert _replacement(tmp_path, _scenario(pods, [_daemonset()], TAINTED)) == "small"
    tolerant = [_work(**TOLERATES), _ds_pod("big", **TOLERATES)]
    assert _replacement(tmp_path, _scenario(tolerant, [_daemonset(**TOLERATES)], TAINTED)) == (
        "medium"
    )


def test_a_pod_that_does_not_tolerate_the_template_taints_gets_no_replacement(
    tmp_path: Path,
) -> None:
    """Its only way off ``big`` is a new node, which it may not go on: no consolidation."""
    got = run(tmp_path, _scenario([_work()], template=TAINTED))
    assert got["decision"]["type"] == "none"
    assert got["removed"] == []


def _pending(name: str, **extra: Any) -> dict[str, Any]:
    pod = _pod(name, None, cpu="2", **extra)
    return pod


def test_only_provisionable_pending_pods_are_scheduled(tmp_path: Path) -> None:
    """A 2000m pending pod the scheduler failed makes ``medium`` too small for the pods that
    need a new node (3500 + 2000 + 1000 > 6000), so only ``large`` holds them, at the
    candidate's own price: no consolidation. A pending pod the
    scheduler has not failed (``SchedulingGated``), one nominated by a preemption, and a
    DaemonSet's are not scheduled (``IsProvisionable``), and the replacement stays ``medium``."""
    pods = [_work(), _ds_pod("big")]
    failed = _pending("failed")
    failed["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    assert _replacement(tmp_path, _scenario([*pods, failed], [_daemonset()])) is None
    gated = _pending("gated")
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    nominated = _pending("nominated")
    nominated["status"]["nominatedNodeName"] = "big"
    daemon = _pending("agent-z", owner=None, meta={"ownerReferences": DS_OWNER})
    for pod in (gated, nominated, daemon):
        got = run(tmp_path, _scenario([*pods, pod], [_daemonset()]))
        assert got["decision"]["replacement"]["instanceType"] == "medium", got["decision"]
        name = pod["metadata"]["name"]
        assert any(f"default/{name} is not bound and" in n for n in got["notes"]), got["notes"]


def test_the_karpenter_example_is_worked_as_its_comments_say(tmp_path: Path) -> None:
    """examples/autoscale-karpenter.yaml (README): a is replaced by an m5.xlarge, b stays. Were
    the log agents static pods (owned by their Node, no DaemonSet: no daemon overhead on a new
    node, and still not moved), api-2 alone would need a new node and an m5.large would do
    (1200m ≤ 1930m)."""
    import yaml

    example = Path(__file__).resolve().parents[1] / "examples" / "autoscale-karpenter.yaml"
    scenario = yaml.safe_load(example.read_text())
    got = run(tmp_path, scenario)
    decision = got["decision"]
    assert (decision["type"], decision["nodes"]) == ("single", ["a"]), decision
    assert decision["replacement"]["instanceType"] == "m5.xlarge"
    util = {n["name"]: n["utilization"] for n in got["nodes"]}
    assert util["a"] == pytest.approx(3200 / 7910) and util["b"] == pytest.approx(6300 / 7910)
    for pod in scenario["pods"]:
        if pod["metadata"]["name"].startswith("log-agent"):
            pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node",
                                                   "name": pod["spec"]["nodeName"],
                                                   "controller": True}]  # fmt: skip
    scenario["objects"] = []
    bare = run(tmp_path, scenario)["decision"]
    assert bare["replacement"]["instanceType"] == "m5.large", bare

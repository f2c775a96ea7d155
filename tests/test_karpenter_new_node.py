"""Whether a node Karpenter would launch could take a pod by its node selection
(``analyzer.autoscaler.new_node.launchable``), and what that changes in ``analyzer autoscale``'s
consolidation.

The rules, from kubernetes-sigs/karpenter: a new NodeClaim carries the NodePool template's
labels and requirements and the well-known labels (``pkg/apis/v1/labels.go``
``WellKnownLabels``: nodepool, zone, region, instance type, arch, OS, capacity type, Windows
build), its instance type one the pool offers; a pod's ``nodeSelector`` and required node
affinity must be compatible with them (``pkg/scheduling/requirements.go`` ``Compatible``), or
the scheduler gives the pod only an error (``scheduler.go`` ``add``). A pending pod with such an
error is ignored by the consolidation (``Results.AllNonPendingPodsScheduled``); a candidate's
pod with one makes the command fail (it would go pending).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import run
from test_karpenter_upstream_more import APP, NOW, _node, _pod

from analyzer.autoscaler.new_node import launchable
from analyzer.scheduling.constraint_types import PodConstraints, Requirement

TYPES = ["m5.large", "c5.large"]


def _pod_constraints(
    selector: dict[str, str] | None = None, terms: list[list[Requirement]] | None = None
) -> PodConstraints:
    return PodConstraints(
        node_selector=tuple((selector or {}).items()),
        required_terms=None if terms is None else tuple(tuple(t) for t in terms),
    )


@pytest.mark.parametrize(
    ("selector", "terms", "labels", "pool", "want"),
    [
        # a well-known label: on every new node, any value the offerings have
        ({"kubernetes.io/os": "linux"}, None, {}, [], True),
        ({"topology.kubernetes.io/zone": "eu-west-1a"}, None, {}, [], True),
        # a cloud provider's own label (a karpenter. domain): read as well-known
        ({"karpenter.k8s.aws/instance-family": "m5"}, None, {}, [], True),
        # a label neither the template nor the well-known set gives: absent
        ({"non-existent": "node-label"}, None, {}, [], False),
        # the template's labels fix it
        ({"team": "a"}, None, {"team": "a"}, [], True),
        ({"team": "a"}, None, {"team": "b"}, [], False),
        # the template's requirements: one of their values
        ({"team": "y"}, None, {}, [Requirement("team", "In", ("x", "y"))], True),
        ({"team": "z"}, None, {}, [Requirement("team", "In", ("x", "y"))], False),
        # the instance type: one of the pool's
        (None, [[Requirement("node.kubernetes.io/instance-type", "In", ("c5.large",))]], {}, [],
         True),
        (None, [[Requirement("node.kubernetes.io/instance-type", "In", ("p3.2xlarge",))]], {},
         [], False),
        # a well-known label is always there: DoesNotExist cannot hold
        (None, [[Requirement("topology.kubernetes.io/zone", "DoesNotExist")]], {}, [], False),
        # an absent label: NotIn and DoesNotExist hold, Exists does not
        (None, [[Requirement("gpu", "DoesNotExist"), Requirement("gpu", "NotIn", ("a",))]], {},
         [], True),
        (None, [[Requirement("gpu", "Exists")]], {}, [], False),
        # terms are ORed: one that a new node meets is enough
        (None, [[Requirement("gpu", "Exists")], [Requirement("kubernetes.io/arch", "In",
                                                             ("arm64",))]], {}, [], True),
        # In and NotIn on one well-known key leaving no value
        (None, [[Requirement("kubernetes.io/arch", "In", ("amd64",)),
                 Requirement("kubernetes.io/arch", "NotIn", ("amd64",))]], {}, [], False),
    ],
)  # fmt: skip
def test_launchable(
    selector: dict[str, str] | None,
    terms: list[list[Requirement]] | None,
    labels: dict[str, str],
    pool: list[Requirement],
    want: bool,
) -> None:
    assert launchable(_pod_constraints(selector, terms), labels, TYPES, pool) is want


def _decide(tmp_path: Path, template: dict[str, Any] | None) -> dict[str, Any]:
    shapes = [{"name": "small", "cpu": "1", "memory": "1Gi", "pods": "5", "price": 0.2},
              {"name": "big", "cpu": "8", "memory": "8Gi", "pods": "5", "price": 1.0}]  # fmt: skip
    pool: dict[str, Any] = {
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                       "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]},
        "instanceTypes": shapes,
    }  # fmt: skip
    if template is not None:
        pool["template"] = template
    scenario = {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodePool": pool,
        "nodes": [_node("node0", "big", labels={"foo": "1"})],
        "pods": [_pod("p0", "node0", labels=APP, spec={"nodeSelector": {"foo": "1"}})],
    }
    decision = run(tmp_path, scenario)["decision"]
    assert isinstance(decision, dict)
    return decision


def test_a_cheaper_replacement_is_refused_when_no_new_node_could_take_a_pod(
    tmp_path: Path,
) -> None:
    """One "big" node (price 1.0) whose one pod (no requests) selects foo=1, which only that
    node has, and a cheaper "small" shape: upstream's scheduler finds no NodeClaim for the pod
    (the template has no foo), so the replacement fails and nothing is done. With foo=1 among
    the template's labels a new node carries it: the node is replaced by a small one."""
    assert _decide(tmp_path, None)["type"] == "none"
    decision = _decide(tmp_path, {"metadata": {"labels": {"foo": "1"}}})
    assert decision["type"] == "single" and decision["replacement"]["instanceType"] == "small"


def test_pods_that_cannot_share_a_node_are_not_merged_onto_one(tmp_path: Path) -> None:
    """Two "big" nodes (1.0 each), each with one 100m pod app=x with a required pod
    anti-affinity to app=x on kubernetes.io/hostname. A "small" shape (0.2) holds both pods by
    their requests, but not together: merging both nodes onto one new node would need two
    NodeClaims, which consolidation never launches (``computeConsolidation``), so the
    multi-node command fails; the single-node one replaces the first node by a small one (its
    pod cannot go to the other node either)."""
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}},
         "topologyKey": "kubernetes.io/hostname"}]}}}  # fmt: skip
    shapes = [{"name": "small", "cpu": "1", "memory": "1Gi", "pods": "5", "price": 0.2},
              {"name": "big", "cpu": "8", "memory": "8Gi", "pods": "5", "price": 1.0}]  # fmt: skip
    scenario = {
        "autoscaler": "karpenter",
        "now": NOW,
        "nodePool": {
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                           "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]},
            "instanceTypes": shapes,
        },
        "nodes": [_node(n, "big", labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2")],
        "pods": [_pod(f"p{i}", n, cpu="100m", labels={"app": "x"}, spec=anti)
                 for i, n in enumerate(["n1", "n2"])],
    }  # fmt: skip
    decision = run(tmp_path, scenario)["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["n1"]
    assert decision["replacement"]["instanceType"] == "small"

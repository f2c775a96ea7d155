"""The API server's defaulting of the objects a scenario gives (a cluster stores them so).

A Pod object's container with a limit and no request for a resource is requested at its
limit: the API server's defaulting (kubernetes ``pkg/apis/core/v1/defaults.go``
``SetDefaults_Pod``; "If you specify a limit for a resource, but do not specify any request ...
Kubernetes copies the limit you specified and uses it as the requested value", Kubernetes docs,
"Resource Management for Pods and Containers"). Every pod a cluster holds has been defaulted so:
a scenario written by hand (``analyzer score``, ``analyzer autoscale``) reads as the cluster
would hold it. Until 2026-12-01 such a container requested nothing, while its QoS class was
already read as defaulted (Guaranteed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from autoscale_cases import beside_spare, by_name, run

from analyzer.core.errors import InputError
from analyzer.scheduling.objects import parse_node, parse_pod

LIMITS_ONLY = {"limits": {"cpu": "800m", "memory": "100Mi"}}


def _pod(resources: dict[str, object], init: bool = False) -> dict[str, object]:
    key = "initContainers" if init else "containers"
    spec: dict[str, object] = {key: [{"name": "c", "resources": resources}]}
    if init:
        spec["containers"] = [{"name": "main"}]
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def test_a_limit_without_a_request_is_requested() -> None:
    pod = parse_pod(_pod(LIMITS_ONLY), "pod")
    assert pod.spec.containers[0].requests == {"cpu": 800, "memory": 100 * 2**20}
    assert pod.qos == "Guaranteed"


def test_a_request_given_is_kept_and_the_rest_defaulted() -> None:
    resources = {"requests": {"cpu": "100m"}, "limits": {"cpu": "800m", "memory": "1Gi"}}
    pod = parse_pod(_pod(resources), "pod")
    assert pod.spec.containers[0].requests == {"cpu": 100, "memory": 2**30}
    assert pod.qos == "Burstable"


def test_init_containers_are_defaulted_too() -> None:
    pod = parse_pod(_pod(LIMITS_ONLY, init=True), "pod")
    assert pod.spec.init_containers[0].requests == {"cpu": 800, "memory": 100 * 2**20}


def test_cluster_autoscaler_counts_the_defaulted_request(tmp_path: Path) -> None:
    """A ReplicaSet's pod with only limits (800m) on a 1000m node: 80 % utilised, over CA's
    0.5 threshold."""
    facts = {"owner": ["ReplicaSet", "rs", "apps/v1"]}
    scenario = beside_spare("1.36", "2026-06-10T12:00:00Z", {"p": facts}, None)
    scenario["pods"][0]["spec"]["containers"][0]["resources"] = LIMITS_ONLY
    got = by_name(run(tmp_path, scenario))["node"]
    assert got["utilizationByResource"]["cpu"] == 0.8
    assert got["unremovableReason"] == "NotUnderutilized"


def test_a_node_without_allocatable_offers_its_capacity() -> None:
    """``SetDefaults_NodeStatus``: a Node whose status has a capacity and no allocatable is
    stored with the capacity as its allocatable; with neither it is refused."""
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    node = parse_node({"metadata": {"name": "n"}, "status": {"capacity": capacity}}, "node")
    assert node.allocatable["cpu"] == 4000 and node.allocatable["pods"] == 110
    both = {"capacity": capacity, "allocatable": {"cpu": "3", "memory": "7Gi", "pods": "110"}}
    node = parse_node({"metadata": {"name": "n"}, "status": both}, "node")
    assert node.allocatable["cpu"] == 3000
    with pytest.raises(InputError, match="no allocatable resources"):
        parse_node({"metadata": {"name": "n"}, "status": {}}, "node")

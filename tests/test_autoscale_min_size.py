"""``analyzer autoscale``: node-group minimums, GPU nodes, pod-level requests and CA's deletion
taint, by upstream's rules (cluster-autoscaler, paths under cluster-autoscaler/ before the 2026 move to
sigs.k8s.io/cluster-autoscaler).

- A node whose group is at or below its minSize is no scale-down candidate at all: CA's
  ``PreFilteringScaleDownNodeProcessor.GetScaleDownCandidates`` (processors/nodes/
  pre_filtering_processor.go) drops it before the planner, so it is never simulated and its room
  stays a destination for the other candidates' pods.
- ``verifyMinSize`` (core/scaledown/unneeded/nodes.go) takes the group's deletions in progress
  (``DeletionsCount``) off its size before comparing with minSize.
- A GPU node offers a non-zero GPU allocatable (``nvidia.com/gpu`` up to 1.34, any vendor's from
  1.35: utils/gpu/gpu.go ``GPUVendorResourceNames``) or carries a provider's GPU label.
- The ToBeDeleted taint's value is read with Go's ``strconv.ParseInt``.
- Utilisation reads ``PodRequests`` (component-helpers): pod-level ``spec.resources`` requests
  replace the containers' sum for cpu and memory (PodLevelResources, on by default from 1.34).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from autoscale_cases import by_name, node, pod, run
from click.testing import CliRunner

from analyzer.cli import main

NOW = "2026-11-01T12:00:00Z"
NOW_S = 1793534400  # NOW in unix seconds
FOUR = {"cpu": 4000, "memory": 16 * 2**30}
RS = {"owner": ["ReplicaSet", "rs", "apps/v1"], "memory": 2**20}
OBJECTS = [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 50}}]  # fmt: skip


def _ca(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], groups: list[Any] | None,
        **extra: Any) -> dict[str, Any]:  # fmt: skip
    """A cluster-autoscaler scenario (``groups`` None: every node in one group, minSize 0)."""
    scenario = {"autoscaler": "cluster-autoscaler", "now": NOW, "nodes": nodes, "pods": pods,
                "objects": OBJECTS, **extra}  # fmt: skip
    return scenario if groups is None else {**scenario, "nodeGroups": groups}


def test_a_node_of_a_group_at_its_minimum_stays_a_destination(tmp_path: Path) -> None:
    """s1 is the only node of group sys (minSize 1), empty; w1's 1-core pod fits nowhere else
    (w2 holds 3.5 of its 4 cores). CA never simulates s1, so w1's pod moves there and w1 is
    drained. Simulating s1 first (as the analyzer did before) took s1 out of the destinations
    and left w1 NoPlaceToMovePods."""
    nodes = [node("s1", FOUR), node("w1", FOUR), node("w2", FOUR)]
    pods = [pod("a", {**RS, "cpu": 1000}, NOW, "w1"), pod("b", {**RS, "cpu": 3500}, NOW, "w2")]
    groups = [{"name": "sys", "minSize": 1, "maxSize": 3, "nodes": ["s1"]},
              {"name": "work", "minSize": 0, "maxSize": 10, "nodes": ["w1", "w2"]}]  # fmt: skip
    result = run(tmp_path, _ca(nodes, pods, groups))
    got = by_name(result)
    assert got["s1"]["unremovableReason"] == "NodeGroupMinSizeReached"
    assert not got["s1"]["candidate"] and got["s1"]["destinations"] == {}
    assert got["w1"]["removable"] and got["w1"]["destinations"] == {"default/a": "s1"}
    assert result["removed"] == ["w1"]


def test_a_drainable_node_at_its_minimum_takes_no_room(tmp_path: Path) -> None:
    """As above, with s1 holding a 1-core pod of its own. Simulated, s1's pod would move onto
    w1 and that move would stand for the rest of the pass, leaving w1's two pods no room
    elsewhere; CA does not simulate s1, so w1's pod fits on s1 (2 of 4 cores) and w1 goes."""
    nodes = [node("s1", FOUR), node("w1", FOUR), node("w2", FOUR)]
    pods = [pod("s", {**RS, "cpu": 1000}, NOW, "s1"), pod("a", {**RS, "cpu": 1000}, NOW, "w1"),
            pod("b", {**RS, "cpu": 3500}, NOW, "w2")]  # fmt: skip
    groups = [{"name": "sys", "minSize": 1, "maxSize": 3, "nodes": ["s1"]},
              {"name": "work", "minSize": 0, "maxSize": 10, "nodes": ["w1", "w2"]}]  # fmt: skip
    result = run(tmp_path, _ca(nodes, pods, groups))
    assert by_name(result)["w1"]["destinations"] == {"default/a": "s1"}
    assert result["removed"] == ["w1"]


def _deleting(name: str, seconds_ago: int) -> dict[str, Any]:
    taint = {"key": "ToBeDeletedByClusterAutoscaler", "value": str(NOW_S - seconds_ago),
             "effect": "NoSchedule"}  # fmt: skip
    return node(name, {**FOUR, "taints": [taint]})


def _removable_at(tmp_path: Path, empty: int, drain: int, busy: int, ongoing: int) -> Any:
    """TestRemovableAt's shape (core/scaledown/unneeded/nodes_test.go): group ng (minSize 1)
    of ``empty`` empty nodes, ``drain`` nodes with a small pod to move, ``busy`` nodes above
    the threshold, and ``ongoing`` nodes CA is deleting (tainted a minute ago, counted in
    ``deletionsInProgress``); a node in no group takes the moved pods; budgets wide enough to
    take every removable node."""
    names = ([f"e{i}" for i in range(empty)] + [f"d{i}" for i in range(drain)]
             + [f"b{i}" for i in range(busy)] + [f"x{i}" for i in range(ongoing)])  # fmt: skip
    nodes = [node(n, FOUR) for n in names if n[0] in "edb"]
    nodes += [_deleting(f"x{i}", 60) for i in range(ongoing)]
    nodes.append(node("sink", FOUR))  # in no group: no candidate, room for the moved pods
    pods = [pod(f"p{i}", {**RS, "cpu": 100}, NOW, f"d{i}") for i in range(drain)]
    pods += [pod(f"q{i}", {**RS, "cpu": 2500}, NOW, f"b{i}") for i in range(busy)]
    groups = [{"name": "ng", "minSize": 1, "maxSize": 100, "nodes": names}]
    options = {"max-scale-down-parallelism": 50, "max-drain-parallelism": 50}
    scenario = _ca(nodes, pods, groups, options=options,
                   deletionsInProgress={"empty": 0, "drain": ongoing})  # fmt: skip
    return run(tmp_path, scenario)


def test_the_minimum_counts_the_deletions_in_progress(tmp_path: Path) -> None:
    """TestRemovableAt "Node group min size is not reached" (size 10, 2 deletions in progress,
    minSize 1): 3 empty and 2 drained nodes all go (10 − 2 − 5 = 3 > 1)."""
    result = _removable_at(tmp_path, empty=3, drain=2, busy=3, ongoing=2)
    assert len(result["removedEmpty"]) == 3 and len(result["removedDrained"]) == 2
    # "... is reached for drain nodes": 3 empty, 5 to drain, size 10, 2 in progress: the last
    # drained node would leave 10 − 2 − 8 = 0 ≤ 1, so 3 empty and 4 drained go
    result = _removable_at(tmp_path, empty=3, drain=5, busy=0, ongoing=2)
    assert len(result["removedEmpty"]) == 3 and len(result["removedDrained"]) == 4
    refused = [n for n in result["nodes"] if n["unremovableReason"] == "NodeGroupMinSizeReached"]
    assert [n["name"] for n in refused] == ["d4"]


def test_a_group_whose_deletions_leave_its_minimum_loses_no_more(tmp_path: Path) -> None:
    """minSize 1, one node being drained and one empty node: 2 − 1 = 1 is the minimum already,
    so the empty node stays (counting only the listed nodes, it would go)."""
    result = _removable_at(tmp_path, empty=1, drain=0, busy=0, ongoing=1)
    assert result["removed"] == []
    assert by_name(result)["e0"]["unremovableReason"] == "NodeGroupMinSizeReached"


def _gpu_node(tmp_path: Path, allocatable: dict[str, str], labels: dict[str, str],
              gpus: int = 0, version: str = "1.36") -> dict[str, Any]:  # fmt: skip
    """One node (1 core) with a 900m pod requesting ``gpus`` of the node's GPU resource."""
    requests: dict[str, str] = {"cpu": "900m"}
    if gpus:
        requests[next(k for k in allocatable if "/" in k)] = str(gpus)
    scenario = {
        "autoscaler": "cluster-autoscaler", "now": NOW, "kubernetesVersion": version,
        "nodes": [{"metadata": {"name": "g", "labels": labels},
                   "status": {"allocatable": {"cpu": "1", "memory": "4Gi", **allocatable}}}],
        "pods": [{"metadata": {"name": "p", "namespace": "default"},
                  "spec": {"nodeName": "g",
                           "containers": [{"name": "c", "resources": {"requests": requests}}]}}],
    }  # fmt: skip
    if version.count(".") == 2:  # a CA release: its minor, and the release itself
        scenario["kubernetesVersion"] = version.rsplit(".", 1)[0]
        scenario["clusterAutoscalerVersion"] = version
    return by_name(run(tmp_path, scenario))["g"]


def test_gpu_nodes_are_those_offering_a_gpu_or_labelled(tmp_path: Path) -> None:
    # nvidia.com/gpu "0" without a GPU label: no GPU node (NodeHasGpu reads a non-zero
    # allocatable), so cpu decides: 900m of 1 core, over the threshold
    got = _gpu_node(tmp_path, {"nvidia.com/gpu": "0"}, {})
    assert got["utilizationResource"] == "cpu" and got["unremovableReason"] == "NotUnderutilized"
    # an idle AMD GPU (1.35+): a GPU node at 0 % GPU, under the GPU threshold
    got = _gpu_node(tmp_path, {"amd.com/gpu": "1"}, {})
    assert got["utilizationResource"] == "amd.com/gpu" and got["utilization"] == 0.0
    assert got["candidate"]
    # the same node busy: 100 % of its GPU, NotUnderutilized
    got = _gpu_node(tmp_path, {"amd.com/gpu": "1"}, {}, gpus=1)
    assert got["utilization"] == 1.0 and got["unremovableReason"] == "NotUnderutilized"
    # CA 1.34.2 knew nvidia.com/gpu alone: cpu decides (1.34.3 brought the other vendors but
    # Intel's xe: 189594e95f, 53b9917efd)
    got = _gpu_node(tmp_path, {"amd.com/gpu": "1"}, {}, version="1.34.2")
    assert got["utilizationResource"] == "cpu"
    got = _gpu_node(tmp_path, {"amd.com/gpu": "1"}, {}, version="1.34.3")
    assert got["utilizationResource"] == "amd.com/gpu"
    # a provider's GPU label without a GPU allocatable: a GPU node whose GPU is not ready (0 %)
    got = _gpu_node(tmp_path, {}, {"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"})
    assert got["utilizationResource"] == "nvidia.com/gpu" and got["utilization"] == 0.0
    # a label no provider uses is no GPU label
    got = _gpu_node(tmp_path, {}, {"cloud.google.com/gke-gpu": "true"})
    assert got["utilizationResource"] == "cpu"


def test_the_deletion_taint_is_read_as_go_reads_it(tmp_path: Path) -> None:
    """``GetToBeDeletedTime``: ``strconv.ParseInt``. A leading "+" is a number (a deletion a
    minute ago: CurrentlyBeingDeleted); "²" is a digit to Python but not to Go: no deletion
    time, so the node is judged as any other (it used to stop the command with a traceback)."""
    plus = {"key": "ToBeDeletedByClusterAutoscaler", "value": f"+{NOW_S - 60}",
            "effect": "NoSchedule"}  # fmt: skip
    other = {**plus, "value": "²"}
    nodes = [node("plus", {**FOUR, "taints": [plus]}), node("other", {**FOUR, "taints": [other]})]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_ca(nodes, [], None)), encoding="utf-8")
    result = CliRunner().invoke(main, ["autoscale", str(path)])
    assert result.exit_code == 0, result.output
    got = by_name(run(tmp_path, _ca(nodes, [], None)))
    assert got["plus"]["unremovableReason"] == "CurrentlyBeingDeleted"
    assert got["other"]["candidate"] and got["other"]["removable"]


def test_pod_level_requests_count_in_the_utilisation(tmp_path: Path) -> None:
    """A pod whose containers request 100m but whose pod-level requests say 800m, on a 1-core
    node: 0.8 of its cpu (NotUnderutilized), not 0.1."""
    spec = {
        "nodeName": "n",
        "resources": {"requests": {"cpu": "800m", "memory": "1Mi"}},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
    }
    scenario = _ca(
        [node("n", {"cpu": 1000, "memory": 2**30})],
        [{"metadata": {"name": "p", "namespace": "default"}, "spec": spec}],
        None,
    )
    got = by_name(run(tmp_path, scenario))["n"]
    assert got["utilizationByResource"]["cpu"] == 0.8
    assert got["unremovableReason"] == "NotUnderutilized"

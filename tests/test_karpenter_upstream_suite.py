"""Karpenter's disruption suite specs through ``analyzer autoscale`` (``autoscaler: karpenter``):
kubernetes-sigs/karpenter ``pkg/controllers/disruption/suite_test.go`` (Describes "Simulate
Scheduling", "Disruption Taints", "BuildDisruptionBudgetMapping", "Pod Eviction Cost",
"Candidate Filtering", "Metrics"), plus the ``consolidation_test.go`` and ``emptiness_test.go``
specs that neither test_karpenter_upstream_more.py, test_karpenter_autoscale_upstream.py nor
test_autoscale_karpenter.py transcribes; read at HEAD 2266468104f36373ed002241afaee2d3bbc26078.
The expected values are what each spec asserts (a candidate or not, which nodes go, whether a
new NodeClaim is launched), never analyzer's output.

The fixtures are mapped as in test_karpenter_upstream_more.py: the catalogue is
``fake.InstanceTypesAssorted()`` (one ``instanceTypes`` entry per shape, priced by
``PriceFromResources``); a node carries its NodeClaim's labels (nodepool, instance type, capacity
type, zone), annotations and ``status.allocatable``; ``test.Pod()`` requests nothing. Further:

- A NodeClaim the spec gives no allocatable (Candidate Filtering, Disruption Taints) is written
  with 32 cpu and 100 pods: a scenario node needs some, and candidacy does not read it.
- ``test.NodePool()`` without a disruption block has the API's defaults:
  ``WhenEmptyOrUnderutilized``, ``consolidateAfter: 0s``, one budget of ``10%``.
- A spec that calls ``NewCandidate`` (Candidate Filtering) is read through the node's
  ``candidate`` / ``notCandidateReason``; one that reads ``BuildDisruptionBudgetMapping`` through
  the number of empty nodes emptiness deletes under that budget.

From consolidation_test.go: Delete "can delete nodes, considers karpenter.sh/do-not-disrupt set
to true on nodes" and "... on pods" (absent from test_karpenter_upstream_more.py's lists), and
the on-demand entries of Replace "can replace nodes, considers PDB policy" and "... do-not-disrupt
set to true on nodes". From emptiness_test.go: "can delete empty nodes", Budgets "should allow
all empty nodes to be disrupted" and "should allow no empty nodes to be disrupted".

Specs not transcribed, each with its reason (S = suite_test.go, C = consolidation_test.go,
E = emptiness_test.go).

- S Candidate Filtering "should not consider candidates that are deleting", "... that aren't yet
  initialized", S BuildDisruptionBudgetMapping "should not consider nodes that are not
  initialized as part of disruption count", "should not return a negative disruption value",
  "should consider nodes with a deletion timestamp set and MarkedForDeletion to the disruption
  count": analyzer disagrees (it reads neither a node's ``metadata.deletionTimestamp`` nor its
  ``karpenter.sh/initialized`` label); kept out until it does (reported with the scenarios).

- S Simulate Scheduling "should allow pods on deleting nodes to reschedule to uninitialized
  nodes": calls ``SimulateScheduling`` on nodes ``MarkForDeletion``-ed in the cluster state (an
  in-memory mark) and asserts only its pod errors.
- S Simulate Scheduling "should allow multiple replace operations to happen successively": drift
  and three reconciles.
- S Simulate Scheduling "should ensure that we do not duplicate capacity for disrupted nodes with
  provisioning": drift, and provisioning while a command's Create hangs.
- S Disruption Taints "should remove taints from NodeClaims that were left tainted from a
  previous disruption action": the controller's clean-up of its taint and the NodeClaim's
  DisruptionReason condition (orchestration).
- S Disruption Taints "should add and remove taints from NodeClaims that fail to disrupt": only
  its first assertion (one command, a replacement launched) is transcribed; the taints and the
  failed launch are orchestration.
- S BuildDisruptionBudgetMapping "should not consider nodes that have the terminating status
  condition as part of disruption count": the NodeClaim's InstanceTerminating condition (no
  NodeClaim in a scenario).
- S Candidate Filtering "... do-not-disrupt pods / PDB-blocked pods scheduled with a
  terminationGracePeriod set for eventual disruption" (both consider the node), "... without a
  terminationGracePeriod set for eventual disruption" (both do not): the eventual class is drift's.
- S Candidate Filtering "... do-not-disrupt pods / PDB-blocked pods scheduled with a
  terminationGracePeriod set for graceful disruption": the NodeClaim's terminationGracePeriod is
  not in a scenario; without it (it changes nothing for the graceful class: ``NewCandidate``)
  they are "... do-not-disrupt pods scheduled and no terminationGracePeriod" and "... fully
  blocking PDBs" (transcribed).
- S Candidate Filtering "should not consider candidates that has just a Node representation":
  a scenario has no NodeClaims; a node with the nodepool label is read as having one.
- S Candidate Filtering "should not consider candidate that has just a NodeClaim
  representation": a scenario lists Nodes only.
- S Candidate Filtering "... that are nominated", "... that are MarkedForDeletion", "... that
  are actively being processed in the queue": in-memory cluster state and the orchestration
  queue.
- S Candidate Filtering "... that are have a non-existent NodePool": the scenario has one
  nodePool, without a name, so a node cannot name another.
- S Metrics (all seven Its): metric values and a context deadline.
- C Replace "can replace nodes, considers PDB policy" and "... do-not-disrupt set to true on
  nodes", spot entries: spot-to-spot consolidation with its gate on (their on-demand entries,
  which test_karpenter_upstream_more.py left as covered by the same rules elsewhere, are
  transcribed here).
- E Budgets "should allow 2 nodes from each nodePool to be deleted", "... all nodes from each
  nodePool ...": ten NodePools (one here).
- Out of scope (not transcribed): drift, expiration, spot-to-spot consolidation, NodePool
  limits/weight, metrics/events, multi-reconcile orchestration timing (see
  test_karpenter_upstream_more.py's list for consolidation_test.go's and emptiness_test.go's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscale_cases import by_name
from test_karpenter_upstream_more import (  # the fake catalogue and clock, shared
    APP,
    ASSORTED,
    LEAST,
    MOST,
    MOST_PRICE,
    NOW,
)
from test_karpenter_upstream_more import _node as more_node
from test_karpenter_upstream_more import _pdb as more_pdb
from test_karpenter_upstream_more import _run as more_run

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL = "karpenter.sh/nodepool"
TYPE = "node.kubernetes.io/instance-type"
CAPACITY = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
TEST_VALUE = {"test": "value"}  # the Candidate Filtering pods' labels


def _node(
    name: str,
    itype: str = MOST,
    *,
    drop: tuple[str, ...] = (),
    ready: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """``test.NodeClaimAndNode``'s node (``test_karpenter_upstream_more._node``: the
    NodeClaim's labels, annotations and allocatable, ``cpu`` and 100 pods; ``managed`` False:
    ``test.Node()``, no Karpenter label) less the labels ``drop`` names, with a Ready
    condition of status ``ready`` when given."""
    node = more_node(name, itype, **more)
    labels = node["metadata"]["labels"]
    for key in drop:
        labels.pop(key, None)
    if ready is not None:
        node["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return node


def _pod(
    name: str,
    node: str | None,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: str | None = None,
    phase: str | None = None,
    meta: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``test.Pod``: one container requesting ``cpu`` and ``memory`` (nothing when None),
    controlled by an object of kind ``owner`` (none when None: ``test.Pod`` sets no owner),
    bound to ``node`` (pending when None)."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default", **(meta or {})}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    if owner:
        api = "v1" if owner == "Node" else "apps/v1"
        metadata["ownerReferences"] = [
            {"apiVersion": api, "kind": owner, "name": owner.lower(), "controller": True}
        ]
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node is not None:
        body["nodeName"] = node
    body.update(spec or {})
    state = {"phase": phase or ("Running" if node else "Pending"), **(status or {})}
    return {"kind": "Pod", "metadata": metadata, "spec": body, "status": state}


def _pdb(name: str = "pdb", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """``test.PodDisruptionBudget`` with ``MaxUnavailable: 0``: no disruption allowed (this
    file's pods carry ``TEST_VALUE``)."""
    return more_pdb(name=name, labels=labels or TEST_VALUE, **spec)


def _run(
    tmp_path: Path,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    budget: str = "10%",
    shapes: list[dict[str, Any]] | None = None,
    objects: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``test_karpenter_upstream_more._run`` with this file's default budget (10 %: the
    module docstring's NodePool)."""
    return more_run(
        tmp_path, nodes, pods, policy=policy, budget=budget, shapes=shapes, objects=objects
    )


def _candidacy(
    tmp_path: Path,
    pods: list[dict[str, Any]],
    *,
    node: dict[str, Any] | None = None,
    objects: list[dict[str, Any]] | None = None,
    shapes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Candidate Filtering's cluster: one node (mostExpensiveInstance's NodeClaim, its pods
    bound to it), ``test.NodePool()``; the node's entry in the result."""
    result = _run(tmp_path, [node or _node("node")], pods, objects=objects, shapes=shapes)
    entry = by_name(result)["node"]
    assert isinstance(entry, dict)
    return entry


def _not_candidate(entry: dict[str, Any], why: str) -> None:
    assert entry["candidate"] is False, entry
    assert why in entry["notCandidateReason"], entry


def _candidate(entry: dict[str, Any]) -> None:
    assert entry["candidate"] is True, entry
    assert entry["notCandidateReason"] is None, entry


# ----------------------------------------------------------------------------------------------
# suite_test.go, Describe "Simulate Scheduling" and "Disruption Taints"


def test_can_replace_node_with_a_local_pv(tmp_path: Path) -> None:
    """suite_test.go, Describe "Simulate Scheduling" / It "can replace node with a local PV
    (ignoring hostname affinity)" (HEAD 2266468104f3).

    One 64-cpu-128-mem node (32 cpu, 100 pods) holding a StatefulSet pod app=test that mounts a
    PVC bound to a local PersistentVolume whose node affinity names that node's hostname
    (StorageClass ``kubernetes.io/no-provisioner``). Upstream: one command; the node is deleted
    and one new NodeClaim (not the old one) remains: the hostname affinity is assumed void once
    the node goes."""
    pvc = {"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}}
    pod = _pod("pod", "node", labels=APP, owner="StatefulSet", spec={"volumes": [pvc]})
    hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node"]}
    objects = [
        {"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1",
         "metadata": {"name": "local-path"}, "provisioner": "kubernetes.io/no-provisioner"},
        {"kind": "PersistentVolume", "apiVersion": "v1", "metadata": {"name": "pv"},
         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                  "storageClassName": "local-path", "local": {"path": "/mnt/local"},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [
                      {"matchExpressions": [hostname]}]}}}},
        {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
         "metadata": {"name": "pvc", "namespace": "default"},
         "spec": {"volumeName": "pv", "storageClassName": "local-path",
                  "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "10Gi"}}}},
    ]  # fmt: skip
    decision = _run(tmp_path, [_node("node")], [pod], objects=objects)["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"], decision
    assert decision["replacement"] is not None, decision
    assert decision["replacement"]["price"] < MOST_PRICE


def test_a_node_that_can_be_replaced_gets_one_command(tmp_path: Path) -> None:
    """suite_test.go, Describe "Disruption Taints" / It "should add and remove taints from
    NodeClaims that fail to disrupt", its first assertions (HEAD 2266468104f3).

    Instance types: current-on-demand (one on-demand offering in test-zone-1a, 1.5, unavailable)
    and spot-replacement (spot offerings 1.0, 0.2 and 0.4 in three zones; written at 1.0, its
    dearest: any of them is below 1.5); both ``fake.NewInstanceType``'s default shape (4 cpu,
    4Gi, 5 pods less KubeReserved). One current-on-demand node (32 cpu, 100 pods) with a pod of
    100m / 100Mi; WhenEmptyOrUnderutilized, consolidateAfter 0. Upstream: one command, the node
    tainted and one new NodeClaim created (the replacement)."""
    shape = {"cpu": "3900m", "memory": "4086Mi", "pods": "5"}
    shapes = [{"name": "current-on-demand", **shape, "price": 1.5},
              {"name": "spot-replacement", **shape, "price": 1.0}]  # fmt: skip
    node = _node("node", "current-on-demand", zone="test-zone-1a")
    pod = _pod("pod", "node", cpu="100m", memory="100Mi")
    decision = _run(tmp_path, [node], [pod], shapes=shapes)["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"], decision
    assert decision["replacement"]["instanceType"] == "spot-replacement", decision


# ----------------------------------------------------------------------------------------------
# suite_test.go, Describe "BuildDisruptionBudgetMapping": ten empty mostExpensiveInstance nodes
# (32 cpu, 100 pods), read through the empty nodes emptiness deletes (one command, at most the
# budget's number of nodes)


def _ten(**extra: Any) -> list[dict[str, Any]]:
    return [_node(f"n{i}", **extra) for i in range(10)]


def test_budget_mapping_leaves_out_unmanaged_nodes(tmp_path: Path) -> None:
    """suite_test.go, Describe "BuildDisruptionBudgetMapping" / It "should not consider nodes
    that are not managed as part of disruption count" (HEAD 2266468104f3).

    The ten nodes and an unmanaged ``test.Node()`` (no Karpenter label); budget 100%. Upstream:
    the NodePool's allowed disruptions are 10 (the unmanaged node is not counted): the ten
    empty nodes go, the unmanaged one is no candidate. The same count under a budget of 10%
    allows ceil(10% x 10) = 1 (counting the unmanaged node would make it ceil(1.1) = 2)."""
    nodes = [*_ten(), _node("unmanaged", managed=False)]
    result = _run(tmp_path, nodes, [], budget="100%")
    decision = result["decision"]
    assert decision["type"] == "empty"
    assert sorted(decision["nodes"]) == [f"n{i}" for i in range(10)], decision
    assert by_name(result)["unmanaged"]["candidate"] is False
    decision = _run(tmp_path, nodes, [], budget="10%")["decision"]
    assert decision["type"] == "empty" and len(decision["nodes"]) == 1, decision


def test_budget_mapping_counts_not_ready_nodes_as_disrupting(tmp_path: Path) -> None:
    """suite_test.go, Describe "BuildDisruptionBudgetMapping" / It "should consider not ready
    nodes to the disruption count" (HEAD 2266468104f3).

    The ten nodes, two of them made NotReady (Ready condition False; the others Ready True);
    budget 100%. Upstream: 10 - 2 = 8 allowed disruptions, so emptiness deletes 8 of the ten
    empty nodes."""
    nodes = [_node(f"n{i}", ready="False" if i < 2 else "True") for i in range(10)]
    decision = _run(tmp_path, nodes, [], budget="100%")["decision"]
    assert decision["type"] == "empty" and len(decision["nodes"]) == 8, decision


# ----------------------------------------------------------------------------------------------
# suite_test.go, Describe "Pod Eviction Cost": ``EvictionCost`` of one pod, read as the
# ``disruptionCost`` of a node holding only that pod (the sum over its pods to move)


def _costs(tmp_path: Path, pods: list[dict[str, Any]]) -> list[float]:
    """Each pod on its own node (``n0``, ``n1``, …); the nodes' disruption costs in order."""
    bound = []
    for i, pod in enumerate(pods):
        pod["metadata"]["name"] = f"p{i}"
        pod["spec"]["nodeName"] = f"n{i}"
        bound.append(pod)
    result = by_name(_run(tmp_path, [_node(f"n{i}") for i in range(len(pods))], bound))
    return [float(result[f"n{i}"]["disruptionCost"]) for i in range(len(pods))]


def _deletion_cost(value: str) -> dict[str, Any]:
    return _pod("p", "n0", annotations={"controller.kubernetes.io/pod-deletion-cost": value})


def _priority(value: int) -> dict[str, Any]:
    return _pod("p", "n0", spec={"priority": value})


def test_eviction_cost_standard(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have a standard disruptionCost for a pod
    with no priority or disruptionCost specified" (HEAD 2266468104f3): exactly 1.0."""
    assert _costs(tmp_path, [_pod("p", "n0")]) == [1.0]


def test_eviction_cost_positive_deletion_cost(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have a higher disruptionCost for a pod
    with a positive deletion disruptionCost" (HEAD 2266468104f3): pod-deletion-cost 100 > 1."""
    assert _costs(tmp_path, [_deletion_cost("100")])[0] > 1.0


def test_eviction_cost_negative_deletion_cost(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have a lower disruptionCost for a pod with
    a positive deletion disruptionCost" (HEAD 2266468104f3; the pod's cost is -100): < 1."""
    assert _costs(tmp_path, [_deletion_cost("-100")])[0] < 1.0


def test_eviction_cost_grows_with_deletion_cost(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have higher costs for higher deletion
    costs" (HEAD 2266468104f3): 101 > 100 > 99."""
    costs = _costs(tmp_path, [_deletion_cost("101"), _deletion_cost("100"), _deletion_cost("99")])
    assert costs[0] > costs[1] > costs[2], costs


def test_eviction_cost_higher_priority(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have a higher disruptionCost for a pod
    with a higher priority" (HEAD 2266468104f3): priority 1 > 1.0."""
    assert _costs(tmp_path, [_priority(1)])[0] > 1.0


def test_eviction_cost_lower_priority(tmp_path: Path) -> None:
    """suite_test.go, "Pod Eviction Cost" / It "should have a lower disruptionCost for a pod with
    a lower priority" (HEAD 2266468104f3): priority -1 < 1.0."""
    assert _costs(tmp_path, [_priority(-1)])[0] < 1.0


# ----------------------------------------------------------------------------------------------
# suite_test.go, Describe "Candidate Filtering": one mostExpensiveInstance node, NewCandidate
# with the graceful (consolidation) class


def test_do_not_disrupt_pod_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have
    do-not-disrupt pods scheduled and no terminationGracePeriod", and It "should not consider
    candidates that have do-not-disrupt pods without a terminationGracePeriod set for graceful
    disruption" (the same cluster and class) (HEAD 2266468104f3).

    A pod annotated do-not-disrupt "true". Upstream: no candidate (the pod has the
    annotation)."""
    pod = _pod("pod", "node", annotations={DO_NOT_DISRUPT: "true"})
    _not_candidate(_candidacy(tmp_path, [pod]), DO_NOT_DISRUPT)


def test_do_not_disrupt_mirror_pod_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have
    do-not-disrupt mirror pods scheduled" (HEAD 2266468104f3).

    The annotated pod is controlled by the Node (a static pod's mirror). Upstream: no
    candidate."""
    pod = _pod("pod", "node", annotations={DO_NOT_DISRUPT: "true"}, owner="Node")
    _not_candidate(_candidacy(tmp_path, [pod]), DO_NOT_DISRUPT)


def test_do_not_disrupt_daemonset_pod_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have
    do-not-disrupt daemonset pods scheduled" (HEAD 2266468104f3).

    The annotated pod is controlled by a DaemonSet. Upstream: no candidate."""
    pod = _pod("pod", "node", annotations={DO_NOT_DISRUPT: "true"}, owner="DaemonSet")
    _not_candidate(_candidacy(tmp_path, [pod]), DO_NOT_DISRUPT)


def test_do_not_disrupt_terminating_pod_does_not_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have
    do-not-disrupt terminating pods" (HEAD 2266468104f3).

    The annotated pod has its deletion timestamp set. Upstream: a candidate."""
    pod = _pod("pod", "node", annotations={DO_NOT_DISRUPT: "true"},
               meta={"deletionTimestamp": NOW})  # fmt: skip
    _candidate(_candidacy(tmp_path, [pod]))


def test_do_not_disrupt_terminal_pods_do_not_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have
    do-not-disrupt terminal pods" (HEAD 2266468104f3).

    Two annotated pods, one Succeeded and one Failed. Upstream: a candidate."""
    pods = [
        _pod("succeeded", "node", annotations={DO_NOT_DISRUPT: "true"}, phase="Succeeded"),
        _pod("failed", "node", annotations={DO_NOT_DISRUPT: "true"}, phase="Failed"),
    ]
    _candidate(_candidacy(tmp_path, pods))


def test_do_not_disrupt_node_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have
    do-not-disrupt on nodes" (HEAD 2266468104f3).

    The NodeClaim (so its node) annotated do-not-disrupt "true", no pod. Upstream: no candidate
    (disruption is blocked through the annotation)."""
    node = _node("node", annotations={DO_NOT_DISRUPT: "true"})
    _not_candidate(_candidacy(tmp_path, [], node=node), DO_NOT_DISRUPT)


def test_multiple_pdbs_on_one_pod_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have
    multiple PDBs on the same pod" (HEAD 2266468104f3).

    A pod test=value covered by pdb1 and pdb2, both maxUnavailable 0. Upstream: no candidate
    (eviction does not support multiple PDBs)."""
    pod = _pod("pod", "node", labels=TEST_VALUE)
    entry = _candidacy(tmp_path, [pod], objects=[_pdb("pdb1"), _pdb("pdb2")])
    _not_candidate(entry, "more than one PodDisruptionBudget")


def test_fully_blocking_pdb_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have fully
    blocking PDBs", and It "should not consider candidates that have fully blocking PDBs
    without a terminationGracePeriod set for graceful disruption" (the same cluster and class)
    (HEAD 2266468104f3).

    A pod test=value covered by one PDB with maxUnavailable 0. Upstream: no candidate (the PDB
    prevents pod evictions)."""
    entry = _candidacy(tmp_path, [_pod("pod", "node", labels=TEST_VALUE)], objects=[_pdb()])
    _not_candidate(entry, "PodDisruptionBudget")


def test_fully_blocking_pdb_on_a_daemonset_pod_blocks(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that have fully
    blocking PDBs on daemonset pods" (HEAD 2266468104f3).

    The PDB's pod is controlled by a DaemonSet. Upstream: no candidate."""
    pod = _pod("pod", "node", labels=TEST_VALUE, owner="DaemonSet")
    _not_candidate(_candidacy(tmp_path, [pod], objects=[_pdb()]), "PodDisruptionBudget")


def test_fully_blocking_pdb_on_a_mirror_pod_does_not_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have fully
    blocking PDBs on mirror pods" (HEAD 2266468104f3).

    The PDB's pod is controlled by the Node (a mirror pod: never evicted). Upstream: a
    candidate."""
    pod = _pod("pod", "node", labels=TEST_VALUE, owner="Node")
    _candidate(_candidacy(tmp_path, [pod], objects=[_pdb()]))


def test_fully_blocking_pdb_on_terminal_pods_does_not_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have fully
    blocking PDBs on terminal pods" (HEAD 2266468104f3).

    Two pods test=value, one Succeeded and one Failed, under the blocking PDB. Upstream: a
    candidate."""
    pods = [
        _pod("succeeded", "node", labels=TEST_VALUE, phase="Succeeded"),
        _pod("failed", "node", labels=TEST_VALUE, phase="Failed"),
    ]
    _candidate(_candidacy(tmp_path, pods, objects=[_pdb()]))


def test_fully_blocking_pdb_on_a_terminating_pod_does_not_block(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have fully
    blocking PDBs on terminating pods" (HEAD 2266468104f3).

    The PDB's pod has its deletion timestamp set. Upstream: a candidate."""
    pod = _pod("pod", "node", labels=TEST_VALUE, meta={"deletionTimestamp": NOW})
    _candidate(_candidacy(tmp_path, [pod], objects=[_pdb()]))


def test_a_node_without_the_nodepool_label_is_no_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that are not
    owned by a NodePool (no karpenter.sh/nodepool label)" (HEAD 2266468104f3).

    The NodeClaim (so its node) lacks the karpenter.sh/nodepool label. Upstream: no candidate
    (the required label is missing). A second node with the label is added: a scenario none of
    whose nodes carries it is read as every node the pool's (docs/autoscaling.md)."""
    nodes = [_node("node", drop=(NODEPOOL,)), _node("other")]
    result = _run(tmp_path, nodes, [])
    _not_candidate(by_name(result)["node"], NODEPOOL)
    assert "node" not in result["decision"]["nodes"]


def test_a_node_without_the_capacity_type_label_is_a_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that do not have
    the karpenter.sh/capacity-type label" (HEAD 2266468104f3). Upstream: a candidate."""
    _candidate(_candidacy(tmp_path, [], node=_node("node", drop=(CAPACITY,))))


def test_a_node_without_the_zone_label_is_a_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that do not have
    the topology.kubernetes.io/zone label" (HEAD 2266468104f3). Upstream: a candidate."""
    _candidate(_candidacy(tmp_path, [], node=_node("node", drop=(ZONE,))))


def test_a_node_without_the_instance_type_label_is_a_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that do not have
    the node.kubernetes.io/instance-type label" (HEAD 2266468104f3). Upstream: a candidate."""
    _candidate(_candidacy(tmp_path, [], node=_node("node", drop=(TYPE,))))


def test_a_node_of_an_unresolvable_instance_type_is_a_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should consider candidates that have an
    instance type that cannot be resolved" (HEAD 2266468104f3).

    mostExpensiveInstance is removed from the NodePool's instance types (here: from
    ``instanceTypes``). Upstream: a candidate."""
    shapes = [s for s in ASSORTED if s["name"] != MOST]
    _candidate(_candidacy(tmp_path, [], shapes=shapes))


# ----------------------------------------------------------------------------------------------
# consolidation_test.go, Describe "Consolidation" (WhenEmptyOrUnderutilized, consolidateAfter
# 0s, budget 100%)


def _delete_context(**first_annotations: str) -> list[dict[str, Any]]:
    """Context "Delete"'s BeforeEach: two leastExpensiveInstance nodes, 32 cpu, 100 pods."""
    return [_node("node0", LEAST), _node("node1", LEAST, annotations=first_annotations or None)]


def test_delete_considers_do_not_disrupt_on_nodes(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes, considers
    karpenter.sh/do-not-disrupt set to true on nodes" (HEAD 2266468104f3).

    node0 holds two ReplicaSet pods app=test, node1 (annotated do-not-disrupt) one. Upstream:
    node0 is deleted (one NodeClaim and node remain, node1), no new NodeClaim."""
    nodes = _delete_context(**{DO_NOT_DISRUPT: "true"})
    pods = [_pod("p0", "node0", labels=APP, owner="ReplicaSet"),
            _pod("p1", "node0", labels=APP, owner="ReplicaSet"),
            _pod("p2", "node1", labels=APP, owner="ReplicaSet")]  # fmt: skip
    result = _run(tmp_path, nodes, pods, budget="100%")
    decision = result["decision"]
    assert decision["nodes"] == ["node0"] and decision["replacement"] is None, decision
    assert by_name(result)["node1"]["candidate"] is False


def test_delete_considers_do_not_disrupt_on_pods(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes, considers
    karpenter.sh/do-not-disrupt set to true on pods" (HEAD 2266468104f3).

    As above, the node1 pod annotated do-not-disrupt instead of node1. Upstream: node0 is
    deleted, node1 stays, no new NodeClaim."""
    pods = [_pod("p0", "node0", labels=APP, owner="ReplicaSet"),
            _pod("p1", "node0", labels=APP, owner="ReplicaSet"),
            _pod("p2", "node1", labels=APP, owner="ReplicaSet",
                 annotations={DO_NOT_DISRUPT: "true"})]  # fmt: skip
    result = _run(tmp_path, _delete_context(), pods, budget="100%")
    decision = result["decision"]
    assert decision["nodes"] == ["node0"] and decision["replacement"] is None, decision
    assert by_name(result)["node1"]["candidate"] is False


def test_replace_considers_pdb_policy(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace nodes,
    considers PDB policy", Entry "if the candidate is on-demand node" (HEAD 2266468104f3).

    One 64-cpu-128-mem node (32 cpu, 100 pods) with three ReplicaSet pods app=test, each Ready
    False; a PDB on app=test, maxUnavailable 0 (0 allowed) and unhealthyPodEvictionPolicy
    AlwaysAllow. Upstream: one command; the node is deleted and one new NodeClaim remains."""
    not_ready = {"conditions": [{"type": "Ready", "status": "False"}]}
    pods = [_pod(f"p{i}", "node", labels=APP, owner="ReplicaSet", status=not_ready)
            for i in range(3)]  # fmt: skip
    pdb = _pdb(labels=APP, unhealthyPodEvictionPolicy="AlwaysAllow")
    decision = _run(tmp_path, [_node("node")], pods, budget="100%", objects=[pdb])["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"], decision
    assert decision["replacement"] is not None and decision["replacement"]["price"] < MOST_PRICE


def test_replace_considers_do_not_disrupt_on_nodes(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace nodes,
    considers karpenter.sh/do-not-disrupt set to true on nodes", Entry "if the candidate is
    on-demand node" (HEAD 2266468104f3).

    node (64-cpu-128-mem, 32 cpu) holds two 2-cpu ReplicaSet pods; annotated (64-cpu-128-mem,
    5 cpu, do-not-disrupt) holds one. Upstream: one command; node is deleted and a cheaper
    NodeClaim launched (two remain: annotated and the new one)."""
    nodes = [_node("node"), _node("annotated", cpu="5", annotations={DO_NOT_DISRUPT: "true"})]
    pods = [_pod("p0", "node", cpu="2", labels=APP, owner="ReplicaSet"),
            _pod("p1", "node", cpu="2", labels=APP, owner="ReplicaSet"),
            _pod("p2", "annotated", cpu="2", labels=APP, owner="ReplicaSet")]  # fmt: skip
    result = _run(tmp_path, nodes, pods, budget="100%")
    decision = result["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"], decision
    assert decision["replacement"] is not None and decision["replacement"]["price"] < MOST_PRICE
    assert by_name(result)["annotated"]["candidate"] is False


# ----------------------------------------------------------------------------------------------
# emptiness_test.go, Describe "Emptiness" (WhenEmpty, consolidateAfter 0s, budget 100%)


def test_emptiness_can_delete_empty_nodes(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / "Emptiness" / It "can delete empty nodes" (HEAD
    2266468104f3).

    One empty spot leastExpensiveSpotInstance node (32 cpu, 100 pods). Upstream: it is deleted
    (no NodeClaim or node remains)."""
    node = _node("node", LEAST, capacity="spot")
    decision = _run(tmp_path, [node], [], policy="WhenEmpty", budget="100%")["decision"]
    assert decision["type"] == "empty" and decision["nodes"] == ["node"], decision
    assert decision["replacement"] is None


def test_emptiness_budget_allows_all_empty_nodes(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / "Budgets" / It "should allow all empty nodes to be
    disrupted" (HEAD 2266468104f3).

    Ten empty leastExpensiveInstance nodes, budget 100% (10 allowed). Upstream: one command;
    no NodeClaim remains."""
    nodes = [_node(f"n{i}", LEAST) for i in range(10)]
    decision = _run(tmp_path, nodes, [], policy="WhenEmpty", budget="100%")["decision"]
    assert decision["type"] == "empty"
    assert sorted(decision["nodes"]) == [f"n{i}" for i in range(10)], decision


def test_emptiness_budget_allows_no_empty_nodes(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / "Budgets" / It "should allow no empty nodes to be
    disrupted" (HEAD 2266468104f3).

    As above, budget 0% (0 allowed). Upstream: no command; the ten NodeClaims remain."""
    nodes = [_node(f"n{i}", LEAST) for i in range(10)]
    decision = _run(tmp_path, nodes, [], policy="WhenEmpty", budget="0%")["decision"]
    assert decision["type"] == "none" and decision["nodes"] == [], decision

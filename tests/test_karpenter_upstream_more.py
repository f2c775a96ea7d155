"""More of Karpenter's own disruption specs through ``analyzer autoscale`` (``autoscaler:
karpenter``): kubernetes-sigs/karpenter ``pkg/controllers/disruption/consolidation_test.go``
(Describe "Consolidation") and ``emptiness_test.go`` (Describe "Emptiness"), read at HEAD
2266468104f36373ed002241afaee2d3bbc26078 (2026-08-20). The expected values are what each spec
asserts (which nodes go, whether a new NodeClaim is launched and that it is cheaper), never
analyzer's output.

How the specs' fixtures are written here (``suite_test.go`` and ``pkg/cloudprovider/fake``):

- The catalogue is ``fake.InstanceTypesAssorted()``: cpu 1-64 x memory 1-128 GiB; every
  variant (zone, capacity type, OS, architecture) of a shape has one price,
  ``PriceFromResources`` = 0.1 x cores + 0.1 x memory bytes / 1e9, so one ``instanceTypes``
  entry per shape, named ``{cpu}-cpu-{mem}-mem``, stands for them all. Its allocatable is the
  capacity less ``KubeReserved`` (100m cpu, 10Mi memory) with 5 pods (``NewInstanceType``'s
  default). ``mostExpensiveInstance`` is 64-cpu-128-mem (20.1438953472),
  ``leastExpensiveInstance`` 1-cpu-1-mem (0.2073741824); their spot twins have the same shape
  and price.
- A node carries what its NodeClaim's ``status.allocatable`` gives (often 32 cpu and 100 pods,
  no memory) and the labels nodepool, instance type, capacity type and zone.
- ``test.Pod()`` requests nothing; pods are owned by a ReplicaSet unless the spec says not.
- ``consolidation_test.go``'s BeforeEach turns ``SpotToSpotConsolidation`` on, which a scenario
  cannot (analyzer models the gate's default, off): only the DescribeTable entries whose
  outcome needs no spot-to-spot replacement are transcribed.
- The NodePool: ``WhenEmptyOrUnderutilized`` (``WhenEmpty`` in emptiness_test.go),
  ``consolidateAfter: 0s``, one budget of ``100%`` unless the spec sets others.

Specs not transcribed, each with its reason (C = consolidation_test.go, E = emptiness_test.go):

- C Events (all six Its) and C/E Metrics "should correctly report eligible nodes", "should
  correctly report invalidated commands ..." (all entries): they assert event counts, gauge and
  counter values, or a validator's churn/nomination/budget change between compute and validate.
- C Budgets "should allow all empty nodes to be disrupted", "should allow no empty nodes to be
  disrupted": the same facts as E Budgets "should only allow 3 empty nodes to be disrupted"
  (transcribed) and test_autoscale_karpenter.py ``test_budget_of_zero_and_pdb_blocked_pods``.
- C Budgets "should only allow 3 empty nodes to be disrupted": the same as E's (transcribed).
- C Budgets "should only allow 3 nodes to be deleted in single node consolidation delete":
  five reconciles, one command each.
- C/E Budgets "should allow 2 nodes from each nodePool", "... all nodes from each nodePool",
  "... no nodes from each nodePool", and C "should not mark ... consolidated ... with one/many
  nodepool(s)": ten NodePools, or ``IsConsolidated`` state.
- C Replace "can replace node" spot entry, "can replace nodes, considers PDB / PDB policy / PDB
  namespace must match / do-not-disrupt on nodes / do-not-disrupt on pods" spot entries, "cannot
  replace spot with spot if less than minimum InstanceTypes flexibility", "... if it is part of
  the 15 cheapest instance types", "spot to spot consolidation should order ...", "... should
  consider the max of default and minimum ... minValues ...", "... should consider the default
  for truncation ...", "should handle failing filterOutSameInstanceType correctly ... minValues",
  "Consolidation should fail if filterByPrice breaks the minimum requirement" (both entries):
  spot-to-spot consolidation with its gate on, or NodePool ``minValues`` (not in a scenario).
- C Replace "cannot replace spot with spot if the spotToSpotConsolidation is disabled": covered
  by test_karpenter_autoscale_upstream.py ``test_a_spot_node_is_not_replaced_by_a_spot_node``.
- C Replace "can replace nodes, considers PDB policy" on-demand entry and "can replace nodes,
  considers karpenter.sh/do-not-disrupt set to true on nodes": the same rules as
  ``test_always_allow_lets_a_pod_not_ready_go`` and the do-not-disrupt pod entry (transcribed).
- C Replace "can replace nodes if another nodePool returns no instance types", C Delete "can
  delete nodes if another nodePool has no node template", "can delete nodes while an invalid node
  pool exists", "should consolidate pods onto a destination node with consolidateAfter set to
  Never": a second NodePool.
- C Replace "won't replace node if any spot replacement is more expensive": a candidate whose
  offering is unavailable and a replacement priced by zone (the worst launch price); the
  on-demand twin is transcribed.
- C Delete "does not delete nodes with pod churn ...": a test validator binds a pod between
  compute and validation.
- C Delete "does not consolidate nodes with ... do-not-disrupt ... / blocking PDBs when the
  NodePool's TerminationGracePeriod is not nil": the NodeClaims' terminationGracePeriod.
- C Delete "can delete nodes, considers invalid do-not-disrupt annotation format as not
  blocking": covered by test_autoscale_karpenter.py
  ``test_do_not_disrupt_duration_counts_from_the_pod_start`` ("soon").
- C Delete "won't delete node if it would require pods to schedule on an uninitialized node",
  "should consider initialized nodes before uninitialized nodes": uninitialized nodes.
- C Delete "should not consolidate pods onto a destination node that is under its consolidateAfter
  window": the nodes' initialization time (no scenario field; analyzer takes every node as past
  consolidateAfter).
- C TTL (all six Its), C Multi-NodeClaim "should wait for the node TTL for non-empty nodes before
  consolidating (multi-node)", "should continue to single nodeclaim consolidation when
  multi-nodeclaim consolidation fails validation after the node ttl", E "should wait for the
  node TTL for empty nodes before consolidating": validation after ``commandValidationDelay``,
  changes during the wait.
- C Multi-NodeClaim "can merge 3 nodes into 1" spot entry: spot-to-spot (gate on).
- C Node Lifetime "should consolidate the node with best savings ratio first": the same fact as
  "can delete nodes" (transcribed) and ``test_candidates_go_by_savings_ratio_highest_first``.
- C Topology "won't delete node if it would violate pod anti-affinity": the nodes are full, so
  no move is possible whatever the anti-affinity (nothing of the rule would be checked).
- C Parallelization (both Its): provisioning while a command runs.
- C Reserved Capacity (both): reserved offerings and reservation IDs.
- C Preferences (both): the operator's ``PreferencePolicy: Ignore`` option.
- C MinValuesPolicy: NodePool ``minValues`` and the ``BestEffort`` option.
- C/E Buffer Pods / Buffer pod protection (all): virtual buffer pods.
- C/E Static NodePool: static NodePools.
- E "can delete empty and drifted nodes": drift.
- E "should ignore nodes without the consolidatable status condition", "... set to false": the
  Consolidatable condition (consolidateAfter's clock).
- E "should ignore nodes with the karpenter.sh/do-not-disrupt annotation", "should ignore nodes
  that have pods", "considers pending pods when consolidating", "can delete multiple empty
  nodes": covered by test_autoscale_karpenter.py
  (``test_empty_nodes_go_first_and_do_not_disrupt_keeps_a_node``,
  ``test_when_empty_policy_leaves_underutilized_nodes``) and test_karpenter_autoscale_upstream.py
  (``test_pending_pods_are_scheduled_with_the_candidates_pods``), or by the three-node case of
  C Multi-NodeClaim (transcribed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscale_cases import by_name, run

COMMIT = "2266468104f36373ed002241afaee2d3bbc26078"
NOW = "2026-11-01T12:00:00Z"
THREE_MIN_LATER = "2026-11-01T12:03:00Z"


def _price(cpu: int, mem_gib: int) -> float:
    """``fake.PriceFromResources``: 0.1 per core plus 0.1 per 1e9 bytes of memory."""
    return 0.1 * cpu + 0.1 * (mem_gib * 2**30) / 1e9


ASSORTED = [
    {
        "name": f"{cpu}-cpu-{mem}-mem",
        "cpu": f"{cpu * 1000 - 100}m",
        "memory": f"{mem * 1024 - 10}Mi",
        "pods": "5",
        "price": _price(cpu, mem),
    }
    for cpu in (1, 2, 4, 8, 16, 32, 64)
    for mem in (1, 2, 4, 8, 16, 32, 64, 128)
]
MOST = "64-cpu-128-mem"  # mostExpensiveInstance (and mostExpensiveSpotInstance's shape)
LEAST = "1-cpu-1-mem"  # leastExpensiveInstance (and leastExpensiveSpotInstance's shape)
MOST_PRICE = _price(64, 128)  # 20.1438953472
LEAST_PRICE = _price(1, 1)  # 0.2073741824
APP = {"app": "test"}


def _node(
    name: str,
    itype: str = MOST,
    *,
    capacity: str = "on-demand",
    zone: str = "test-zone-1",
    cpu: str = "32",
    pods: str | None = "100",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    managed: bool = True,
) -> dict[str, Any]:
    """A node as ``test.NodeClaimAndNode`` builds it: the NodeClaim's allocatable (cpu, and
    pods where the spec gives them) and its labels."""
    meta_labels = {
        "node.kubernetes.io/instance-type": itype,
        "karpenter.sh/capacity-type": capacity,
        "topology.kubernetes.io/zone": zone,
        **(labels or {}),
    }
    if managed:
        meta_labels["karpenter.sh/nodepool"] = "default"
    else:  # test.Node: no Karpenter labels at all
        meta_labels = dict(labels or {})
    allocatable = {"cpu": cpu}
    if pods is not None:
        allocatable["pods"] = pods
    meta: dict[str, Any] = {"name": name, "labels": meta_labels}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": "Node", "metadata": meta, "status": {"allocatable": allocatable}}


def _pod(
    name: str,
    node: str | None,
    *,
    cpu: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: str | None = "ReplicaSet",
    namespace: str = "default",
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``test.Pod``: one container requesting ``cpu`` (nothing when None), owned by a
    controller of kind ``owner`` (none when None), bound to ``node`` (pending when None)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, **(meta or {})}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": owner.lower(), "controller": True}
        ]
    requests = {"cpu": cpu} if cpu else {}
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node is not None:
        body["nodeName"] = node
    body.update(spec or {})
    phase = {"phase": "Running" if node else "Pending"}
    return {
        "kind": "Pod",
        "metadata": metadata,
        "spec": body,
        "status": {**phase, **(status or {})},
    }


def _pdb(
    namespace: str = "default",
    name: str = "pdb",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """``test.PodDisruptionBudget`` selecting ``labels`` (default app=test), maxUnavailable 0, 0
    disruptions allowed; ``spec``: more of its spec."""
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": labels or APP}, "maxUnavailable": 0, **spec},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                   "expectedPods": 1},
    }  # fmt: skip


def _run(
    tmp_path: Path,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    after: str = "0s",
    budget: str = "100%",
    shapes: list[dict[str, Any]] | None = None,
    objects: list[dict[str, Any]] | None = None,
    now: str = NOW,
) -> dict[str, Any]:
    scenario: dict[str, Any] = {
        "autoscaler": "karpenter",
        "now": now,
        "nodePool": {
            "disruption": {"consolidationPolicy": policy, "consolidateAfter": after,
                           "budgets": [{"nodes": budget}]},
            "instanceTypes": shapes or ASSORTED,
        },
        "nodes": nodes,
        "pods": pods,
    }  # fmt: skip
    if objects:
        scenario["objects"] = objects
    return run(tmp_path, scenario)


def _cheaper_replacement(decision: dict[str, Any], than: float) -> None:
    """A new NodeClaim is launched and its instance type is cheaper than ``than`` (upstream:
    the new NodeClaim's instance-type requirement lacks the candidate's own type)."""
    replacement = decision["replacement"]
    assert replacement is not None, decision
    assert replacement["instanceType"] != MOST
    assert replacement["price"] < than


# ----------------------------------------------------------------------------------------------
# consolidation_test.go


def test_budget_30_percent_caps_multi_node_delete(tmp_path: Path) -> None:
    """consolidation_test.go, Describe "Consolidation" / Context "Budgets" / It "should only
    allow 3 nodes to be deleted in multi node consolidation delete" (HEAD 2266468104f3).

    Ten 64-cpu-128-mem nodes (32 cpu, 100 pods), each with one 100m pod; budget 30% of 10 = 3.
    Upstream: one command; after it, 7 NodeClaims remain (3 deleted, no new one)."""
    nodes = [_node(f"n{i}") for i in range(10)]
    pods = [_pod(f"p{i}", f"n{i}", cpu="100m", labels=APP) for i in range(10)]
    decision = _run(tmp_path, nodes, pods, budget="30%")["decision"]
    assert len(decision["nodes"]) == 3, decision
    assert decision["replacement"] is None


def test_can_replace_node(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace node",
    Entry "if the candidate is on-demand node" (HEAD 2266468104f3).

    One on-demand 64-cpu-128-mem node with one pod requesting nothing. Upstream: one command; the
    node is deleted and one new NodeClaim, whose instance types exclude 64-cpu-128-mem, holds
    the pod."""
    decision = _run(tmp_path, [_node("node")], [_pod("pod", "node", labels=APP)])["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"]
    _cheaper_replacement(decision, MOST_PRICE)


def test_replace_considers_pdb(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace nodes,
    considers PDB", Entry "if the candidate is on-demand node" (HEAD 2266468104f3).

    One 64-cpu-128-mem node with three app=test pods; a PDB on app=test with maxUnavailable 0
    (0 disruptions allowed). Upstream: no new NodeClaim, the node stays."""
    pods = [_pod(f"p{i}", "node", labels=APP) for i in range(3)]
    result = _run(tmp_path, [_node("node")], pods, objects=[_pdb()])
    assert result["decision"]["type"] == "none" and result["decision"]["nodes"] == []
    assert by_name(result)["node"]["candidate"] is False


def test_replace_pdb_namespace_must_match(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace nodes,
    PDB namespace must match", Entry "if the candidate is on-demand node" (HEAD 2266468104f3).

    As "considers PDB" with one pod, but the blocking PDB is in another namespace. Upstream: one
    command; the node is replaced (one NodeClaim remains, not the old one)."""
    result = _run(
        tmp_path,
        [_node("node")],
        [_pod("pod", "node", labels=APP)],
        objects=[_pdb(namespace="other-namespace")],
    )
    decision = result["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"]
    _cheaper_replacement(decision, MOST_PRICE)


def test_replace_considers_do_not_disrupt_on_pods(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / DescribeTable "can replace nodes,
    considers karpenter.sh/do-not-disrupt set to true on pods", Entry "if the candidate is
    on-demand node" (HEAD 2266468104f3).

    node (64-cpu-128-mem, 32 cpu) holds two 2-cpu pods; node2 (64-cpu-128-mem, 5 cpu) holds a
    2-cpu pod annotated do-not-disrupt. Upstream: one command; node is deleted and replaced by
    a cheaper node (two NodeClaims remain: node2 and the new one)."""
    nodes = [_node("node"), _node("node2", cpu="5")]
    pods = [
        _pod("p0", "node", cpu="2", labels=APP),
        _pod("p1", "node", cpu="2", labels=APP),
        _pod("p2", "node2", cpu="2", labels=APP,
             annotations={"karpenter.sh/do-not-disrupt": "true"}),
    ]  # fmt: skip
    result = _run(tmp_path, nodes, pods)
    decision = result["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"]
    _cheaper_replacement(decision, MOST_PRICE)
    assert by_name(result)["node2"]["candidate"] is False


def test_wont_replace_on_demand_node_if_on_demand_replacement_is_more_expensive(
    tmp_path: Path,
) -> None:
    """consolidation_test.go, "Consolidation" / "Replace" / It "won't replace on-demand node if
    on-demand replacement is more expensive" (HEAD 2266468104f3).

    Instance types: current-on-demand (its one on-demand offering 0.5, unavailable) and
    on-demand-replacement (on-demand 0.6 in two zones, spot 0.2 and 0.3); the NodePool requires
    on-demand, so the replacement's launch price is 0.6 (``WorstLaunchPrice`` over the offerings
    the requirement allows: the scenario's one price per type). A node of current-on-demand (32
    cpu) with one pod requesting nothing. Upstream: nothing launched or deleted."""
    shapes = [
        {"name": "current-on-demand", "cpu": "3900m", "memory": "4086Mi", "pods": "5",
         "price": 0.5},
        {"name": "on-demand-replacement", "cpu": "3900m", "memory": "4086Mi", "pods": "5",
         "price": 0.6},
    ]  # fmt: skip
    node = _node("node", "current-on-demand", zone="test-zone-1a", pods=None)
    decision = _run(tmp_path, [node], [_pod("pod", "node", labels=APP)], shapes=shapes)["decision"]
    assert decision["type"] == "none" and decision["nodes"] == []


def _two_cheap_nodes(**first: Any) -> list[dict[str, Any]]:
    """Context "Delete"'s BeforeEach: two leastExpensiveInstance nodes, 32 cpu, 100 pods."""
    return [_node("node0", LEAST, **first), _node("node1", LEAST)]


def _three_pods(**third: Any) -> list[dict[str, Any]]:
    """Two pods on node0 and one on node1 (``test.Pods(3, ...)``)."""
    return [
        _pod("p0", "node0", labels=APP),
        _pod("p1", "node0", labels=APP),
        _pod("p2", "node1", **{"labels": APP, **third}),
    ]


def test_can_delete_nodes(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes" (HEAD
    2266468104f3).

    Two 1-cpu-1-mem nodes (32 cpu, 100 pods): node0 with two pods, node1 with one. Upstream: one
    command; node1 is deleted, no new NodeClaim (one remains)."""
    decision = _run(tmp_path, _two_cheap_nodes(), _three_pods())["decision"]
    assert decision["nodes"] == ["node1"] and decision["replacement"] is None


def test_can_delete_nodes_when_non_karpenter_capacity_can_fit_pods(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes, when
    non-Karpenter capacity can fit pods" (HEAD 2266468104f3).

    node0 (1-cpu-1-mem, 32 cpu) with three pods, and an unmanaged node (``test.Node``: no
    NodeClaim, no nodepool label, 32 cpu, 100 pods) with none. Upstream: node0 is deleted, its
    pods fit on the unmanaged node; no NodeClaim remains and the unmanaged node stays."""
    nodes = [_node("node0", LEAST), _node("unmanaged", managed=False)]
    pods = [_pod(f"p{i}", "node0", labels=APP) for i in range(3)]
    decision = _run(tmp_path, nodes, pods)["decision"]
    assert decision["nodes"] == ["node0"] and decision["replacement"] is None
    assert "unmanaged" not in decision["nodes"]


def test_delete_considers_pdb(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes, considers PDB"
    (HEAD 2266468104f3).

    As "can delete nodes", but only node1's pod is labelled app=test, covered by a PDB with 0
    disruptions allowed. Upstream: node0 (the node with more pods) is deleted, no new NodeClaim."""
    pods = [_pod("p0", "node0"), _pod("p1", "node0"), _pod("p2", "node1", labels=APP)]
    decision = _run(tmp_path, _two_cheap_nodes(), pods, objects=[_pdb()])["decision"]
    assert decision["nodes"] == ["node0"] and decision["replacement"] is None


def test_duration_do_not_disrupt_still_active_keeps_its_node(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "does not consolidate nodes with
    pods that have a duration-based do-not-disrupt annotation that is still active" (HEAD
    2266468104f3).

    As "can delete nodes", node1's pod annotated do-not-disrupt "2m", started now. Upstream: one
    command; node0 is deleted, node1 stays (one NodeClaim remains)."""
    third = {"annotations": {"karpenter.sh/do-not-disrupt": "2m"},
             "status": {"startTime": NOW}}  # fmt: skip
    decision = _run(tmp_path, _two_cheap_nodes(), _three_pods(**third))["decision"]
    assert decision["nodes"] == ["node0"] and decision["replacement"] is None


def test_duration_do_not_disrupt_expires(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can consolidate nodes after
    duration-based do-not-disrupt annotation expires" (HEAD 2266468104f3).

    As "can delete nodes", every pod annotated do-not-disrupt "2m" and started at the first
    reconcile. Upstream: then no command and both nodes stay; 3 minutes later (the clock
    stepped, the same cluster) one command. Each reconcile is one instant here."""
    annotated = {"annotations": {"karpenter.sh/do-not-disrupt": "2m"}, "status": {"startTime": NOW}}
    pods = [
        _pod("p0", "node0", labels=APP, **annotated),
        _pod("p1", "node0", labels=APP, **annotated),
        _pod("p2", "node1", labels=APP, **annotated),
    ]
    first = _run(tmp_path, _two_cheap_nodes(), pods)["decision"]
    assert first["type"] == "none" and first["nodes"] == []
    later = _run(tmp_path, _two_cheap_nodes(), pods, now=THREE_MIN_LATER)["decision"]
    assert later["type"] != "none" and len(later["nodes"]) >= 1


def test_delete_evicts_pods_without_an_owner(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes, evicts pods
    without an ownerRef" (HEAD 2266468104f3).

    As "can delete nodes" (no labels), node1's pod has no ownerReferences. Upstream: one command;
    node1 (the fewest pods) is deleted though its pod will not be recreated; no new NodeClaim."""
    pods = [_pod("p0", "node0"), _pod("p1", "node0"), _pod("p2", "node1", owner=None)]
    decision = _run(tmp_path, _two_cheap_nodes(), pods)["decision"]
    assert decision["nodes"] == ["node1"] and decision["replacement"] is None


def test_replace_even_when_consolidate_after_has_not_expired(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "should replace a node with a
    cheaper one even when consolidateAfter has not expired" (HEAD 2266468104f3).

    consolidateAfter 1m; one 64-cpu-128-mem node with one pod, past its own consolidateAfter
    (the clock stepped 2m after it was initialized). Upstream: one command; the node is deleted
    and one new NodeClaim (not the old one) launched."""
    result = _run(tmp_path, [_node("node")], [_pod("pod", "node", labels=APP)], after="1m")
    decision = result["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["node"]
    _cheaper_replacement(decision, MOST_PRICE)


def test_can_delete_nodes_with_a_permanently_pending_pod(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "can delete nodes with a
    permanently pending pod" (HEAD 2266468104f3).

    As "can delete nodes", plus a pending pod (``test.UnschedulablePod``: PodScheduled False,
    Unschedulable; no owner) with nodeSelector non-existent=node-label, which no node or instance
    type has. Upstream: one command; node1 is deleted, no new NodeClaim; the pending pod stays
    pending."""
    unschedulable = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    }
    pending = _pod("pending", None, owner=None, status=unschedulable,
                   spec={"nodeSelector": {"non-existent": "node-label"}})  # fmt: skip
    decision = _run(tmp_path, _two_cheap_nodes(), [*_three_pods(), pending])["decision"]
    assert decision["nodes"] == ["node1"] and decision["replacement"] is None


def test_wont_delete_nodes_if_a_pod_would_go_pending(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Delete" / It "won't delete nodes if it would
    make a non-pending pod go pending" (HEAD 2266468104f3).

    As "can delete nodes", node0 labelled foo=1 and node1 foo=2; node0's pods select foo=1,
    node1's pod foo=2. Upstream: both NodeClaims and nodes stay (no command)."""
    nodes = [_node("node0", LEAST, labels={"foo": "1"}), _node("node1", LEAST, labels={"foo": "2"})]
    pods = [
        _pod("p0", "node0", labels=APP, spec={"nodeSelector": {"foo": "1"}}),
        _pod("p1", "node0", labels=APP, spec={"nodeSelector": {"foo": "1"}}),
        _pod("p2", "node1", labels=APP, spec={"nodeSelector": {"foo": "2"}}),
    ]
    decision = _run(tmp_path, nodes, pods)["decision"]
    assert decision["type"] == "none" and decision["nodes"] == []


def test_can_merge_3_nodes_into_1(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Multi-NodeClaim" / DescribeTable "can merge 3
    nodes into 1", Entry "if the candidate is on-demand node" (HEAD 2266468104f3).

    Three on-demand 64-cpu-128-mem nodes (32 cpu, 100 pods), one pod each. Upstream: one command;
    the three are deleted and one new NodeClaim holds the pods."""
    nodes = [_node(f"n{i}") for i in range(3)]
    pods = [_pod(f"p{i}", f"n{i}", labels=APP) for i in range(3)]
    decision = _run(tmp_path, nodes, pods)["decision"]
    assert decision["type"] == "multi" and sorted(decision["nodes"]) == ["n0", "n1", "n2"]
    _cheaper_replacement(decision, MOST_PRICE)


def test_can_merge_3_nodes_into_1_spot_and_on_demand(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Multi-NodeClaim" / It "can merge 3 nodes into 1
    if the candidates have both spot and on-demand" (HEAD 2266468104f3).

    As "can merge 3 nodes into 1", the third node spot (mostExpensiveSpotInstance, same shape and
    price). Not all candidates are spot, so no spot-to-spot path. Upstream: one command; the three
    are deleted and one new NodeClaim remains."""
    nodes = [_node("n0"), _node("n1"), _node("n2", capacity="spot")]
    pods = [_pod(f"p{i}", f"n{i}", labels=APP) for i in range(3)]
    decision = _run(tmp_path, nodes, pods)["decision"]
    assert decision["type"] == "multi" and sorted(decision["nodes"]) == ["n0", "n1", "n2"]
    _cheaper_replacement(decision, MOST_PRICE)


def test_wont_merge_2_nodes_into_1_of_the_same_type(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Multi-NodeClaim" / DescribeTable "won't merge 2
    nodes into 1 of the same type", both Entries (HEAD 2266468104f3; the spec's ternaries make
    the "on-demand" entry's nodes spot leastExpensiveSpotInstance and the "spot" entry's
    on-demand leastExpensiveInstance).

    Two 1-cpu-1-mem nodes (32 cpu, 100 pods): node0 with one pod, node1 with two. Deleting both
    for one identical node is refused (``filterOutSameInstanceType``). Upstream: one command;
    node0 (the fewest pods) is deleted, node1 stays, no new NodeClaim."""
    for capacity in ("spot", "on-demand"):
        nodes = [_node("node0", LEAST, capacity=capacity), _node("node1", LEAST, capacity=capacity)]
        pods = [_pod("p0", "node0", labels=APP), _pod("p1", "node1", labels=APP),
                _pod("p2", "node1", labels=APP)]  # fmt: skip
        decision = _run(tmp_path, nodes, pods)["decision"]
        assert decision["nodes"] == ["node0"], (capacity, decision)
        assert decision["replacement"] is None, capacity


def test_multiple_empty_nodes_go_in_one_command(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Multi-NodeClaim" / DescribeTable "should
    consolidate multiple empty nodes via multi-nodeclaim consolidation", both Entries (HEAD
    2266468104f3; spot mostExpensiveSpotInstance nodes for "on-demand", on-demand for "spot").

    Three empty 64-cpu-128-mem nodes (the pods are created but not bound). Upstream: one command;
    all three are deleted, no NodeClaim remains."""
    for capacity in ("spot", "on-demand"):
        nodes = [_node(f"n{i}", capacity=capacity) for i in range(3)]
        decision = _run(tmp_path, nodes, [])["decision"]
        assert sorted(decision["nodes"]) == ["n0", "n1", "n2"], (capacity, decision)
        assert decision["replacement"] is None


def test_can_replace_node_maintaining_zonal_topology_spread(tmp_path: Path) -> None:
    """consolidation_test.go, "Consolidation" / "Topology Consideration" / It "can replace node
    maintaining zonal topology spread" (HEAD 2266468104f3).

    Three nodes of 1 cpu allocatable (no pods count): zone 1 and zone 3 the cheapest on-demand
    type of their zone (1-cpu-1-mem), zone 2 the dearest (64-cpu-128-mem). Each holds a 1-cpu pod
    app=test-zonal-spread with a zone spread (maxSkew 1, DoNotSchedule). Upstream: one command;
    node-z2 is deleted and one new NodeClaim launched (three remain; the new one, in zone 2,
    keeps the skew at 1,1,1)."""
    spread = {"app": "test-zonal-spread"}
    tsc = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": spread}}]  # fmt: skip
    nodes = [
        _node("node-z1", LEAST, zone="test-zone-1", cpu="1", pods=None),
        _node("node-z2", MOST, zone="test-zone-2", cpu="1", pods=None),
        _node("node-z3", LEAST, zone="test-zone-3", cpu="1", pods=None),
    ]
    pods = [
        _pod(f"p{i}", n, cpu="1", labels=spread, spec={"topologySpreadConstraints": tsc})
        for i, n in enumerate(["node-z1", "node-z2", "node-z3"])
    ]
    decision = _run(tmp_path, nodes, pods)["decision"]
    assert decision["nodes"] == ["node-z2"], decision
    _cheaper_replacement(decision, MOST_PRICE)


# ----------------------------------------------------------------------------------------------
# emptiness_test.go (NodePool: WhenEmpty, consolidateAfter 0s, budget 100%)


def test_emptiness_budget_30_percent(tmp_path: Path) -> None:
    """emptiness_test.go, Describe "Emptiness" / Context "Budgets" / It "should only allow 3 empty
    nodes to be disrupted" (HEAD 2266468104f3).

    Ten empty 1-cpu-1-mem nodes, WhenEmpty, budget 30% (3 of 10). Upstream: one command; 7
    NodeClaims remain."""
    nodes = [_node(f"n{i}", LEAST) for i in range(10)]
    decision = _run(tmp_path, nodes, [], policy="WhenEmpty", budget="30%")["decision"]
    assert decision["type"] == "empty" and len(decision["nodes"]) == 3


def test_emptiness_do_not_disrupt_false_is_deleted(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / "Emptiness" / It "should delete nodes with the
    karpenter.sh/do-not-disrupt annotation set to false" (HEAD 2266468104f3).

    One empty spot 1-cpu-1-mem node annotated do-not-disrupt "false". Upstream: it is deleted."""
    node = _node("node", LEAST, capacity="spot",
                 annotations={"karpenter.sh/do-not-disrupt": "false"})  # fmt: skip
    decision = _run(tmp_path, [node], [], policy="WhenEmpty")["decision"]
    assert decision["type"] == "empty" and decision["nodes"] == ["node"]


def test_emptiness_daemonset_pod_counts_as_empty(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / It "will consider a node with a DaemonSet pod as empty"
    (HEAD 2266468104f3).

    One on-demand 1-cpu-1-mem node holding one Ready pod owned by a DaemonSet. Upstream: the node
    is deleted (no NodeClaim or node remains)."""
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    pod = _pod("ds-pod", "node", owner="DaemonSet", status=ready)
    decision = _run(tmp_path, [_node("node", LEAST)], [pod], policy="WhenEmpty")["decision"]
    assert decision["type"] == "empty" and decision["nodes"] == ["node"]


def test_emptiness_terminating_deployment_pods_count_as_empty(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / It "will consider a node with terminating Deployment
    pods as empty" (HEAD 2266468104f3).

    One on-demand 1-cpu-1-mem node holding three Ready ReplicaSet pods, each evicted (deletion
    timestamp set, the pod still there). Upstream: the node is deleted."""
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    pods = [_pod(f"p{i}", "node", status=ready, meta={"deletionTimestamp": NOW})
            for i in range(3)]  # fmt: skip
    decision = _run(tmp_path, [_node("node", LEAST)], pods, policy="WhenEmpty")["decision"]
    assert decision["type"] == "empty" and decision["nodes"] == ["node"]


def test_emptiness_terminating_statefulset_pod_is_not_empty(tmp_path: Path) -> None:
    """emptiness_test.go, "Emptiness" / It "will not consider a node with a terminating
    StatefulSet pod as empty" (HEAD 2266468104f3).

    As the Deployment case, one Ready StatefulSet pod, evicted. Upstream: no command; the node
    stays."""
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    pod = _pod("ss-pod", "node", owner="StatefulSet", status=ready, meta={"deletionTimestamp": NOW})
    decision = _run(tmp_path, [_node("node", LEAST)], [pod], policy="WhenEmpty")["decision"]
    assert decision["type"] == "none" and decision["nodes"] == []

"""Karpenter's consolidation simulation (``analyzer.replay.karpenter_simulate.leftover``): the fast
placement (``fast=True``, the replay's default) answers as the plain one on random small states.

The plain path runs every filter of the profile on every node for each pod; the fast one runs
the resource check on the allowed rows, the static filters once per pod constraints and, per pod,
leaves out the dynamic filters whose own code passes every node then (``_need``: NodeResourcesFit
reduced to the pod count, NodePorts without host ports, PodTopologySpread without a
DoNotSchedule constraint, InterPodAffinity while no placed pod has affinity terms), keeping
the room and pod counts itself and binding only once a filter that reads the placed pods is to
run (``_place_fast``). The states here exercise each of those: nodes one pod short of their pod
limit, pods with a host port, pods with a DoNotSchedule spread over zones, pods with required
anti-affinity placed on the staying nodes, pods asking for an extended resource few nodes
offer, pending pods, nodes only pending pods may use (a candidate among them at times), and
(odd seeds) small nodes where one placement's room decides the next.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from analyzer.autoscaler.nodepool import Shape
from analyzer.replay.karpenter_simulate import Need, leftover
from analyzer.scheduling import ClusterState, load_strategy
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.state import PodDemand

GPU = "example.com/gpu"


def _pod(rng: random.Random, i: int, kind: str, app: str | None = None) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": f"{rng.choice([100, 250, 500, 1000, 2000])}m"}
    if rng.random() < 0.8:
        requests["memory"] = f"{rng.choice([128, 512, 1024, 4096])}Mi"
    if kind == "gpu":
        requests[GPU] = "1"
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if kind == "port":
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec: dict[str, Any] = {"containers": [container]}
    labels = {"app": app or rng.choice(["a", "b"])}
    if kind == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": labels["app"]}},
            }
        ]
    if kind == "anti":
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": labels["app"]}},
                    }
                ]
            }
        }
    return {
        "metadata": {"name": f"p{i}", "namespace": "default", "labels": labels},
        "spec": spec,
    }


def _case(
    seed: int,
) -> tuple[ClusterState, list[PodDemand], list[tuple[int, int]], Any, list[int], Any]:
    rng = random.Random(seed)
    # odd seeds: only pods without host ports, spreading or affinity on small nodes, where one
    # placement's room decides the next (the placement that keeps its own counts)
    tight = seed % 2 == 1
    count = rng.randint(3, 9)
    names = [f"n{i}" for i in range(count)]
    allocatable = []
    for _ in names:
        cpus = [1000, 1500, 2000] if tight else [2000, 4000, 8000]
        alloc = {"cpu": rng.choice(cpus), "memory": rng.choice([4, 8, 16]) << 30}
        alloc["pods"] = rng.choice([2, 3, 4, 110])
        if rng.random() < 0.3:
            alloc[GPU] = rng.choice([1, 2])
        allocatable.append(alloc)
    labels = [{"zone": rng.choice(["z1", "z2"]), "kubernetes.io/hostname": name} for name in names]
    state = ClusterState.from_nodes(names, allocatable, extra_resources=[GPU], labels=labels)
    kinds = (
        ["plain", "gpu"] if tight else ["plain", "plain", "plain", "port", "spread", "anti", "gpu"]
    )
    demands: list[PodDemand] = []
    where: list[int] = []
    for i in range(rng.randint(4, 18)):
        obj = parse_pod(_pod(rng, i, rng.choice(kinds)), f"pod {i}")
        demand = obj.demand(state.resources)
        node = rng.randrange(count)
        room = state.allocatable[node] - state.requested[node]
        if state.pod_count[node] < state.allowed_pods[node] and (
            not tight or (room >= demand.requests).all()
        ):
            state.bind(node, demand)
            where.append(node)
        else:
            where.append(-1)  # pending
        demands.append(demand)
    candidates = set(rng.sample(range(count), rng.randint(1, max(1, count // 2))))
    moves = [(n, p) for p, n in enumerate(where) if n in candidates]
    allowed = np.array([i not in candidates for i in range(count)], dtype=bool)
    pending = [p for p, n in enumerate(where) if n < 0]
    # nodes only pending pods may use (still launching, or within consolidateAfter), a
    # candidate among them at times: its pods leave it, and pending pods may take the room
    inflight = None
    if rng.random() < 0.5:
        inflight = np.array([rng.random() < 0.4 for _ in range(count)], dtype=bool)
    return state, demands, moves, allowed, pending, inflight


SHAPES = [Shape("small", {"cpu": 4000, "memory": 8 << 30, "pods": 110}, 1.0)]


@pytest.mark.parametrize("seed", range(300))
def test_the_fast_placement_leaves_what_the_plain_one_leaves(seed: int) -> None:
    state, demands, moves, allowed, pending, inflight = _case(seed)
    profile = load_strategy("kube-default")
    before = (state.requested.copy(), state.pod_count.copy())
    index = state.pod_index
    assert index is not None
    groups = {k: dict(v) for k, v in index.live_groups()}
    affinity = {k: dict(v) for k, v in index.affinity_groups.items()}
    plain = leftover(state, profile, demands, moves, allowed, SHAPES, 0.0, fast=False,
                     pending=pending, inflight=inflight)  # fmt: skip
    needs: dict[int, Need] = {}
    fast = leftover(state, profile, demands, moves, allowed, SHAPES, 0.0, fast=True,
                    needs=needs, pending=pending, inflight=inflight)  # fmt: skip
    assert [dict(m) for m in fast] == [dict(m) for m in plain]
    # asked again with the per-pod answers kept (``needs``) and the requests as one matrix (the
    # replay's loop passes it): the same
    requests = np.stack([d.requests for d in demands])
    again = leftover(state, profile, demands, moves, allowed, SHAPES, 0.0, fast=True,
                     needs=needs, pending=pending, inflight=inflight, requests=requests)  # fmt: skip
    assert [dict(m) for m in again] == [dict(m) for m in plain]
    # every bind and unbind undone
    assert np.array_equal(state.requested, before[0])
    assert np.array_equal(state.pod_count, before[1])
    # and so the pod index: each workload's pods per node, the pods with affinity terms
    assert {k: dict(v) for k, v in index.live_groups()} == groups
    assert {k: dict(v) for k, v in index.affinity_groups.items()} == affinity
    assert index.affine == sum(sum(v.values()) for v in affinity.values())


def test_a_pod_slot_is_what_refuses_a_node_with_room() -> None:
    """NodeResourcesFit left out by the fast path: the pod count still refuses a full node."""
    state = ClusterState.from_nodes(["a", "b"], [{"cpu": 4000, "memory": 8 << 30, "pods": 1}] * 2)
    small = parse_pod(_pod(random.Random(0), 0, "plain"), "p0").demand(state.resources)
    other = parse_pod(_pod(random.Random(1), 1, "plain"), "p1").demand(state.resources)
    state.bind(0, small)  # the candidate
    state.bind(1, other)  # the staying node: room, but no pod slot
    profile = load_strategy("kube-default")
    allowed = np.array([False, True])
    for fast in (False, True):
        left = leftover(state, profile, [small, other], [(0, 0)], allowed, SHAPES, 0.0,
                        fast=fast, needs={})  # fmt: skip
        assert [dict(m) for m in left] == [small.request_map]


def test_a_placed_pods_anti_affinity_refuses_a_pod_without_terms() -> None:
    """InterPodAffinity is left out only while no placed pod has affinity terms: a placed pod's
    required anti-affinity matching the moved pod keeps it off that node."""
    state = ClusterState.from_nodes(
        ["a", "b"],
        [{"cpu": 4000, "memory": 8 << 30, "pods": 110}] * 2,
        labels=[{"kubernetes.io/hostname": "a"}, {"kubernetes.io/hostname": "b"}],
    )
    rng = random.Random(3)
    guard = _pod(rng, 0, "anti", app="a")  # refuses pods labelled app=a on its node
    moved = _pod(rng, 1, "plain", app="a")
    demands = [parse_pod(p, "pod").demand(state.resources) for p in (guard, moved)]
    profile = load_strategy("kube-default")
    allowed = np.array([False, True])
    needs: dict[int, Need] = {}
    state.bind(0, demands[1])  # the moved pod on the candidate, nothing on b: it fits there
    assert leftover(state, profile, demands, [(0, 1)], allowed, SHAPES, 0.0, needs=needs) == []
    state.bind(1, demands[0])  # the guard on b: its anti-affinity refuses the moved pod
    for fast in (False, True):
        left = leftover(state, profile, demands, [(0, 1)], allowed, SHAPES, 0.0, fast=fast,
                        needs=needs)  # fmt: skip
        assert [dict(m) for m in left] == [demands[1].request_map]


def test_a_try_lost_before_any_filter_reads_the_pods_leaves_the_state_untouched() -> None:
    """The fast placement changes the state (unbinds the moved pods, binds the placed ones)
    only once a filter that reads the placed pods is to run: in a try whose only pod, with a
    DoNotSchedule spread, finds no staying node with room, the spread filter never runs, and the
    pod index sees no bind nor unbind (the plain path unbinds the pod and binds it back). The
    shape holds the pod, so the room's pre-check does not answer first."""
    state = ClusterState.from_nodes(
        ["a", "b"],
        [
            {"cpu": 8000, "memory": 16 << 30, "pods": 110},
            {"cpu": 1000, "memory": 8 << 30, "pods": 110},
        ],
        labels=[{"zone": "z1"}, {"zone": "z2"}],
    )
    rng = random.Random(5)
    big = _pod(rng, 0, "spread", app="a")
    big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "6", "memory": "1Gi"}
    demands = [parse_pod(big, "pod").demand(state.resources)]
    state.bind(0, demands[0])
    index = state.pod_index
    assert index is not None
    version = index.version
    small = [Shape("medium", {"cpu": 6000, "memory": 8 << 30, "pods": 110}, 1.0)]
    allowed = np.array([False, True])
    for fast in (True, False):
        left = leftover(state, load_strategy("kube-default"), demands, [(0, 0)], allowed, small,
                        0.0, fast=fast, needs={})  # fmt: skip
        assert [dict(m) for m in left] == [demands[0].request_map]
        if fast:  # the plain path unbinds and binds it back: two changes
            assert index.version == version
    assert index.version == version + 2

"""Headroom per pod shape (``nightly/headroom_count.py``): copies that fit, by the filters.

Facts: hand-explainable clusters written as ``analyzer score`` scenarios (``build_scenario``, the
same reading of nodes, bound pods and the incoming pod), and exactness against a reference loop
written here: bind one copy at a time where ``analyzer score``'s evaluation puts it (the
profile's filters and scores, ties by the same seeded draw) until none fits, and count the
refused nodes by the first filter that refuses each, as kube-scheduler's FitError does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzer.nightly.headroom import ObservedPlacement
from analyzer.nightly.headroom_count import count_copies
from analyzer.nightly.headroom_shapes import HeadroomShape, common_shapes
from analyzer.scheduling.framework import Profile, select
from analyzer.scheduling.scenario import build_scenario
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None, **spec: Any) -> Any:
    """A Node with 4 cores, 8Gi and 110 pods allocatable unless told otherwise."""
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def bound(name: str, on: str, cpu: str) -> Any:
    """A running pod on ``on`` requesting ``cpu``."""
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": on,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def incoming(cpu: str = "1", memory: str = "256Mi", **spec: Any) -> Any:
    """The shape as a Pod."""
    requests = {"cpu": cpu, "memory": memory}
    return {
        "metadata": {"name": "shape", "namespace": "default", "labels": {"app": "shape"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec},
    }


def scenario(nodes: list[Any], pods: list[Any], pod: Any) -> Any:
    """``analyzer score``'s reading of the cluster and the incoming pod."""
    return build_scenario({"nodes": nodes, "pods": pods, "pod": pod, "scheduler": "kube-default"})


def reference(
    profile: Profile, state: ClusterState, pod: PodDemand, present: np.ndarray, now: float
) -> tuple[int, list[tuple[str, int]]]:
    """One copy at a time through Profile.evaluate + select (seed 0), then the next copy's
    refusal counted per present node by its first refusing filter (each reason once)."""
    rng = np.random.default_rng(0)
    placed: list[int] = []
    while True:
        evaluation = profile.evaluate(state, pod, now, present)
        choice = select(evaluation, rng)
        if choice is None:
            break
        state.bind(choice, pod)
        placed.append(choice)
        assert len(placed) < 5000, "reference loop runaway"
    counts: dict[str, int] = {}
    for n in np.flatnonzero(present).tolist():
        for feasible, reasons in evaluation.reason_fns:
            if not feasible[n]:
                for reason in dict.fromkeys(reasons(n)):
                    counts[reason] = counts.get(reason, 0) + 1
                break
    for n in reversed(placed):
        state.unbind(n, pod)
    return len(placed), sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def test_four_two_zero_free_cores_take_six_one_core_copies() -> None:
    """Free cores 4, 2 and 0: a 1-core copy fits 4 + 2 + 0 = 6 times; the 7th finds every one
    of the 3 nodes short of cpu."""
    found = scenario(
        [node("a"), node("b"), node("c")],
        [bound("p1", "b", "2"), bound("p2", "c", "4")],
        incoming("1"),
    )
    fit = count_copies(found.profile, found.state, found.pod)
    assert (fit.copies, fit.per_node.tolist()) == (6, [4, 2, 0])
    assert fit.method == "closed form"
    assert fit.summary() == "Insufficient cpu (3)"
    assert fit.refusal is not None
    assert fit.refusal.message() == "0/3 nodes are available: 3 Insufficient cpu."


def test_taints_and_node_selector_are_respected() -> None:
    """Three empty 4-core nodes: one tainted, one without the selected label. A 1-core copy with
    nodeSelector pool=web fits only on the third (4 copies); the next is refused by the taint on
    one node, the selector on another and cpu on the third."""
    nodes = [
        node("tainted", labels={"pool": "web"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("other", labels={"pool": "batch"}),
        node("web", labels={"pool": "web"}),
    ]
    found = scenario(nodes, [], incoming("1", nodeSelector={"pool": "web"}))
    fit = count_copies(found.profile, found.state, found.pod)
    assert fit.per_node.tolist() == [0, 0, 4]
    assert dict(fit.reasons()) == {
        "node(s) had untolerated taint {gpu: }": 1,
        "node(s) didn't match Pod's node affinity/selector": 1,
        "Insufficient cpu": 1,
    }
    tolerant = incoming(
        "1",
        nodeSelector={"pool": "web"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    found = scenario(nodes, [], tolerant)
    assert count_copies(found.profile, found.state, found.pod).per_node.tolist() == [4, 0, 4]


def test_anti_affinity_copies_take_one_node_each_through_the_loop() -> None:
    """Required anti-affinity against its own label on the hostname: one copy per node, so 3
    copies on 3 roomy nodes; the loop, not the closed form, counts them; the state is unchanged
    afterwards."""
    term = {
        "labelSelector": {"matchLabels": {"app": "shape"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod = incoming(
        "1",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    found = scenario([node("a"), node("b"), node("c")], [], pod)
    before = found.state.requested.copy()
    fit = count_copies(found.profile, found.state, found.pod)
    assert (fit.copies, fit.method) == (3, "loop")
    assert fit.summary() == "node(s) didn't match pod anti-affinity rules (3)"
    assert (found.state.requested == before).all()


def test_no_pod_count_limit_stops_at_the_limit() -> None:
    """A shape only ever limited by cpu on nodes that allow 10 pods: the pod count stops it at
    10 per node ("Too many pods"); with a limit below the total the count is the limit, marked."""
    nodes = [
        dict(
            node(n, cpu="64"), status={"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "10"}}
        )
        for n in "ab"
    ]
    found = scenario(nodes, [], incoming("100m", "1Mi"))
    fit = count_copies(found.profile, found.state, found.pod)
    assert (fit.copies, fit.summary()) == (20, "Too many pods (2)")
    limited = count_copies(found.profile, found.state, found.pod, limit=15)
    assert (limited.copies, limited.limited) == (15, True)
    assert limited.summary().startswith("limit reached")


SEEDS = range(20)
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "shape"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_against_the_one_at_a_time_reference(seed: int) -> None:
    """20 generated clusters (4–14 nodes, pools with taints, zones, some spread/affinity pods):
    at the middle of the range, every common shape, a tolerating anti-affinity shape and a GPU
    shape bound to GPU nodes give the reference loop's count and the same refused-node counts."""
    rng = np.random.default_rng(seed)
    spec = SyntheticSpec(
        seed=seed,
        nodes=int(rng.integers(4, 15)),
        days=0.02,
        step=300,
        pods_per_node=float(rng.uniform(6, 14)),
        dedicated_pools=("general",) if seed % 2 else (),
        zones=2 if seed % 3 else 0,
        pod_constraints=seed % 7 == 1,
    )
    snapshot = generate(spec).snapshot
    placement = ObservedPlacement(snapshot)
    at = snapshot.start + (snapshot.end - snapshot.start) / 2
    state, present = placement.state_at(at)
    assert present.any()
    inp = placement.inp
    shapes = common_shapes(inp.demands, ~inp.pinned & (inp.real_node >= 0))
    assert shapes, "a generated cluster has app pods with requests"
    declared = HeadroomShape(
        "anti", "declared",
        incoming("500m", "512Mi", affinity=ANTI,
                 tolerations=[{"operator": "Exists"}]),
    )  # fmt: skip
    gpu_pod = incoming(
        "2", "8Gi",
        nodeSelector={"nvidia.com/gpu.present": "true"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
    )  # fmt: skip
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    gpu = HeadroomShape("gpu", "declared", gpu_pod)
    profile = load_strategy("kube-default")
    now = pd.Timestamp(at).value / 1e9
    for shape in [*shapes, declared, gpu]:
        demand = shape.demand(state.resources)
        fit = count_copies(profile, state, demand, now=now, present=present)
        # the common shapes and the GPU shape carry no pod terms: closed form; anti loops
        assert fit.method == ("loop" if shape is declared else "closed form")
        expected = reference(profile, state, demand, present, now)
        assert (fit.copies, sorted(fit.reasons(), key=lambda i: (-i[1], i[0]))) == expected, (
            shape.name
        )
        assert int(fit.per_node[~present].sum()) == 0


def test_moving_the_state_between_instants_equals_building_it_afresh() -> None:
    """``state_at`` moves one state from instant to instant (unbinding pods that ended, binding
    those that started); after a day of hourly moves it holds exactly what a fresh placement
    binds at the last instant: the same requests, pod counts and placed pods per node."""
    snapshot = generate(SyntheticSpec(seed=2, nodes=5, days=0.5, step=600, churn=4.0)).snapshot
    hours = pd.date_range(snapshot.start, snapshot.end, freq="1h")
    moved = ObservedPlacement(snapshot)
    for at in hours:
        state, _ = moved.state_at(at)
    fresh, _ = ObservedPlacement(snapshot).state_at(hours[-1])
    assert (state.requested == fresh.requested).all()
    assert (state.pod_count == fresh.pod_count).all()
    assert state.pod_index is not None and fresh.pod_index is not None
    assert [sorted(p.uid for p in pods) for pods in state.pod_index.pods] == [
        sorted(p.uid for p in pods) for pods in fresh.pod_index.pods
    ]
    # pods did come and go over those hours, so the moves were exercised
    first, _ = ObservedPlacement(snapshot).state_at(hours[0])
    assert not (first.pod_count == fresh.pod_count).all()

"""A light removal simulation through memoryviews (``RemovalSimulator.simulate`` with ``views``,
``Placement._record``, ``_hinted_views``, ``_place_views``) answers, moves and reads as the
plain one (``_quick``, ``_hinted_in``, ``_place_in``, ``_bind``): on seeded clusters with tainted
nodes and pods that do or do not tolerate them, with equal requests (one shape, two constraints
objects), random hints (a node, a node that refuses the pod, a gone node, none), full nodes and
candidates whose pods find no place.

Mutants it fails: ``_record``'s shape key without the constraints object's id (a pod that does
not tolerate the taint takes a tolerating pod's mask, and a tainted node); ``_place_views`` or
``_hinted_views`` without the static mask's check; the bind's cell offset without the width
(another node's requests raised); the walk's near loop without the pod-count check.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from autoscale_cases import node as node_doc
from autoscale_cases import pod as pod_doc

from analyzer.autoscaler import hinted
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.scenario import build as build_scenario
from analyzer.scheduling.sim_hints import Hints
from analyzer.scheduling.strategies import load_strategy

NOW = "2026-11-01T12:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}


def _docs(rng: np.random.Generator, count: int) -> dict[str, Any]:
    """A scenario of ``count`` nodes (some tainted, some nearly full in pods) whose pods draw
    their requests from a few shapes, some tolerating the taint."""
    nodes = []
    for i in range(count):
        facts: dict[str, Any] = {"cpu": 2000, "memory": 8000}
        if i > 1 and rng.random() < 0.35:
            facts["taints"] = [TAINT]
        doc = node_doc(f"n{i}", facts)
        doc["status"]["allocatable"]["pods"] = str(int(rng.integers(2, 7)))
        nodes.append(doc)
    shapes = [(300, 1000), (300, 1000), (700, 2500), (150, 400)]  # one shape twice as likely
    pods = []
    for i in range(count):
        for k in range(int(rng.integers(1, 4))):
            cpu, memory = shapes[int(rng.integers(0, len(shapes)))]
            doc = pod_doc(f"p{i}-{k}", {"cpu": cpu, "memory": memory, "owner": RS}, NOW, f"n{i}")
            if rng.random() < 0.4:
                doc["spec"]["tolerations"] = [TOLERATION]
            pods.append(doc)
    return {"autoscaler": "cluster-autoscaler", "now": NOW, "nodes": nodes, "pods": pods}


def _simulator(docs: dict[str, Any], hints: dict[str, str], fast: bool) -> RemovalSimulator:
    """A replay-like light simulator (kept static masks, first fit) with ``hints``; ``fast``:
    with kept memoryviews of its state."""
    scenario = build_scenario(docs)
    sim = RemovalSimulator(scenario.cluster, scenario.profile, scenario.options, scenario.now)
    sim.profile = load_strategy("kube-default")
    sim.static, sim.first_fit, sim.light = {}, True, True
    sim.skip = frozenset({"PodTopologySpread", "InterPodAffinity"})
    sim.hints = Hints()
    for key, name in hints.items():
        sim.hints.set(key, name)
    sim.walks = []
    sim.checkpoint()
    if fast:
        sim.views = hinted.Views()
    return sim


def test_the_fast_simulation_is_the_plain_one() -> None:
    rng = np.random.default_rng(11)
    seen = {"removable": 0, "NoPlaceToMovePods": 0, "hinted": 0, "records": 0}
    for case in range(60):
        count = int(rng.integers(4, 9))
        docs = _docs(rng, count)
        names = [f"n{i}" for i in range(count)]
        hints = {}
        for doc in docs["pods"]:
            draw = rng.random()
            if draw < 0.5:
                hints[doc["metadata"]["uid"] if "uid" in doc["metadata"] else
                      f"default/{doc['metadata']['name']}"] = (
                    names[int(rng.integers(0, count))] if draw < 0.4 else "gone"
                )  # fmt: skip
        plain, fast = _simulator(docs, hints, False), _simulator(docs, hints, True)
        order = [names[int(i)] for i in rng.permutation(count)[: int(rng.integers(2, 5))]]
        start = int(rng.integers(0, count))
        plain.last_index = fast.last_index = start
        for name in order:
            a = plain.simulate(name, PdbTracker([]))
            b = fast.simulate(name, PdbTracker([]))
            assert (a.removable, a.reason, a.destinations) == (
                b.removable,
                b.reason,
                b.destinations,
            ), (case, name)
            if a.removable:
                plain.drop(name)
                fast.drop(name)
                seen["removable"] += 1
            else:
                seen[a.reason] = seen.get(a.reason, 0) + 1
            assert np.array_equal(plain.state.requested, fast.state.requested), (case, name)
            assert np.array_equal(plain.state.pod_count, fast.state.pod_count), (case, name)
            assert plain.last_index == fast.last_index, (case, name)
            assert plain.look_log == fast.look_log and plain.hint_log == fast.hint_log
            assert plain.walks == fast.walks and plain.hinted == fast.hinted
        seen["hinted"] += fast.hinted
        assert fast.static is not None and plain.static is not None
        seen["records"] += len(fast.static.get(("records",), {}))
        assert ("records",) not in plain.static  # the plain path made none: it was compared
    assert seen["removable"] > 20 and seen["NoPlaceToMovePods"] > 10, seen
    assert seen["hinted"] > 20 and seen["records"] > 100, seen

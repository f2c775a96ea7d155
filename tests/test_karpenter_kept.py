"""Karpenter's consolidation answers kept between passes (``analyzer.replay.karpenter_kept``): an
answer taken again is the one the simulation gives now.

The simulation places the candidates' pods largest first, each on the first node with room.
First fit is not monotone: less room on a node can turn a lost try into one that passes (the
first pod no longer fits there, goes on, and leaves that node to a larger one). So an answer is
kept over a bind only where the bind's node took none of its pods, and over freed room only
where none of its pods fits that room. The states are ``test_karpenter_place``'s random small
clusters plus a hand-made case of the anomaly.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from test_karpenter_place import _case

from analyzer.autoscaler.nodepool import Shape
from analyzer.replay.karpenter_kept import KeptAnswers
from analyzer.replay.karpenter_simulate import Reads, leftover
from analyzer.scheduling import ClusterState, load_strategy
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.state import PodDemand

PROFILE = load_strategy("kube-default")
GIB = 1 << 30
# the pool's one shape (a pending pod it holds alone needs a node); no shape is cheaper than a
# candidate (``within`` empty): any pod left loses the try
POOL = [Shape("big", {"cpu": 64000, "memory": 256 * GIB, "pods": 110}, 10.0)]


def _demand(state: ClusterState, name: str, cpu: int, memory: int) -> PodDemand:
    pod = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": str(memory)}}}
            ]
        },
    }
    return parse_pod(pod, name).demand(state.resources)


def _anti(state: ClusterState, app: str) -> PodDemand:
    """A small pod with a required anti-affinity to ``app`` over zones (label ``zone``)."""
    term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": app}}}
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    meta = {"name": f"anti-{app}", "namespace": "default", "labels": {"app": "guard"}}
    return parse_pod({"metadata": meta, "spec": spec}, "anti").demand(state.resources)


def _try(state: ClusterState, demands: list[PodDemand], moves: Any, allowed: Any, **kw: Any) -> Any:
    reads = Reads()
    left = leftover(
        state, PROFILE, demands, moves, allowed, POOL, 0.0, reads=reads, needs={}, within=[], **kw
    )
    return left, reads


def _candidates(
    count: int, moves: Any, allowed: Any
) -> tuple[tuple[int, ...], Any, list[set[int]]]:
    """The candidates' slots, the nodes present (the staying ones and the candidates) and each
    node's pods (the moved ones on their candidates) of a random case's try."""
    slots = tuple(sorted({n for n, _ in moves}))
    active = np.ones(count, dtype=bool)
    active[[n for n in range(count) if not allowed[n] and n not in slots]] = False
    on_node: list[set[int]] = [set() for _ in range(count)]
    for n, p in moves:
        on_node[n].add(p)
    return slots, active, on_node


def _leave_or_join(
    change: str, rng: random.Random, staying: list[int], active: Any, allowed: Any, slots: Any
) -> None:
    """A random staying node leaves, or a random absent node (not a candidate) joins."""
    if change == "leave" and staying:
        node = staying.pop(rng.randrange(len(staying)))
        active[node] = allowed[node] = False
    elif change == "join":
        gone = [n for n in range(len(active)) if not active[n] and n not in slots]
        if gone:
            node = rng.choice(gone)
            active[node] = allowed[node] = True
            staying.append(node)


def _anomaly() -> tuple[ClusterState, list[PodDemand], KeptAnswers, Any, Any]:
    """Candidate c holds A (1.5 cores, 1 GiB) and B (0.5 core, 12 GiB); n0 has 1.9 cores and
    16 GiB, n1 2 cores and 2 GiB, n2 4 cores and 4 GiB. A goes first, onto n0; B then finds
    0.4 core on n0 and too little memory elsewhere: lost. No cheaper shape (``within`` empty)."""
    state = ClusterState.from_nodes(
        ["n0", "n1", "n2", "c"],
        [
            {"cpu": 1900, "memory": 16 * GIB, "pods": 110},
            {"cpu": 2000, "memory": 2 * GIB, "pods": 110},
            {"cpu": 4000, "memory": 4 * GIB, "pods": 110},
            {"cpu": 4000, "memory": 16 * GIB, "pods": 110},
        ],
    )
    demands = [_demand(state, "a", 1500, GIB), _demand(state, "b", 500, 12 * GIB)]
    demands.append(_demand(state, "x", 600, GIB))  # bound later
    for p in (0, 1):
        state.bind(3, demands[p])
    active = np.ones(4, dtype=bool)
    on_node: list[set[int]] = [set(), set(), set(), {0, 1}]
    kept = KeptAnswers(state, active, on_node, [False] * 3, demands, None)
    allowed = np.array([True, True, True, False])
    return state, demands, kept, active, allowed


def test_a_bind_on_a_node_that_took_a_pod_drops_the_answer_it_can_turn() -> None:
    state, demands, kept, _, allowed = _anomaly()
    moves = [(3, 0), (3, 1)]
    left, reads = _try(state, demands, moves, allowed)
    assert [m["memory"] for m in left] == [12 * GIB] and reads.rooms and reads.took == {0}
    kept.refresh((), (), ())
    kept.put((3,), "k", left, reads)
    state.bind(0, demands[2])  # 0.6 core on n0: A no longer fits there, goes to n1; B takes n0
    kept.touch(0, False)
    assert _try(state, demands, moves, allowed)[0] == []  # the try passes now
    kept.refresh((), (), ())
    assert kept.get((3,), "k") is None


def test_a_bind_on_a_node_that_took_none_keeps_the_answer() -> None:
    state, demands, kept, _, allowed = _anomaly()
    moves = [(3, 0), (3, 1)]
    left, reads = _try(state, demands, moves, allowed)
    kept.refresh((), (), ())
    kept.put((3,), "k", left, reads)
    state.bind(2, demands[2])  # n2 took none of the pods
    kept.touch(2, False)
    kept.refresh((), (), ())
    assert kept.get((3,), "k") == left
    assert _try(state, demands, moves, allowed)[0] == left


def test_a_node_that_took_a_pod_leaving_drops_the_answer() -> None:
    state, demands, kept, active, allowed = _anomaly()
    moves = [(3, 0), (3, 1)]
    left, reads = _try(state, demands, moves, allowed)
    kept.refresh((), (), ())
    kept.put((3,), "k", left, reads)
    active[0] = False
    kept.refresh((), (), ())
    assert kept.get((3,), "k") is None
    kept.put((3,), "k", left, reads)
    kept.refresh({0}, (), ())  # n0 being disrupted: no destination any more
    assert kept.get((3,), "k") is None


def test_a_kept_answer_is_the_simulations_answer_now() -> None:
    """Random states, random changes (binds, unbinds, a node leaving or joining, a pod with a
    required anti-affinity over zones bound): every answer still kept after ``refresh`` is what
    the simulation gives on the changed state."""
    outcomes = {"kept": 0, "dropped": 0}
    for seed in range(400):
        state, demands, moves, allowed, pending, inflight = _case(seed)
        if not moves:
            continue
        rng = random.Random(seed)
        count = state.node_count
        slots, active, on_node = _candidates(count, moves, allowed)
        extra = [_demand(state, f"e{i}", rng.choice([250, 500, 1000]), GIB) for i in range(3)]
        # and a pod whose required anti-affinity over zones refuses app=a or app=b pods
        extra.append(_anti(state, rng.choice(["a", "b"])))
        everyone = [*demands, *extra]
        launching = [] if inflight is None else np.flatnonzero(inflight & ~allowed).tolist()
        kept = KeptAnswers(state, active, on_node, [False] * len(everyone), everyone, None)
        staying = [n for n in range(count) if allowed[n]]
        held = []  # extra pods bound before the answer (unbound later: freed room)
        for i in range(2):
            node = rng.choice(staying) if staying else None
            if node is not None and state.pod_count[node] < state.allowed_pods[node]:
                state.bind(node, extra[i])
                held.append((node, len(demands) + i))
        kept.refresh((), launching, pending)
        left, reads = _try(state, everyone, moves, allowed, pending=pending, inflight=inflight)
        if not left:
            continue
        kept.put(slots, "k", left, reads)
        for _ in range(rng.randint(1, 3)):
            change = rng.choice(["bind", "unbind", "leave", "join", "anti"])
            if change in ("bind", "anti") and staying:
                node = rng.choice(staying)
                if state.pod_count[node] < state.allowed_pods[node]:
                    state.bind(node, extra[2 if change == "bind" else 3])
                    kept.touch(node, False)
            elif change == "unbind" and held:
                node, pod = held.pop()
                state.unbind(node, everyone[pod])
                kept.touch(node, True)
            elif change in ("leave", "join"):
                _leave_or_join(change, rng, staying, active, allowed, slots)
        kept.refresh((), launching, pending)
        again = kept.get(slots, "k")
        if again is None:
            outcomes["dropped"] += 1
            continue
        outcomes["kept"] += 1
        fresh, _ = _try(state, everyone, moves, allowed, pending=pending, inflight=inflight)
        assert bool(fresh) == bool(again), seed  # within []: any pod left loses the try
    assert outcomes["kept"] > 20 and outcomes["dropped"] > 20, outcomes


def test_an_answer_that_read_spreading_is_dropped_by_a_bind_anywhere() -> None:
    """Pod s moves from c and spreads over zones (maxSkew 1, DoNotSchedule): z1 (node a, room)
    holds one pod of its app, z2 (node b, 1 core left) none, so on a the skew would be 2: lost.
    A pod of the app bound on b, which took none of the pods, evens the zones: s fits a now."""
    state = ClusterState.from_nodes(
        ["a", "b", "c"],
        [
            {"cpu": 8000, "memory": 16 * GIB, "pods": 110},
            {"cpu": 1000, "memory": 16 * GIB, "pods": 110},
            {"cpu": 8000, "memory": 16 * GIB, "pods": 110},
        ],
        labels=[{"zone": "z1"}, {"zone": "z2"}, {}],
    )

    def pod(name: str, cpu: int) -> PodDemand:
        spec = {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "s"}},
                }
            ],
        }
        meta = {"name": name, "namespace": "default", "labels": {"app": "s"}}
        return parse_pod({"metadata": meta, "spec": spec}, name).demand(state.resources)

    demands = [pod("s", 2000), pod("on-a", 500), pod("q", 500)]
    state.bind(2, demands[0])
    state.bind(0, demands[1])
    active = np.ones(3, dtype=bool)
    kept = KeptAnswers(state, active, [set(), set(), {0}], [False] * 3, demands, None)
    allowed = np.array([True, True, False])
    left, reads = _try(state, demands, [(2, 0)], allowed)
    assert left and not reads.rooms  # it read the placed pods' labels, not only room
    kept.refresh((), (), ())
    kept.put((2,), "k", left, reads)
    state.bind(1, demands[2])
    kept.touch(1, False)
    assert _try(state, demands, [(2, 0)], allowed)[0] == []
    kept.refresh((), (), ())
    assert kept.get((2,), "k") is None


def test_room_freed_for_the_pod_left_over_drops_the_answer() -> None:
    """B (12 GiB) finds no node: n0 has 16 GiB less a 6 GiB pod. That pod leaving frees the
    room B needs; a pod leaving n1 (2 GiB: B fits there whatever) does not."""
    state, demands, kept, _, allowed = _anomaly()
    other = _demand(state, "y", 100, GIB)
    demands.append(other)
    state.bind(0, demands[2])
    extra = _demand(state, "z", 100, 6 * GIB)
    demands.append(extra)
    state.bind(0, extra)
    state.bind(1, other)
    moves = [(3, 1)]
    left, reads = _try(state, demands, moves, allowed)
    assert [m["memory"] for m in left] == [12 * GIB] and reads.tried == [(1, -1)]
    kept.refresh((), (), ())
    kept.put((3,), "k", left, reads)
    state.unbind(1, other)
    kept.touch(1, True)
    kept.refresh((), (), ())
    assert kept.get((3,), "k") == left == _try(state, demands, moves, allowed)[0]
    state.unbind(0, extra)
    kept.touch(0, True)
    assert _try(state, demands, moves, allowed)[0] == []
    kept.refresh((), (), ())
    assert kept.get((3,), "k") is None


def test_a_pod_with_anti_affinity_placed_anywhere_drops_an_answer_that_skipped_the_check() -> None:
    """``_anomaly``'s first fit, with zones: n0 in z1, n1 and n2 in z2, and n3 (z1, no room for
    A or B). While no placed pod has affinity terms the simulation leaves InterPodAffinity out
    for A and B (they have none), so their answer reads room only: A on n0, B lost. Then x, with
    a required anti-affinity to app=a over zones, is bound on n3, a node that took none of their
    pods: A may not go to z1 any more, goes to n1, and B takes n0: the try passes. The kept
    answer must go."""
    state = ClusterState.from_nodes(
        ["n0", "n1", "n2", "c", "n3"],
        [
            {"cpu": 1900, "memory": 16 * GIB, "pods": 110},
            {"cpu": 2000, "memory": 2 * GIB, "pods": 110},
            {"cpu": 4000, "memory": 4 * GIB, "pods": 110},
            {"cpu": 4000, "memory": 16 * GIB, "pods": 110},
            {"cpu": 300, "memory": GIB, "pods": 110},
        ],
        labels=[{"zone": "z1"}, {"zone": "z2"}, {"zone": "z2"}, {"zone": "z2"}, {"zone": "z1"}],
    )

    def pod(name: str, cpu: int, memory: int, app: str, anti: str | None = None) -> PodDemand:
        spec: dict[str, Any] = {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": str(memory)}}}
            ]
        }
        if anti is not None:
            term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": anti}}}
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        meta = {"name": name, "namespace": "default", "labels": {"app": app}}
        return parse_pod({"metadata": meta, "spec": spec}, name).demand(state.resources)

    demands = [pod("a", 1500, GIB, "a"), pod("b", 500, 12 * GIB, "b"), pod("x", 100, GIB, "x", "a")]
    for p in (0, 1):
        state.bind(3, demands[p])
    active = np.ones(5, dtype=bool)
    on_node: list[set[int]] = [set(), set(), set(), {0, 1}, set()]
    kept = KeptAnswers(state, active, on_node, [False] * 3, demands, None)
    allowed = np.array([True, True, True, False, True])
    moves = [(3, 0), (3, 1)]
    left, reads = _try(state, demands, moves, allowed)
    assert [m["memory"] for m in left] == [12 * GIB] and reads.rooms and reads.took == {0}
    kept.refresh((), (), ())
    kept.put((3,), "k", left, reads)
    state.bind(4, demands[2])
    kept.touch(4, False)
    assert _try(state, demands, moves, allowed)[0] == []  # the try passes now
    kept.refresh((), (), ())
    assert kept.get((3,), "k") is None

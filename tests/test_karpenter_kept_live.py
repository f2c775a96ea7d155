"""Karpenter's consolidation answers that read the placed pods (``Reads.live``: spreading, pod
(anti-)affinity, host ports), kept between passes over the binds and unbinds they do not read.

Such an answer read, beside the room, the pods its tried pods' spread selectors and required
terms match, and the placed pods' required anti-affinity terms and host ports. A pod of another
app bound anywhere changes none of that; a pod of the spread app, a pod whose anti-affinity
selects a tried pod, or a second host-port pod may. The states are ``test_karpenter_place``'s
random small clusters (even seeds: pods with host ports, zone spreading and hostname
anti-affinity, apps ``a`` and ``b``).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from test_karpenter_kept import POOL, _anti, _candidates, _demand, _leave_or_join, _try
from test_karpenter_place import _case, _pod

from analyzer.autoscaler.karpenter import summed
from analyzer.replay.karpenter_kept import KeptAnswers
from analyzer.replay.karpenter_provision import holds
from analyzer.replay.karpenter_simulate import Reads, leftover
from analyzer.scheduling import ClusterState, load_strategy
from analyzer.scheduling.nominated_holds import HOLD
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.state import PodDemand

GIB = 1 << 30
PROFILE = load_strategy("kube-default")


def _replaced(
    state: ClusterState, demands: list[PodDemand], moves: Any, allowed: Any, **kw: Any
) -> Any:
    """A try whose replacement may take the pool's shape (``POOL``'s 64 cores): pods may be
    left over without losing it, and then every pod is tried (the whole list is the answer)."""
    reads = Reads()
    left = leftover(state, PROFILE, demands, moves, allowed, POOL, 0.0, reads=reads, needs={}, **kw)
    return left, reads


def _lost(left: list[Any]) -> bool:
    """Whether no shape a replacement may take holds the pods left (the try stopped there)."""
    return bool(left) and not holds(POOL[0], {**summed(left), "pods": len(left)})


def _spreading(state: ClusterState, name: str, app: str, cpu: int) -> PodDemand:
    """A pod of ``app`` spread over zones (maxSkew 1, DoNotSchedule) by its app label."""
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ],
    }
    meta = {"name": name, "namespace": "default", "labels": {"app": app}}
    return parse_pod({"metadata": meta, "spec": spec}, name).demand(state.resources)


def _zones() -> tuple[ClusterState, list[PodDemand], KeptAnswers, Any]:
    """Pod s (app s) moves from c and spreads over zones: z1 (node a, room) holds one pod of
    app s, z2 (node b, 1 core left) none, so on a the skew would be 2: the try is lost, and
    its answer read the app's pods (live). Pods 3 and 4 are bound later."""
    state = ClusterState.from_nodes(
        ["a", "b", "c"],
        [
            {"cpu": 8000, "memory": 16 * GIB, "pods": 110},
            {"cpu": 1000, "memory": 16 * GIB, "pods": 110},
            {"cpu": 8000, "memory": 16 * GIB, "pods": 110},
        ],
        labels=[{"zone": "z1"}, {"zone": "z2"}, {}],
    )
    demands = [_spreading(state, "s", "s", 2000), _spreading(state, "on-a", "s", 500)]
    demands.append(_spreading(state, "q", "s", 500))  # of the app
    demands.append(_spreading(state, "other", "t", 500))  # of another app
    state.bind(2, demands[0])
    state.bind(0, demands[1])
    active = np.ones(3, dtype=bool)
    kept = KeptAnswers(state, active, [set(), set(), {0}], [False] * 4, demands, None)
    return state, demands, kept, np.array([True, True, False])


def test_a_pod_of_another_app_bound_keeps_the_answer_that_read_spreading() -> None:
    state, demands, kept, allowed = _zones()
    left, reads = _try(state, demands, [(2, 0)], allowed)
    assert left and reads.live and not reads.rooms
    kept.refresh((), (), ())
    kept.put((2,), "k", left, reads)
    state.bind(1, demands[3])  # app t on b, which took none of the pods: s still lost
    kept.touch(1, False, 3)
    kept.refresh((), (), ())
    assert kept.get((2,), "k") == left == _try(state, demands, [(2, 0)], allowed)[0]


def test_a_pod_of_the_spread_app_bound_drops_the_answer() -> None:
    state, demands, kept, allowed = _zones()
    left, reads = _try(state, demands, [(2, 0)], allowed)
    kept.refresh((), (), ())
    kept.put((2,), "k", left, reads)
    state.bind(1, demands[2])  # app s on b evens the zones: s fits a now
    kept.touch(1, False, 2)
    assert _try(state, demands, [(2, 0)], allowed)[0] == []
    kept.refresh((), (), ())
    assert kept.get((2,), "k") is None


def test_a_hold_keeps_and_a_pod_not_named_drops_the_answer() -> None:
    """A nominated pod's hold changes room and a pod slot only (``HOLD``); a touch that names
    no pod may have been any pod."""
    for pod, kept_after in ((HOLD, True), (-1, False)):
        state, demands, kept, allowed = _zones()
        left, reads = _try(state, demands, [(2, 0)], allowed)
        kept.refresh((), (), ())
        kept.put((2,), "k", left, reads)
        state.reserve(1, demands[3])
        kept.touch(1, False, pod)
        kept.refresh((), (), ())
        assert (kept.get((2,), "k") == left) is kept_after


def test_a_kept_live_answer_is_the_simulations_answer_now() -> None:
    """Random states with spreading, anti-affinity and host-port pods; random changes (pods of
    the apps a and b or of app c bound or unbound, a pod whose anti-affinity selects app a or b
    bound, a host-port pod bound, a node leaving or joining): every answer still kept after
    ``refresh`` is the simulation's answer on the changed state, and answers that read the
    placed pods are kept over some changes and dropped over others. A lost try's list is the
    pods left until it was lost, which the room's pre-check gives whole: two lost answers are
    the same decision (no replacement); any other answer must be the same list."""
    outcomes = {"kept": 0, "dropped": 0, "replaced": 0}
    for seed in range(0, 1200, 2):
        state, demands, moves, allowed, pending, inflight = _case(seed)
        if not moves:
            continue
        rng = random.Random(seed)
        count = state.node_count
        slots, active, on_node = _candidates(count, moves, allowed)
        state.present = active  # (as the replay's: spreading's domains are the nodes present)
        extra = [
            _demand(state, "e0", rng.choice([250, 500]), GIB),  # app-less, held before
            parse_pod(_pod(rng, 100, "plain", "c"), "c").demand(state.resources),
            parse_pod(_pod(rng, 101, "plain", rng.choice("ab")), "ab").demand(state.resources),
            _anti(state, rng.choice(["a", "b"])),
            parse_pod(_pod(rng, 102, "port", "c"), "port").demand(state.resources),
        ]
        everyone = [*demands, *extra]
        base = len(demands)
        launching = [] if inflight is None else np.flatnonzero(inflight & ~allowed).tolist()
        kept = KeptAnswers(state, active, on_node, [False] * len(everyone), everyone, None)
        staying = [n for n in range(count) if allowed[n]]
        held = []
        node = rng.choice(staying) if staying else None
        if node is not None and state.pod_count[node] < state.allowed_pods[node]:
            state.bind(node, extra[0])
            held.append((node, base))
        kept.refresh((), launching, pending)
        tried = _replaced if rng.random() < 0.5 else _try
        left, reads = tried(state, everyone, moves, allowed, pending=pending, inflight=inflight)
        if not left or not reads.live:
            continue
        kept.put(slots, "k", left, reads)
        for _ in range(rng.randint(1, 3)):
            change = rng.choice(
                ["other", "other", "app", "anti", "port", "unbind", "leave", "join"]
            )
            pod = {"other": 1, "app": 2, "anti": 3, "port": 4}.get(change)
            if pod is not None and staying:
                node = rng.choice(staying)
                if state.pod_count[node] < state.allowed_pods[node]:
                    state.bind(node, everyone[base + pod])
                    kept.touch(node, False, base + pod)
            elif change == "unbind" and held:
                node, p = held.pop()
                state.unbind(node, everyone[p])
                kept.touch(node, True, p)
            elif change in ("leave", "join"):
                _leave_or_join(change, rng, staying, active, allowed, slots)
        kept.refresh((), launching, pending)
        again = kept.get(slots, "k")
        if again is None:
            outcomes["dropped"] += 1
            continue
        outcomes["kept"] += 1
        fresh, _ = tried(state, everyone, moves, allowed, pending=pending, inflight=inflight)
        if tried is _try:  # (no replacement: any pod left loses the try)
            assert bool(fresh) == bool(again), seed
        else:
            assert _lost(fresh) == _lost(again), seed
            if not _lost(fresh):
                outcomes["replaced"] += 1
                assert fresh == again, seed
    assert outcomes["kept"] > 20 and outcomes["dropped"] > 20, outcomes
    assert outcomes["replaced"] > 5, outcomes


def test_a_node_leaving_drops_the_answer_that_read_spreading() -> None:
    """Node b (zone z2, no room, no pod of app s) leaves: z1 is then the only domain, and s
    fits a with skew 0. b took none of the pods and freed no room a pod could use, so only
    spreading's domains tell that the answer changed."""
    state, demands, kept, allowed = _zones()
    state.present = np.ones(3, dtype=bool)
    left, reads = _try(state, demands, [(2, 0)], allowed)
    kept.refresh((), (), ())
    kept.put((2,), "k", left, reads)
    state.present[1] = kept.active[1] = allowed[1] = False
    assert _try(state, demands, [(2, 0)], allowed)[0] == []
    kept.refresh((), (), ())
    assert kept.get((2,), "k") is None

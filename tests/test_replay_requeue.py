"""A waiting pod that PodTopologySpread or InterPodAffinity refused is retried when a pod those
plugins read moves, not only when room grows on a node it fits (``analyzer.scheduling.requeue``).

kube-scheduler requeues such a pod on the event through the plugins' queueing hints (a deleted
pod matching its required anti-affinity, an added pod matching its required affinity, a pod its
DoNotSchedule constraint selects added or deleted). Each case below is a three-node cluster in two
zones where the move happens on a node the waiting pod cannot use, so only the hint can bring it
in; the expected node and time follow from the filters by hand. The pods that shape the cluster
are static pods (``owner_kind`` Node): every strategy keeps them on their own node.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from replay_fixtures import N, P, build

from analyzer.core.resources import Container, PodSpecResources
from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import PodDemand, load_strategy, make_demand
from analyzer.scheduling.affinity_types import parse_pod_affinity
from analyzer.scheduling.kube_objects import Namespace
from analyzer.scheduling.requeue import Requeue, may_admit
from analyzer.scheduling.spread_types import parse_spread_constraints
from analyzer.sources.catalog import GIB, Template
from analyzer.sources.kube_placement import kube_placer
from analyzer.sources.lifecycle import Pod
from analyzer.sources.lifecycle_loop import run_lifecycles
from analyzer.sources.placement import ClusterState

ZONE = "topology.kubernetes.io/zone"
MINUTE = 60 * 10**9


def _labels(zone: str, name: str) -> str:
    return json.dumps({ZONE: zone, "kubernetes.io/hostname": name})


NODES = [N("n1", labels=_labels("a", "n1")), N("n2", labels=_labels("a", "n2")),
         N("n3", labels=_labels("b", "n3"))]  # fmt: skip


def _app(name: str) -> str:
    return json.dumps({"app": name})


def _static(
    uid: str, node: str, cpu: int, app: str, start: float = 0, end: float | None = None
) -> P:
    return P(uid, node, cpu=cpu, labels=_app(app), owner="Node", start=start, end=end)


def _snapshot(pods: list[P], cells: dict[str, dict[str, str]]) -> Snapshot:
    snapshot = build(NODES, pods, minutes=30)
    for column in ("affinity", "topology_spread"):
        default = "{}" if column == "affinity" else "[]"
        snapshot.pods[column] = [
            cells.get(u, {}).get(column, default) for u in snapshot.pods["uid"]
        ]
    return snapshot


def _placed(snapshot: Snapshot, strategy: str, uid: str) -> tuple[str | None, float]:
    """The waiting pod's node and its bind minute (inf: never bound)."""
    inp = prepare(snapshot)
    result = replay(inp, Strategy(strategy, load_strategy(strategy)), seed=0)
    row = list(snapshot.pods["uid"]).index(uid)
    node = int(result.node[row])
    if node < 0:
        return None, float("inf")
    minute = (int(result.placed_at[row]) - int(inp.start)) / MINUTE
    return str(inp.node_names[node]), minute


def _term(app: str) -> dict[str, object]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": ZONE}


STRATEGIES = ["kube-default", "most-allocated"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_deleted_pod_lifts_a_zone_anti_affinity_on_a_node_that_did_not_change(
    strategy: str,
) -> None:
    # p (2 cores) keeps away from app=w per zone: w1 on n1 (zone a), w3 on n3 (zone b), and
    # n1, n3 are full besides (3 + 0.5 of 4 cores). At 5:00 w1 ends: n1 has 1 core free, too
    # little for p, but zone a holds no w pod any more, so the empty n2 takes p then (before:
    # p waited to the end, no node it fits having gained room)
    pods = [_static("f1", "n1", 3000, "f"), _static("w1", "n1", 500, "w", end=5),
            _static("f3", "n3", 3000, "f"), _static("w3", "n3", 500, "w"),
            P("p", None, cpu=2000, start=1, labels=_app("p"))]  # fmt: skip
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("w")]}}
    snapshot = _snapshot(pods, {"p": {"affinity": json.dumps(anti)}})
    assert _placed(snapshot, strategy, "p") == ("n2", 5.0)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pod_bound_in_the_same_pass_satisfies_a_waiting_required_affinity(
    strategy: str,
) -> None:
    # p needs an app=x pod in its zone and does not match its own term (not the first of its
    # group): no node until x arrives on n3 (zone b) at 5:00. Nothing ends then, so only x's
    # bind, in the same pass, can bring p back; zone b is n3 alone, 3 of its 4 cores free
    pods = [_static("x", "n3", 1000, "x", start=5),
            P("p", None, cpu=2000, start=1, labels=_app("p"))]  # fmt: skip
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("x")]}}
    snapshot = _snapshot(pods, {"p": {"affinity": json.dumps(affinity)}})
    assert _placed(snapshot, strategy, "p") == ("n3", 5.0)


def _spread(app: str) -> str:
    return json.dumps([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": app}}}])  # fmt: skip


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_deleted_pod_evens_a_zone_spread_on_a_node_that_did_not_change(strategy: str) -> None:
    # p (app=s) spreads over zones with maxSkew 1: zone a holds s1 (on n1), zone b none and
    # n3 is full: in zone a the skew would be 2 - 0, so p waits. At 5:00 s1 ends: zone a counts
    # 0 (skew 1 - 0), n1 has 1 core free, too little for p; the empty n2 takes it
    pods = [_static("f1", "n1", 3000, "f"), _static("s1", "n1", 500, "s", end=5),
            _static("f3", "n3", 4000, "f"),
            P("p", None, cpu=2000, start=1, labels=_app("s"))]  # fmt: skip
    snapshot = _snapshot(pods, {"p": {"topology_spread": _spread("s")}})
    assert _placed(snapshot, strategy, "p") == ("n2", 5.0)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_bound_pod_raises_the_spread_minimum(strategy: str) -> None:
    # as above, but s1 stays; s3 (a static pod asking no cpu) binds to the full n3 at 5:00:
    # zone b counts 1, the minimum is 1, and zone a may take p (skew 1 + 1 - 1 = 1): n2, as
    # n1 has 0.5 core free
    pods = [_static("f1", "n1", 3000, "f"), _static("s1", "n1", 500, "s"),
            _static("f3", "n3", 4000, "f"), _static("s3", "n3", 0, "s", start=5),
            P("p", None, cpu=2000, start=1, labels=_app("s"))]  # fmt: skip
    snapshot = _snapshot(pods, {"p": {"topology_spread": _spread("s")}})
    assert _placed(snapshot, strategy, "p") == ("n2", 5.0)


# ---------------------------------------------------------------- the rule itself


def _demand(
    namespace: str, app: str, *, spread: str = "[]", affinity: dict[str, Any] | None = None
) -> PodDemand:
    labels = {"app": app}
    spec = {"topologySpreadConstraints": json.loads(spread)}
    terms = None
    if affinity is not None:
        terms = parse_pod_affinity({"affinity": affinity}, "pod", namespace, labels)
    return make_demand(("cpu",), {"cpu": 100}, {"cpu": 100}, name=app, namespace=namespace, labels=labels,
                       spread=parse_spread_constraints(spec, "pod"), affinity=terms)  # fmt: skip


NO_NAMESPACES: dict[str, Namespace] = {}  # no Namespace objects: no namespace labels


def test_may_admit_reads_the_plugins_inputs_only() -> None:
    hard = _demand("shop", "s", spread=_spread("s"))
    soft = _demand("shop", "s", spread=_spread("s").replace("DoNotSchedule", "ScheduleAnyway"))
    same, other_ns, other_app = _demand("shop", "s"), _demand("web", "s"), _demand("shop", "t")
    assert may_admit(hard, same, NO_NAMESPACES)
    assert not may_admit(hard, other_ns, NO_NAMESPACES)  # spread: one namespace
    assert not may_admit(hard, other_app, NO_NAMESPACES)
    assert not may_admit(soft, same, NO_NAMESPACES)  # never refuses a node
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("w")]}}
    keeps_away = _demand("shop", "p", affinity=anti)
    assert may_admit(keeps_away, _demand("shop", "w"), NO_NAMESPACES)
    assert not may_admit(keeps_away, _demand("web", "w"), NO_NAMESPACES)
    # a placed pod's required anti-affinity that matches the waiting pod
    assert may_admit(_demand("shop", "w"), _demand("shop", "q", affinity={
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("w")]}}),
        NO_NAMESPACES)  # fmt: skip
    preferred = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": _term("w")}]}}  # fmt: skip
    assert not may_admit(
        _demand("shop", "p", affinity=preferred), _demand("shop", "w"), NO_NAMESPACES
    )


def test_a_move_before_the_groups_last_try_does_not_count() -> None:
    waiting = _demand("shop", "s", spread=_spread("s"))
    mover = _demand("shop", "s")
    demands = [waiting, mover]
    rule = Requeue(NO_NAMESPACES)
    rule.note(mover)
    rule.tried("g")  # the group failed after the move: it saw it
    assert rule.admitted([0], demands.__getitem__, lambda _p: "g") == []
    rule.note(mover)
    assert rule.admitted([0], demands.__getitem__, lambda _p: "g") == [0]
    assert not rule.pending  # the record starts again
    rule.nodes_changed()  # a node joined: DoNotSchedule constraints read the domains
    assert rule.admitted([0, 1], demands.__getitem__, lambda p: p) == [0]


# ---------------------------------------------------------------- the generator's loop


def _gen_pod(uid: str, cpu: int, app: str, created: int, *, pin: int = -1,
             deleted: int | None = None) -> Pod:  # fmt: skip
    container = Container(name="app", requests={"cpu": cpu, "memory": GIB}, limits={})
    kind = "DaemonSet" if pin >= 0 else "ReplicaSet"
    template = Template(app, "Deployment", "shop", (container,), cpu_use=100, mem_use=GIB)
    pod = Pod(uid=uid, name=uid, template=template, owner_kind=kind, owner_name=f"{app}-rs",
              workload_kind="Deployment", workload_name=app, created=created, arrive=created + 1,
              spec=PodSpecResources(containers=template.containers), pin=pin)  # fmt: skip
    pod.deleted = deleted
    return pod


def test_the_generators_loop_retries_on_the_same_hint() -> None:
    # the first case in the generator (one queue semantics, ``queue_order``): the fixed pods
    # are DaemonSet pods on their node; w1 is deleted at 300 and p, waiting since 61, goes to n2
    alloc = np.array([[4000, 16 * GIB, 100 * GIB, 0, 110]] * 3, dtype=np.int64)
    state = ClusterState.empty(("n1", "n2", "n3"), ("general",) * 3, alloc)
    state.node_labels = tuple(_labels(z, n) for z, n in (("a", "n1"), ("a", "n2"), ("b", "n3")))
    pods = [_gen_pod("f1", 3000, "f", 10, pin=0), _gen_pod("w1", 500, "w", 10, pin=0, deleted=300),
            _gen_pod("f3", 3000, "f", 10, pin=2), _gen_pod("w3", 500, "w", 10, pin=2),
            _gen_pod("p", 2000, "p", 60)]  # fmt: skip
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("w")]}}

    def describe(pod: Pod) -> dict[str, str]:
        cells = {"labels": _app(pod.workload_name)}
        if pod.uid == "p":
            cells["affinity"] = json.dumps(anti)
        return cells

    run_lifecycles(pods, state, kube_placer("kube-default", seed=0), np.random.default_rng(0),
                   (0, 1000), describe=describe)  # fmt: skip
    by = {p.uid: p for p in pods}
    assert [by[u].node for u in ("f1", "w1", "f3", "w3")] == [0, 0, 2, 2]
    assert (by["p"].node, by["p"].scheduled) == (1, 300)

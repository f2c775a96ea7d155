"""Replays run PodTopologySpread and InterPodAffinity: a synthetic cluster with spread constraints
and pod (anti-)affinity, placed by the generator with the full v1 default profile, is reproduced pod
for pod by the replay of kube-default; the per-pod predicate that keeps the fast path is exact."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.topology import INERT, TopologyCheck, objects_of
from analyzer.scheduling import ClusterState, PodDemand, load_strategy, make_demand
from analyzer.scheduling.kube_objects import parse_objects
from analyzer.scheduling.label_selectors import LabelSelector
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.pod_cells import controller_from_owner, topology_from_cells
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.notes import NOT_MODELLED, topology_notes

SEED = 7
TOPOLOGY = (PodTopologySpread, InterPodAffinity)


@pytest.fixture(scope="module")
def constrained() -> tuple[Snapshot, ReplayInput]:
    """30 nodes in 3 zones, churn, spread constraints and pod (anti-)affinity; the generator's own
    placement (no ``place=``) is the kube-default profile with tie-break seed ``SEED``.

    Sized so that no pod waits, so every placement here is decided by the topology plugins and
    the resources, never by the queue (clusters with waits and preemption:
    tests/test_replay_reproduction.py). Every pod is placed when it arrives.
    """
    spec = SyntheticSpec(seed=SEED, nodes=30, days=1, step=300, churn=0.8, gpu_pool=False,
                         pending_fraction=0.0, zones=3, pod_constraints=True)  # fmt: skip
    snapshot = generate(spec).snapshot
    return snapshot, prepare(snapshot)


def _required_anti(snapshot: Snapshot) -> np.ndarray:
    return np.array(
        [
            "requiredDuringSchedulingIgnoredDuringExecution"
            in json.loads(text).get("podAntiAffinity", {})
            for text in snapshot.pods["affinity"]
        ]
    )


def _colocated(inp: ReplayInput, node: np.ndarray, among: np.ndarray, groups: list[str]) -> int:
    """Pairs of pods of one group (``among``) on one node at overlapping times."""
    pairs = 0
    chosen = np.flatnonzero(among & (node >= 0))
    for i, a in enumerate(chosen):
        for b in chosen[i + 1 :]:
            if groups[a] != groups[b] or node[a] != node[b]:
                continue
            # at one instant departures come before arrivals: touching intervals do not overlap
            if inp.arrival[a] < inp.departure[b] and inp.arrival[b] < inp.departure[a]:
                pairs += 1
    return pairs


def test_ground_truth_respects_required_pod_anti_affinity(
    constrained: tuple[Snapshot, ReplayInput],
) -> None:
    # checkout-api and session-cache have a required anti-affinity per hostname on their own
    # app label: no two of a workload's pods may ever share a node while both run
    snapshot, inp = constrained
    anti = _required_anti(snapshot)
    assert anti.sum() >= 20
    groups = [str(w) for w in snapshot.pods["workload_name"]]
    assert _colocated(inp, inp.real_node, anti, groups) == 0


def test_constrained_cluster_is_reproduced_pod_for_pod(
    constrained: tuple[Snapshot, ReplayInput],
) -> None:
    snapshot, inp = constrained
    assert (snapshot.pods["topology_spread"] != "[]").sum() >= 50
    result = replay(inp, Strategy("kube-default", load_strategy("kube-default")), seed=SEED)
    ran = inp.real_node >= 0
    assert ran.sum() > 200
    assert (result.node[ran] == inp.real_node[ran]).all()
    assert not result.waited[ran].any()


def test_topology_plugins_decide_placements_here(
    constrained: tuple[Snapshot, ReplayInput],
) -> None:
    # the same profile without PodTopologySpread and InterPodAffinity places pods elsewhere and
    # co-locates pods the required anti-affinity keeps apart: the plugins were in play
    snapshot, inp = constrained
    full = load_strategy("kube-default")
    bare = replace(
        full,
        filters=[f for f in full.filters if not isinstance(f, TOPOLOGY)],
        scorers=[w for w in full.scorers if not isinstance(w.plugin, TOPOLOGY)],
    )
    result = replay(inp, Strategy("resources-only", bare), seed=SEED)
    ran = inp.real_node >= 0
    moved = int((result.node[ran] != inp.real_node[ran]).sum())
    assert moved >= 10
    groups = [str(w) for w in snapshot.pods["workload_name"]]
    assert _colocated(inp, result.node, _required_anti(snapshot), groups) > 0


def test_only_pods_the_plugins_act_on_leave_the_fast_path(
    constrained: tuple[Snapshot, ReplayInput], monkeypatch: pytest.MonkeyPatch
) -> None:
    _snapshot, inp = constrained
    asked: list[bool] = []
    original = TopologyCheck.route

    def counting(
        self: TopologyCheck, state: ClusterState, pod: PodDemand
    ) -> tuple[str, LabelSelector | None]:
        answer = original(self, state, pod)
        asked.append(answer[0] != INERT)
        return answer

    monkeypatch.setattr(TopologyCheck, "route", counting)
    replay(inp, Strategy("kube-default", load_strategy("kube-default")), seed=SEED)
    # pods with terms (and pods placed pods' terms select) go to Profile.evaluate; the rest,
    # DaemonSet-free workloads without terms (reports, debug-toolbox, jobs), stay on the cache
    assert sum(asked) > 50
    assert len(asked) - sum(asked) > 20


def _state(zones: list[str]) -> ClusterState:
    names = [f"n{i}" for i in range(len(zones))]
    labels = [
        {"kubernetes.io/hostname": n, "topology.kubernetes.io/zone": z}
        for n, z in zip(names, zones, strict=True)
    ]
    alloc = [{"cpu": 4000, "memory": 8 << 30, "pods": 110} for _ in names]
    return ClusterState.from_nodes(names, alloc, labels=labels)


def _pod(
    state: ClusterState, name: str, app: str, affinity: str = "{}", spread: str = "[]"
) -> PodDemand:
    labels = {"app": app}
    constraints, terms = topology_from_cells(affinity, spread, "shop", labels, "pod")
    return make_demand(
        state.resources, {"cpu": 100}, {"cpu": 100, "memory": 200 << 20}, name=name,
        namespace="shop", labels=labels, spread=constraints, affinity=terms, uid=name,
    )  # fmt: skip


ANTI = json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
]}})  # fmt: skip


def test_predicate_follows_placed_terms_and_default_selectors() -> None:
    state = _state(["a", "a", "b"])
    check = TopologyCheck(load_strategy("kube-default"))
    plain_db = _pod(state, "db-1", "db")
    web = _pod(state, "web-1", "web")
    # nothing placed, no terms, nothing selects the pods: both plugins skip
    assert not check.needs_profile(state, plain_db) and not check.needs_profile(state, web)
    # the pod's own terms
    holder = _pod(state, "db-0", "db", affinity=ANTI)
    assert check.needs_profile(state, holder)
    # once it runs, its required anti-affinity selects app=db pods (Filter refuses its node),
    # not app=web ones
    state.bind(0, holder)
    assert check.needs_profile(state, plain_db)
    assert not check.needs_profile(state, web)
    evaluation = load_strategy("kube-default").evaluate(state, plain_db)
    assert evaluation.feasible.tolist() == [False, True, True]
    # a ReplicaSet selecting app=web gives web pods the System default constraints
    objects, _ = parse_objects(
        [{"kind": "ReplicaSet", "metadata": {"name": "web-rs", "namespace": "shop"},
          "spec": {"selector": {"matchLabels": {"app": "web"}}}}], "objects",
    )  # fmt: skip
    state.objects = objects
    fresh = TopologyCheck(load_strategy("kube-default"))
    controlled = replace(web, controller=None)
    assert fresh.needs_profile(state, controlled) is False  # no controller: only Services count
    owned = replace(web, controller=controller_from_owner("ReplicaSet", "web-rs"))
    assert fresh.needs_profile(state, owned)


def test_snapshot_objects_reach_the_state() -> None:
    # kube_objects.json's kept form (core.kube_objects.kept_objects) becomes the plugins' objects
    snap = generate(SyntheticSpec(seed=1, nodes=4, days=1, step=300, pod_constraints=True)).snapshot
    objects = objects_of(snap)
    assert "system-cluster-critical" in objects.priority_classes
    assert objects.pdbs
    # every ReplicaSet / StatefulSet owning a pod is kept, its selector selecting that pod
    pods = snap.pods
    for kind, name, ns, labels in zip(
        pods["owner_kind"], pods["owner_name"], pods["namespace"], pods["labels"], strict=True
    ):
        if kind not in ("ReplicaSet", "StatefulSet"):
            continue
        owned = objects.replica_sets if kind == "ReplicaSet" else objects.stateful_sets
        (found,) = [o for o in owned if (o.namespace, o.name) == (ns, name)]
        assert found.selector is not None and found.selector.matches(json.loads(labels))
    assert (
        len(objects.replica_sets)
        == pods[pods["owner_kind"] == "ReplicaSet"][["namespace", "owner_name"]]
        .drop_duplicates()
        .shape[0]
    )
    inp = prepare(snap)
    assert inp.fresh_state().objects.priority_classes == objects.priority_classes


def test_whatif_notes_say_what_the_replay_applied(
    constrained: tuple[Snapshot, ReplayInput],
) -> None:
    snapshot, _ = constrained
    kube = Strategy("kube-default", load_strategy("kube-default"))
    fgd = Strategy("fgd", load_strategy("fgd"))  # a GPU preset: no spread, no inter-pod affinity
    text = " ".join(topology_notes(snapshot, [kube, fgd]))
    spreading = int((snapshot.pods["topology_spread"] != "[]").sum())
    assert f"Topology spread constraints of {spreading:,} pods" in text
    # one strategy applies both plugins: named once; the constraints are the generator's
    assert "applied by kube-default (PodTopologySpread and InterPodAffinity)" in text
    assert (
        "(generated with the synthetic cluster)" in text and "Kubernetes objects) are" not in text
    )
    # the generator keeps its ReplicaSets and StatefulSets: default spreading for the pods they
    # own that have no constraints of their own
    pods = snapshot.pods
    owned = pods["owner_kind"].isin(["ReplicaSet", "StatefulSet"])
    defaulted = int((owned & (pods["topology_spread"] == "[]")).sum())
    assert 0 < defaulted < len(pods)
    assert f"Default spreading: {defaulted:,} pods without their own constraints" in text
    assert "StatefulSets (kube-scheduler's helper.DefaultSelector), so kube-default spread" in text
    bare = replace(snapshot, objects={})
    assert "not spread by default" in " ".join(topology_notes(bare, [kube]))
    assert "inter-pod affinity" not in NOT_MODELLED and "topology spread" not in NOT_MODELLED
    plain = generate(SyntheticSpec(seed=1, nodes=4, days=1, step=300)).snapshot
    assert "act on no pod" in " ".join(topology_notes(plain, [kube]))

"""PodDisruptionBudgets and ``preemptionPolicy: Never`` in the replay's preemption.

The disruption controller's arithmetic (``analyzer.scheduling.pdb.disruptions_allowed_for``) on
hand-computed values; hand-built replays whose victims follow from upstream's rules with the
budget's ``disruptionsAllowed`` derived at the instant of the attempt (worked out in each
docstring); the replay's preemption with budgets against the scheduling core's ``preempt`` on the
whole state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from replay_fixtures import GI, N, P, build
from test_replay_preemption import kube_default, runs, with_priorities

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.replay.budgets import ReplayBudgets
from analyzer.replay.engine import replay
from analyzer.replay.input import NEVER, prepare
from analyzer.replay.preemption import ReplayPreemption
from analyzer.scheduling import load_strategy
from analyzer.scheduling.label_selectors import selector_from_map
from analyzer.scheduling.pdb import DisruptionBudget, disruptions_allowed_for, parse_pdb
from analyzer.scheduling.plugins.defaultpreemption import BoundPod, node_statuses, preempt
from analyzer.scheduling.state import ClusterState, PodDemand, make_demand

DB = '{"app": "db"}'
WEB = '{"app": "web"}'


def budget(**spec: Any) -> DisruptionBudget:
    return parse_pdb(
        {"metadata": {"name": "b"}, "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec}},
        "pdb",
    )


@pytest.mark.parametrize(
    ("spec", "expected", "healthy", "allowed"),
    [
        ({"minAvailable": 2}, 4, 3, 1),  # 3 healthy − 2
        ({"minAvailable": 2}, 4, 1, 0),  # 1 − 2 < 0: none
        ({"minAvailable": 2}, 0, 3, 0),  # nothing expected: none
        ({"minAvailable": "50%"}, 5, 4, 1),  # desired ⌈2.5⌉ = 3; 4 − 3
        ({"minAvailable": "100%"}, 3, 3, 0),
        ({"minAvailable": 0}, 2, 2, 2),
        ({"maxUnavailable": 1}, 3, 3, 1),  # desired 3 − 1 = 2; 3 − 2
        ({"maxUnavailable": 1}, 3, 2, 0),  # one already down
        ({"maxUnavailable": "30%"}, 10, 10, 3),  # ⌈3⌉ unavailable: desired 7
        ({"maxUnavailable": "25%"}, 10, 10, 3),  # ⌈2.5⌉ = 3 unavailable: desired 7
        ({"maxUnavailable": 5}, 3, 3, 3),  # desired max(0, 3 − 5) = 0
        ({}, 4, 4, 0),  # neither field: upstream's expected count stays 0
    ],
)
def test_disruptions_allowed_as_the_disruption_controller_computes(
    spec: dict[str, Any], expected: int, healthy: int, allowed: int
) -> None:
    assert disruptions_allowed_for(budget(**spec), expected, healthy) == allowed


def test_budget_spec_is_validated() -> None:
    with pytest.raises(InputError, match=r"pdb\.spec: minAvailable and maxUnavailable"):
        budget(minAvailable=1, maxUnavailable=1)
    with pytest.raises(InputError, match=r"pdb\.spec\.minAvailable: '5'"):
        budget(minAvailable="5")  # a string must be a percentage
    with pytest.raises(InputError, match=r"pdb\.spec\.maxUnavailable: '101%'"):
        budget(maxUnavailable="101%")
    with pytest.raises(InputError, match=r"pdb\.spec\.minAvailable: -1"):
        budget(minAvailable=-1)


def two_services(spec: dict[str, Any] | None, extra: list[P] | None = None) -> Snapshot:
    """Node a (4 cores) from the start, node b (4 cores) from minute 5; 1 GiB pods, priority 1.

    a1, a2 (app=web, 2 cores) arrive at 1, 2 and fill a; b1, b2 (app=db, 2 cores) at 6, 7 and
    fill b. h (priority 100, 2 cores) arrives at 10 and fits nowhere. ``spec``: a budget on
    app=db in namespace default.
    """
    nodes = [N("a", cpu=4000), N("b", cpu=4000, first=5)]
    pods = [
        P("a1", "a", cpu=2000, start=1, labels=WEB),
        P("a2", "a", cpu=2000, start=2, labels=WEB),
        P("b1", "b", cpu=2000, start=6, labels=DB),
        P("b2", "b", cpu=2000, start=7, labels=DB),
        P("h", "a", cpu=2000, start=10),
        *(extra or []),
    ]
    priorities = {p.uid: 1 for p in pods} | {"h": 100}
    snap = with_priorities(build(nodes, pods), priorities)
    if spec is not None:
        pdb = {"namespace": "default", "name": "db", "status": {"disruptionsAllowed": 9},
               "spec": {"selector": {"matchLabels": {"app": "db"}}, **spec}}  # fmt: skip
        snap = dataclasses.replace(snap, objects={"PodDisruptionBudget": [pdb]})
    return snap


def first_preemption(snap: Snapshot) -> tuple[str, list[str]]:
    """(node, victims) of the replay's first preemption (h's, at minute 10)."""
    result = replay(prepare(snap), kube_default(), seed=0)
    pre = result.preemptions
    names = list(snap.pods["uid"])
    assert len(pre["time"]) and {names[p] for p in pre["preemptor"][:1]} == {"h"}
    first = pre["time"] == pre["time"][0]
    nodes = {str(snap.nodes["node"][n]) for n in pre["node"][first]}
    assert len(nodes) == 1
    return nodes.pop(), sorted(names[v] for v in pre["victim"][first])


def test_without_a_budget_the_latest_started_victim_decides() -> None:
    """On a, a1 (more important: earlier start) is reprieved and a2 is the victim; on b, b1 is
    reprieved and b2 is the victim. Equal priorities, sums and counts: the node whose victim
    started latest wins — b (b2 started at 7, a2 at 2)."""
    assert first_preemption(two_services(None)) == ("b", ["b2"])


def test_a_budget_with_no_disruption_left_sends_the_preemptor_elsewhere() -> None:
    """minAvailable 2 with b1, b2 running: disruptionsAllowed 2 − 2 = 0 (the snapshot's status
    says 9: not used). On b both pods are PDB-violating; b1 is reprieved (2 + 2 cores fit), b2
    is a victim with 1 violation. a's victim a2 violates nothing: fewest violations wins — a."""
    assert first_preemption(two_services({"minAvailable": 2})) == ("a", ["a2"])


@pytest.mark.parametrize("spec", [{"minAvailable": 1}, {"maxUnavailable": "50%"}])
def test_a_budget_with_one_disruption_left_changes_the_victim(spec: dict[str, Any]) -> None:
    """disruptionsAllowed 1 (minAvailable 1: 2 − 1; maxUnavailable ⌈50 % of 2⌉ = 1: desired 1,
    2 − 1). Split in importance order: b1 takes the one disruption, b2 violates. The violating
    group is reprieved first: b2 stays (2 + 2 fit), b1 (non-violating) is the victim. No
    violation on either node; b's victim b1 started at 6, later than a2 at 2 — b, evicting b1
    (upstream's order: not the b2 the replay evicts without a budget)."""
    assert first_preemption(two_services(spec)) == ("b", ["b1"])


def test_pending_pods_of_the_budget_count_as_expected() -> None:
    """b3 (app=db, 3 cores, priority 1) arrives at 8 and waits (no node has 3 free cores, it
    cannot preempt equal priorities). maxUnavailable 1 now expects 3 pods: desired 3 − 1 = 2,
    healthy 2 (b1, b2), disruptionsAllowed 0 — both b pods violate and a wins, as with
    minAvailable 2. Without b3 the same budget allows 1 (desired 1) and b1 would go."""
    waiting = P("b3", "b", cpu=3000, start=8, labels=DB)
    assert first_preemption(two_services({"maxUnavailable": 1}, [waiting])) == ("a", ["a2"])
    assert first_preemption(two_services({"maxUnavailable": 1})) == ("b", ["b1"])


def test_a_budget_in_another_namespace_or_with_an_empty_selector_is_ignored() -> None:
    for pdb in (
        {"namespace": "other", "name": "x", "spec": {"selector": {"matchLabels": {"app": "db"}},
                                                     "minAvailable": 2}},
        {"namespace": "default", "name": "y", "spec": {"selector": {}, "minAvailable": 2}},
    ):  # fmt: skip
        snap = dataclasses.replace(two_services(None), objects={"PodDisruptionBudget": [pdb]})
        assert first_preemption(snap) == ("b", ["b2"])


def with_classes(snap: Snapshot, classes: dict[str, str], policy: dict[str, str]) -> Snapshot:
    """``snap`` with pods' ``priority_class`` (uid -> class) and PriorityClass objects."""
    pods = snap.pods.copy()
    pods["priority_class"] = [classes.get(str(u), "") for u in pods["uid"]]
    pods["priority_class"] = pods["priority_class"].astype("string")
    objects = dict(snap.objects)
    objects["PriorityClass"] = [
        {"name": name, "value": 100, "globalDefault": False, "preemptionPolicy": value}
        for name, value in policy.items()
    ]
    return dataclasses.replace(snap, pods=pods, objects=objects)


def test_preemption_policy_never_waits_instead() -> None:
    """h's PriorityClass has preemptionPolicy Never: h evicts nobody and waits until a pod
    leaves (b1 ends at 20); with PreemptLowerPriority it preempts at 10."""
    nodes = [N("a", cpu=4000)]
    pods = [P("x", "a", cpu=4000, start=1, end=20), P("h", "a", cpu=2000, start=10)]
    snap = with_priorities(build(nodes, pods), {"x": 1, "h": 100})
    never = with_classes(snap, {"h": "high"}, {"high": "Never"})
    result = replay(prepare(never), kube_default(), seed=0)
    assert len(result.preemptions["victim"]) == 0
    assert runs(never, result, "h") == [("a", 20, -1)]
    allowed = with_classes(snap, {"h": "high"}, {"high": "PreemptLowerPriority"})
    result = replay(prepare(allowed), kube_default(), seed=0)
    assert runs(allowed, result, "h") == [("a", 10, -1)]


def test_pods_without_a_class_take_the_global_default_policy() -> None:
    nodes = [N("a", cpu=4000)]
    pods = [P("x", "a", cpu=4000, start=1), P("h", "a", cpu=2000, start=10)]
    snap = with_priorities(build(nodes, pods), {"x": 1, "h": 100})
    snap = with_classes(snap, {}, {"d": "Never"})
    snap.objects["PriorityClass"][0]["globalDefault"] = True
    inp = prepare(snap)
    assert [d.preemption_policy for d in inp.demands] == ["Never", "Never"]
    assert len(replay(inp, kube_default(), seed=0).preemptions["victim"]) == 0


def test_never_pods_form_their_own_queue_group() -> None:
    """Same shape and priority, different policy: a group fails as a whole, so the policy is
    part of the shape key."""
    nodes = [N("a", cpu=4000)]
    pods = [P("n", "a", cpu=2000, start=1), P("p", "a", cpu=2000, start=1)]
    snap = with_classes(build(nodes, pods), {"n": "never", "p": "pre"},
                        {"never": "Never", "pre": "PreemptLowerPriority"})  # fmt: skip
    inp = prepare(snap)
    assert inp.shape_keys[0] != inp.shape_keys[1]
    plain = prepare(build(nodes, pods))
    assert plain.shape_keys[0] == plain.shape_keys[1]


_RUNNING = st.lists(st.tuples(st.integers(0, 3), st.sampled_from([500, 1000, 1500]),
                              st.booleans()), max_size=4)  # fmt: skip


@given(
    per_node=st.lists(_RUNNING, min_size=3, max_size=3),
    incoming=st.tuples(st.integers(1, 4), st.sampled_from([1000, 2000, 3000])),
    minimum=st.integers(0, 4),
)
# the health checks time example generation, which a loaded CI machine can slow past their limit
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_replay_preemption_with_budgets_matches_the_core(
    per_node: list[list[tuple[int, int, bool]]], incoming: tuple[int, int], minimum: int
) -> None:
    """With a budget (minAvailable ``minimum`` over the app=db pods, all running: allowed =
    max(0, running − minimum)), the replay's preemption nominates the node and victims the
    scheduling core's ``preempt`` finds with that budget on the whole state."""
    profile = load_strategy("kube-default")
    names = ["n0", "n1", "n2"]
    alloc = [{"cpu": c, "memory": 8 * GI, "pods": 110} for c in (2000, 3000, 3000)]
    state = ClusterState.from_nodes(names, alloc)
    axis = state.resources

    def demand(i: int, cpu: int, priority: int, db: bool) -> PodDemand:
        labels = {"app": "db" if db else "web"}
        return make_demand(axis, {"cpu": cpu, "memory": GI}, {"cpu": cpu, "memory": GI},
                           name=f"p{i}", namespace="default", priority=priority,
                           labels=labels)  # fmt: skip

    demands: list[PodDemand] = []
    placed: list[tuple[int, int]] = []
    for node, running in enumerate(per_node):
        for priority, cpu, db in running:
            if state.allocatable[node, 0] - state.requested[node, 0] < cpu:
                continue
            d = demand(len(demands), cpu, priority, db)
            state.bind(node, d)
            demands.append(d)
            placed.append((len(demands) - 1, node))
    priority, cpu = incoming
    demands.append(demand(99, cpu, priority, False))
    evaluation = profile.evaluate(state, demands[-1], 0.0)
    assume(not evaluation.feasible.any())
    pdb = DisruptionBudget("db", "default", selector_from_map({"app": "db"}, "s"), 0,
                           min_available=minimum)  # fmt: skip
    count = len(demands)
    budgets = ReplayBudgets([pdb], demands, np.zeros(count, np.int64),
                            np.full(count, NEVER, np.int64), np.zeros(count, bool))  # fmt: skip
    on_node: list[set[int]] = [set() for _ in names]
    priorities = [int(d.priority or 0) for d in demands]
    active = np.ones(len(names), dtype=bool)
    pre = ReplayPreemption.for_profile(
        profile, state, active, demands, priorities, on_node, None, budgets
    )
    assert pre is not None
    for pod, node in placed:
        on_node[node].add(pod)
        pre.bound(pod, node, pod)  # start times 0, 1, 2, … in binding order
    got = pre.attempt(count - 1, 0)
    running_db = sum(1 for pod, _ in placed if demands[pod].labels["app"] == "db")
    allowed = max(0, running_db - minimum) if running_db else 0
    bound = [
        BoundPod(node, f"p{pod}", "default", priorities[pod], demands[pod],
                 demands[pod].labels, pod)
        for pod, node in placed
    ]  # fmt: skip
    want = preempt(
        profile.filters, state, demands[-1], priority, "PreemptLowerPriority",
        node_statuses(evaluation, profile.filters), bound,
        [dataclasses.replace(pdb, disruptions_allowed=allowed)],
        profile.post_filters[0].args,
    )  # fmt: skip
    chosen = next((c for c in want.candidates if c.node == want.nominated), None)
    event(f"PDB violations of the chosen node: {None if chosen is None else chosen.pdb_violations}")
    if want.nominated is None:
        assert got is None
    else:
        assert got is not None
        assert got[0] == want.nominated
        assert [f"p{v}" for v in got[1]] == [v.name for v in want.victims]


def test_what_if_notes_say_what_preemption_read() -> None:
    from analyzer.replay.engine import OBSERVED_STRATEGY
    from analyzer.whatif.notes import constraint_notes, preemption_notes

    strategies = [OBSERVED_STRATEGY, kube_default()]
    snap = with_classes(two_services({"minAvailable": 2}), {"h": "high"}, {"high": "Never"})
    notes = preemption_notes(snap, strategies)
    assert notes[0].startswith("kube-default order the pending queue by priority")
    assert "count the snapshot's 1 PodDisruptionBudget as kube-scheduler does" in notes[0]
    assert notes[1].startswith("1 pod has preemptionPolicy Never")
    bare = two_services(None)
    notes = preemption_notes(bare, strategies)
    assert "holds no PodDisruptionBudget" in notes[0] and "no PriorityClass" in notes[1]
    assert preemption_notes(bare, [OBSERVED_STRATEGY]) == []  # nobody preempts
    assert not any("PodDisruptionBudgets and" in n for n in constraint_notes(bare, strategies))


def test_a_pod_without_labels_violates_no_budget() -> None:
    """Upstream's filterPodsWithPDBViolation skips pods without labels, even for a selector
    that matches them (``DoesNotExist``); a labelled pod the same selector matches violates it."""
    from analyzer.scheduling.label_selectors import parse_label_selector
    from analyzer.scheduling.plugins.defaultpreemption import split_by_pdb

    selector = parse_label_selector(
        {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, "s"
    )
    pdb = DisruptionBudget("b", "default", selector, 0)
    axis = ("cpu", "memory")
    d = make_demand(axis, {"cpu": 1}, {"cpu": 1}, name="p", namespace="default")
    bare = BoundPod(0, "bare", "default", 0, d, {})
    tagged = BoundPod(0, "tagged", "default", 0, d, {"tier": "x"})
    assert selector.matches({}) and selector.matches({"tier": "x"})
    assert split_by_pdb([bare, tagged], [pdb]) == ([tagged], [bare])

"""Answers placed by CA's scheduling hints alone, taken again without their check when nothing
they read changed since the last pass (``analyzer.replay.autoscale_reuse.SimulationMemo.unread``).

Such an answer read its pods, the budgets, its pods' hints and, on each target, whether it is a
destination, its room and its pod slots. The memo tracks which of those may have changed since
the last pass: the nodes whose pods or destination changed (``start_pass``, ``starting``), the
targets of the last pass's removable answers reached in another order or not at all
(``starting``), the targets of answers that changed (``answered``), and answers whose pods' hints a
later answer set (``claim``). The replay with the lever on must leave, after every pass, what it
leaves with every answer checked (``UNREAD_TAKES`` False), and decide as the plain path does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from autoscale_cases import SHORT_TIMINGS, after_each_pass, same_after_each_pass
from test_autoscale_reuse import _same_decisions

from analyzer.autoscaler.removal_state import Outcome
from analyzer.replay import autoscale_reuse
from analyzer.replay.autoscale_reuse import Entry, SimulationMemo

RECHECK = {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}
CASES = [
    (1, "kube-default", None),
    (4, "kube-default", None),
    (7, "kube-default", SHORT_TIMINGS),
    (2, "kube-default", RECHECK),
    (3, "most-allocated", None),
    (5, "most-allocated", SHORT_TIMINGS),
]


def _passes(seed: int, strategy: str, raw: Any, lever: bool, monkeypatch: Any) -> Any:
    levers = {(autoscale_reuse, "UNREAD_TAKES"): lever}
    return after_each_pass(seed, strategy, raw, levers, monkeypatch)


@pytest.mark.parametrize(("seed", "strategy", "raw"), CASES)
def test_unread_takes_leave_what_checked_takes_leave(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After every pass, run or stood, the loop's state (reasons, summary, deadlines, unneeded
    # nodes, both generations of the hints, last_pass) is the same with unread takes as with
    # every answer checked, and so are the decisions, the passes run and the answers taken
    # again: an unread take is a checked take that skipped its check.
    fast, _, a = _passes(seed, strategy, raw, True, monkeypatch)
    full, _, b = _passes(seed, strategy, raw, False, monkeypatch)
    same_after_each_pass(fast, full)
    x, y = a.autoscaler, b.autoscaler
    assert (x.passes, x.skipped, x.simulated, x.reused) == (
        y.passes,
        y.skipped,
        y.simulated,
        y.reused,
    )
    assert y.reused_unread == 0
    _same_decisions(a, b)


@pytest.mark.parametrize(("seed", "strategy", "raw"), CASES[:4])
def test_answers_by_hints_asked_alone_leave_what_find_first_leaves(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An answer placed by hints alone asked by its hints only (``HINTED_ALONE``), its moves
    # added when something reads those counts (``Deferred``), against ``find`` first and every
    # move added at once: the same state after every pass, the same decisions and the same
    # answers taken again (unread takes off in both, so that each is checked).
    def run(alone: bool) -> Any:
        levers = {
            (autoscale_reuse, "UNREAD_TAKES"): False,
            (autoscale_reuse, "HINTED_ALONE"): alone,
        }
        return after_each_pass(seed, strategy, raw, levers, monkeypatch)

    fast, _, a = run(True)
    full, _, b = run(False)
    assert fast == full
    x, y = a.autoscaler, b.autoscaler
    assert (x.passes, x.simulated, x.reused) == (y.passes, y.simulated, y.reused)
    assert x.reused_by_hints >= y.reused_by_hints
    _same_decisions(a, b)


def test_the_seeded_clusters_take_answers_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    # The comparison above is not empty: its clusters take answers again unread.
    total = 0
    for seed, strategy, raw in CASES[:3]:
        _, _, a = _passes(seed, strategy, raw, True, monkeypatch)
        total += a.autoscaler.reused_unread
    assert total > 0


def test_a_lingering_scale_down_decides_as_the_plain_path() -> None:
    # 120 nodes at minSize 0 under kube-default: CA finds many nodes unneeded at once and
    # drains them one at a time (max-drain-parallelism 1), every pass taking most of them again
    # (the case unread takes are for). The decisions are the plain path's (every candidate
    # simulated at every pass), and most answers taken again were taken unread.
    from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
    from analyzer.replay.engine import Strategy, replay
    from analyzer.replay.input import prepare
    from analyzer.scheduling.strategies import load_strategy
    from analyzer.sources import SyntheticSpec, generate

    cluster = generate(SyntheticSpec(seed=3, nodes=120, days=0.25, step=300))
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    # kube-system pods block all along (no timeout, as up to CA 1.32: ``seeded_autoscaled``)
    raw = {"blocking-system-pod-distruption-timeout": None}
    settings = dataclasses.replace(
        parse_settings(raw), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    auto, groups = with_node_groups(prepare(cluster.snapshot), settings)
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    fast = replay(auto, strategy, 3, autoscaler=(groups, settings))
    plain_settings = dataclasses.replace(settings, reuse=False)
    plain = replay(auto, strategy, 3, autoscaler=(groups, plain_settings))
    _same_decisions(fast, plain)
    record = fast.autoscaler
    assert record.removed
    assert record.reused_unread > record.reused // 2, (record.reused_unread, record.reused)


# --- the memo's rules, one by one ------------------------------------------------------------


def _entry(targets: list[int], *, by_hints: bool = True) -> Entry:
    outcome = Outcome("n", True)
    entry = Entry(
        0, 0, 0, (1, 2), (-1,), 0, 0, outcome, targets, np.zeros(0, dtype=np.int64), [],
        [], [], by_hints,
    )  # fmt: skip
    entry.plan = object()  # a plan was made: its moves can be applied in one step
    return entry


def _memo_after_one_pass(
    entries: list[tuple[int, Entry]], touched: tuple[int, ...] = ()
) -> SimulationMemo:
    """A memo whose last pass (pass 1) found ``entries`` removable, in that order, with 10
    nodes all destinations; the replay then bound or unbound a pod on each node of
    ``touched``; pass 2 has begun (``start_pass``; the caller calls ``starting``)."""
    memo = SimulationMemo(10)
    memo.start_pass()
    destinations = np.ones(10, dtype=bool)
    memo.starting(destinations, [slot for slot, _ in entries])
    for slot, entry in entries:
        entry.seen, entry.hint_drops = memo.passes, 0
        memo.removable.append((slot, entry))
    for node in touched:
        memo.touch(node, freed=True)
    memo.start_pass()
    return memo


def test_an_answer_untouched_since_the_last_pass_is_taken_unread() -> None:
    e = _entry([4, 5])
    memo = _memo_after_one_pass([(1, e)])
    memo.starting(np.ones(10, dtype=bool), [1])
    assert memo.unread(e, (1, 2), (-1,), 1)


@pytest.mark.parametrize(
    "change",
    ["pods", "budgets", "not by hints", "no plan", "older", "disturbed", "hints dropped twice",
     "a target's pods", "a target left", "an answer before it changed"],
)  # fmt: skip
def test_any_change_to_what_it_read_refuses_an_unread_take(change: str) -> None:
    e = _entry([4, 5], by_hints=change != "not by hints")
    before = _entry([5, 6])
    # the replay bound or unbound a pod on node 5 since
    touched = (5,) if change == "a target's pods" else ()
    memo = _memo_after_one_pass([(0, before), (1, e)], touched)
    destinations = np.ones(10, dtype=bool)
    pods, pdbs, drops = (1, 2), (-1,), 1
    if change == "pods":
        pods = (1, 3)
    elif change == "budgets":
        pdbs = (7, -1, 0)
    elif change == "no plan":
        e.plan = False
    elif change == "older":
        e.seen -= 1
    elif change == "disturbed":  # a later answer of the last pass set one of its pods' hints
        e.disturbed = memo.passes - 1
    elif change == "hints dropped twice":
        drops = 2
    elif change == "a target left":
        destinations[4] = False
    memo.starting(destinations, [0, 1])
    if change == "an answer before it changed":  # node 0's answer now moves pods elsewhere
        memo.answered(0, before, _entry([6, 7]))
    assert not memo.unread(e, pods, pdbs, drops)


def test_answers_reached_in_another_order_or_not_at_all_make_their_targets_diverge() -> None:
    x, y, z = _entry([4]), _entry([5]), _entry([6])
    memo = _memo_after_one_pass([(1, x), (2, y), (3, z)])
    # node 2 is now before node 1 (its moves onto 5 come earlier than they did), node 3 is
    # not a candidate: their targets and own nodes diverge; node 1's do not
    memo.starting(np.ones(10, dtype=bool), [2, 1, 7])
    assert {5, 2, 6, 3} <= memo.diverged
    assert not {4, 1} & memo.diverged


def test_a_changed_answer_makes_its_old_and_new_targets_diverge() -> None:
    old, same = _entry([4, 5]), _entry([6])
    memo = _memo_after_one_pass([(1, old), (2, same)])
    memo.starting(np.ones(10, dtype=bool), [1, 2])
    memo.answered(2, same, same)  # taken again: the same moves
    assert not memo.diverged
    memo.answered(1, old, _entry([5, 8]))
    assert memo.diverged == {1, 4, 5, 8}


def test_an_answer_setting_anothers_pods_hints_disturbs_it() -> None:
    memo = SimulationMemo(4)
    memo.start_pass()
    owner = _entry([2])
    owner.sets = [("default/p", "n2")]
    memo.claim(owner)
    assert owner.disturbed == -1  # its own keys
    later = _entry([3], by_hints=False)
    later.sets = [("default/p", "n3"), ("default/q", "n3")]
    memo.claim(later)
    assert owner.disturbed == memo.passes


def test_an_answer_made_again_with_the_same_moves_changes_nothing_later() -> None:
    # Simulated again, an answer moving the same pod objects to the same targets adds the same
    # counts and pods: its targets do not diverge. Other pods to the same targets do.
    pod_a, pod_b = object(), object()
    last = _entry([4, 5])
    last.outcome = Outcome("n", True, moved=(pod_a, pod_b))  # type: ignore[arg-type]
    memo = _memo_after_one_pass([(1, last)])
    memo.starting(np.ones(10, dtype=bool), [1])
    again = _entry([4, 5])
    again.outcome = Outcome("n", True, moved=(pod_a, pod_b))  # type: ignore[arg-type]
    memo.answered(1, last, again)
    assert not memo.diverged
    other = _entry([4, 5])
    other.outcome = Outcome("n", True, moved=(pod_b, pod_a))  # type: ignore[arg-type]
    memo.answered(1, last, other)
    assert memo.diverged == {1, 4, 5}


def test_stable_reads_the_first_looks_kept_out_of_looked() -> None:
    # Unread takes keep their first looks out of the simulator's ``looked``; those of an unread
    # answer whose pods' hints a later answer set are handed to ``stable`` (``also_looked``),
    # which must compare them too. (The seeded clusters above never had such a pass: an
    # answer taken unread was used in the last pass with no later answer setting its hints,
    # so a later one doing it now needs that one's own answer to have changed.)
    from autoscale_cases import node as node_doc

    from analyzer.autoscaler.removal import RemovalSimulator
    from analyzer.autoscaler.scenario import build as build_scenario
    from analyzer.scheduling.sim_hints import Hints

    scenario = build_scenario(
        {"autoscaler": "cluster-autoscaler", "now": "2026-11-01T12:00:00Z",
         "nodes": [node_doc("n0", {"cpu": 1000, "memory": 4000})], "pods": []}
    )  # fmt: skip
    sim = RemovalSimulator(scenario.cluster, scenario.profile, scenario.options, scenario.now)
    sim.hints = Hints()
    sim.hints.set("default/a", "n1")
    sim.hints.set("default/b", "n2")
    sim.looked = {"default/a": "n1"}
    assert sim.stable()
    sim.also_looked = [{"default/b": "n2"}]
    assert sim.stable()
    sim.also_looked = [{"default/b": "n3"}]  # read n3, a later answer set n2
    assert not sim.stable()


def test_contexts_by_number_are_equal_exactly_when_their_items_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ``SimulationMemo.extend`` numbers what a pass did before a candidate (``find`` compares
    # a kept answer's context by it): the same items in the same order give the same number,
    # any other sequence another one, also one ending with the same item; once the table is
    # emptied, a sequence made again gets a number no earlier one had.
    memo = SimulationMemo(4)
    a, b, c = (1, "", (2,)), (2, "", (3,)), (3, "NoPlaceToMovePods", ())
    ab = memo.extend(memo.extend(0, a), b)
    assert memo.extend(memo.extend(0, a), b) == ab
    assert memo.extend(memo.extend(0, b), a) != ab
    assert memo.extend(0, b) != ab
    assert memo.extend(memo.extend(memo.extend(0, c), a), b) != ab
    numbers = {ab, memo.extend(0, a), memo.extend(0, b)}
    monkeypatch.setattr(autoscale_reuse, "CONTEXTS_KEPT", 1)
    memo.extend(0, (9, "", ()))  # a new one: the table is full, emptied first
    again = memo.extend(memo.extend(0, a), b)
    assert again not in numbers

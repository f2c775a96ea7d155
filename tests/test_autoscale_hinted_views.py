"""The cheaper taking again of a removal answer placed by hints alone (``analyzer.autoscaler.
hinted``, ``RemovalSimulator.apply``, ``analyzer.replay.autoscale_candidates``): the same
verdicts, state and contexts as the plain reading and writing of the arrays, on the way each
shortcut would go wrong.

- ``hinted.fits`` reads the state through memoryviews kept per pass (``Views``): a kept view
  reads the array's memory as it is now, and a view of an array the state no longer holds is
  made again. Mutants it fails: ``Views.of`` returning its kept views without the identity
  check, or without the check of ``requested`` or of ``pod_count`` alone (a replaced array read
  stale), or keeping the view of a replaced ``schedulable`` (a pass's new simulator); ``of``
  without the row-order check (a flat view of a copy, stale after an in-place change); the
  ``item`` fallback's flat index split the wrong way round.
- ``apply``'s plan path adds the requests in one step on a flat view of ``requested``. Mutants it
  fails: the row-order guard dropped (``reshape`` of a Fortran-ordered array is a copy: nothing
  added); the plan's cells or sums with the zero cells kept in one and not the other.
- an answer taken again keeps its part of a later context (``Entry.said``). Mutant it fails:
  ``said`` kept with the targets list (a context that never equals a fresh one's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autoscale_cases import node as node_doc
from autoscale_cases import pod as pod_doc
from test_autoscale_reuse import _run

from analyzer.autoscaler import hinted
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.removal_state import Outcome
from analyzer.autoscaler.scenario import build as build_scenario
from analyzer.replay import autoscale_loop
from analyzer.scheduling.strategies import load_strategy

NOW = "2026-11-01T12:00:00Z"
RS = ["ReplicaSet", "rs", "apps/v1"]


def _simulator(rng: np.random.Generator, count: int, moved: int) -> tuple[Any, Any, list[int]]:
    """A replay-like simulator (kept static masks, first fit, light moves) on ``count`` nodes
    with random fill, candidate ``n0``'s ``moved`` pods and random targets (repeats included)."""
    # a GPU column no moved pod requests: the plan adds to non-zero cells only
    nodes = [node_doc(f"n{i}", {"cpu": 2000, "memory": 8000, "gpus": 1}) for i in range(count)]
    for n in nodes[1:]:
        n["status"]["allocatable"]["pods"] = str(int(rng.integers(2, 6)))
    pods = [
        pod_doc(f"p{k}", {"cpu": int(rng.integers(1, 600)), "memory": int(rng.integers(1, 3000)),
                          "owner": RS}, NOW, "n0")
        for k in range(moved)
    ]  # fmt: skip
    for i in range(1, count):
        for k in range(int(rng.integers(0, 3))):
            load = {"cpu": int(rng.integers(0, 900)), "memory": int(rng.integers(0, 4000))}
            pods.append(pod_doc(f"f{i}-{k}", {**load, "owner": RS}, NOW, f"n{i}"))
    scenario = build_scenario({"autoscaler": "cluster-autoscaler", "now": NOW,
                               "nodes": nodes, "pods": pods})  # fmt: skip
    sim = RemovalSimulator(scenario.cluster, scenario.profile, scenario.options, scenario.now)
    sim.profile = load_strategy("kube-default")
    sim.static, sim.first_fit, sim.light = {}, True, True
    sim.skip = frozenset({"PodTopologySpread", "InterPodAffinity"})
    candidates = list(scenario.cluster.pods["n0"])
    targets = [int(rng.integers(1, count)) for _ in candidates]
    return sim, candidates, targets


def test_kept_views_read_the_state_now_and_follow_a_replaced_array() -> None:
    # One ``Views`` kept over changes of the state (as over a pass): in-place binds; the state's
    # ``requested`` replaced by a new array (C order), then its ``pod_count``, each with a target
    # full in the new array only (the old one fits more); the simulator's ``schedulable`` replaced
    # by a copy with the target cordoned (a pass's new simulator on the same state); ``requested``
    # in Fortran order (no flat view reads it: the ``item`` fallback), then filled in place.
    # After each, ``fits`` with the kept views and with fresh ones is ``fits_as_hinted`` pod by
    # pod. Both verdicts occur, and the changes turn a fitting answer into one that does not.
    rng = np.random.default_rng(3)
    verdicts = {True: 0, False: 0}
    flips = 0
    for case in range(40):
        sim, candidates, targets = _simulator(rng, int(rng.integers(3, 7)), int(rng.integers(1, 6)))
        plan = hinted.plan(sim, candidates, targets)
        assert plan is not None
        views = hinted.Views()
        allowed = np.ones(len(sim.schedulable), dtype=bool)
        allowed[0] = False
        last = None
        for step in range(7):
            state = sim.state
            t = targets[step % len(targets)]
            if step == 1:  # in place: the kept views see it
                state.requested[t] += rng.integers(0, 300, state.requested.shape[1])
                state.pod_count[t] += 1
            elif step == 2:  # a new ``requested``: the kept views must be made again
                state.requested = state.requested.copy()
                if case % 2:
                    state.requested[t] = state.allocatable[t]
            elif step == 3:  # a new ``pod_count`` likewise
                state.pod_count = state.pod_count.copy()
                if case % 3 == 0:
                    state.pod_count[t] = state.allowed_pods[t]
            elif step == 4:  # a new simulator's mask on the same state (a pass's): made again
                sim.schedulable = sim.schedulable.copy()
                if case % 2 == 0:
                    sim.schedulable[t] = False
            elif step == 5:  # Fortran order: read by ``item``
                state.requested = np.asfortranarray(state.requested)
                assert not state.requested.flags.c_contiguous
            elif step == 6 and case % 2 == 0:  # in place on it
                state.requested[t] = state.allocatable[t]
            expected = sim.fits_as_hinted(candidates, targets, allowed)
            assert hinted.fits(sim, plan, allowed, views) == expected, (case, step)
            assert hinted.fits(sim, plan, allowed) == expected, (case, step)
            verdicts[expected] += 1
            flips += last is True and not expected
            last = expected
    assert min(verdicts.values()) > 10 and flips > 5, (verdicts, flips)


def test_the_flat_apply_is_the_two_dimensional_one_in_either_order() -> None:
    # ``apply`` with a plan on a light simulator adds each target's requests and pod count: on
    # the state's own arrays, equal to ``requested[where] += sums`` (made here by hand), whether
    # ``requested`` is in row order (the flat step) or in Fortran order (the 2-D step), and
    # every cell the answer adds to is one of ``plan.cells`` once.
    rng = np.random.default_rng(8)
    orders = {"C": 0, "F": 0}
    for case in range(24):
        sim, candidates, targets = _simulator(rng, int(rng.integers(3, 7)), int(rng.integers(1, 7)))
        order = "F" if case % 2 else "C"
        sim.state.requested = np.asarray(sim.state.requested, order=order)
        plan = hinted.plan(sim, candidates, targets)
        assert plan is not None
        requested = sim.state.requested
        expected = requested.copy()
        counts = sim.state.pod_count.copy()
        for pod, t in zip(candidates, targets, strict=True):
            expected[t] += sim.demand_of[id(pod)].requests
            counts[t] += 1
        cells = np.flatnonzero((expected - requested).reshape(-1))
        assert sorted(plan.cells.tolist()) == cells.tolist(), case
        sim.apply("n0", Outcome("n0", True, moved=tuple(candidates)), targets, plan)
        assert sim.state.requested is requested  # changed in place, not replaced
        assert np.array_equal(requested, expected), case
        assert np.array_equal(sim.state.pod_count, counts), case
        orders[order] += 1
    assert min(orders.values()) > 5


def test_an_answer_keeps_its_part_of_later_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    # A seeded replay on the fast path: every answer kept for a slot that was taken again (or
    # simulated) and added to a context holds exactly (slot, reason, targets as a tuple), the
    # item a fresh simulation adds; and every context any answer read is made of such items.
    seen: list[Any] = []
    run = autoscale_loop.update_unneeded

    def keep_ca(ca: Any, now: int) -> None:
        if not seen:
            seen.append(ca)
        run(ca, now)

    monkeypatch.setattr(autoscale_loop, "update_unneeded", keep_ca)
    fast, _ = _run(3, "kube-default")
    memo = seen[0].sims
    assert fast.autoscaler.reused_by_hints > 0
    kept = 0
    for slot, entry in memo.entries.items():
        if entry.said is not None:
            assert entry.said == (slot, entry.outcome.reason, tuple(entry.targets)), slot
            kept += 1
    # the contexts by number (``SimulationMemo.extend``): each the one before and an item
    for before, item in memo.contexts:
        assert isinstance(before, int)
        assert isinstance(item, tuple) and len(item) == 3 and isinstance(item[2], tuple)
        assert item[1] != "BlockedByPod"
    assert kept > 0 and memo.contexts

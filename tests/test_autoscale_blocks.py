"""Runs of answers placed by hints alone, taken again as one block (``analyzer.replay.
autoscale_blocks``): the same decisions as taking each answer on its own, and the block's one room
check is each answer's check in turn.

- ``hinted.plan`` of several answers' moves in order, checked once (``hinted.fits``), gives the
  verdict of checking each answer's own plan on the state with the earlier answers' moves added,
  and adds the same requests and pod counts. Mutants it fails: a combined plan that does not
  count an earlier answer's pods on a shared target (each answer's plan checked on the first
  state), or that checks only the last answer.
- a seeded replay takes blocks (and refuses some: a block whose answer, pods, hints or room
  changed), and decides as the same replay with every answer taken one by one, and as the plain
  path that simulates every candidate at every pass.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from autoscale_cases import node as node_doc
from autoscale_cases import pod as pod_doc
from test_autoscale_hinted_views import NOW, RS, _simulator
from test_autoscale_reuse import _run, _same_decisions

from analyzer.autoscaler import hinted
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.removal_state import Outcome, hint_key
from analyzer.autoscaler.scenario import build as build_scenario
from analyzer.replay import autoscale_blocks
from analyzer.replay.autoscale_reuse import Entry, SimulationMemo
from analyzer.scheduling.sim_hints import Hints
from analyzer.scheduling.strategies import load_strategy


def _split(rng: np.random.Generator, pods: list[Any], targets: list[int]) -> list[Any]:
    """The pods and their targets cut into consecutive answers (at least one pod each)."""
    cuts = sorted(set(rng.integers(1, len(pods), size=int(rng.integers(0, 4))).tolist()))
    edges = [0, *cuts, len(pods)]
    return [(pods[a:b], targets[a:b]) for a, b in pairwise(edges) if b > a]


def _entries(answers: list[Any]) -> tuple[Any, ...]:
    """Kept answers placed by hints alone for ``answers`` ((pods, targets) each)."""
    made = []
    for moved, targets in answers:
        sets = [(hint_key(p), f"n{t}") for p, t in zip(moved, targets, strict=True)]
        looks: list[tuple[str, str | None]] = list(sets)
        made.append(Entry(
            0, 0, (), tuple(map(id, moved)), (-1,), 0, 0,
            Outcome("n0", True, moved=tuple(moved)), list(targets), np.zeros(0, dtype=np.int64),
            [], looks, sets, by_hints=True,
        ))  # fmt: skip
    return tuple(made)


@pytest.mark.parametrize("array_cells", [0, 10**9])
def test_one_check_of_the_block_is_each_answer_checked_in_turn(
    monkeypatch: pytest.MonkeyPatch, array_cells: int
) -> None:
    # Random fills, a candidate's pods cut into two to four answers with random targets
    # (targets shared between answers included). The block's plan, made from the answers' own
    # plans (``_make``), fits on the state (``_fits``: in array steps, and by ``hinted.fits``)
    # exactly when every answer's own plan fits on the state with the earlier answers' moves
    # added; where it fits, adding the block's moves in one step leaves the state the answers
    # leave one by one.
    monkeypatch.setattr(autoscale_blocks, "ARRAY_CELLS", array_cells)
    rng = np.random.default_rng(11)
    verdicts = {True: 0, False: 0}
    shared = 0
    for case in range(160):
        sim, pods, targets = _simulator(rng, int(rng.integers(3, 7)), int(rng.integers(2, 9)))
        answers = _split(rng, pods, targets)
        if len(answers) < 2:
            continue
        seen: set[int] = set()
        for _, ts in answers:
            shared += bool(seen & set(ts))
            seen |= set(ts)
        sim.destinations[0] = False  # the candidate's node
        entries = _entries(answers)
        block = autoscale_blocks.Block([100 + j for j in range(len(entries))], entries)
        autoscale_blocks._make(sim, block)
        assert block.plan is not False
        requested, counts = sim.state.requested.copy(), sim.state.pod_count.copy()
        at_once = autoscale_blocks._fits(sim, block)
        assert at_once == hinted.fits(sim, block.plan, sim.destinations), case
        sim.checkpoint()
        one_by_one = True
        for moved, ts in answers:
            own = hinted.plan(sim, moved, ts)
            assert own is not None
            if not hinted.fits(sim, own, sim.destinations):
                one_by_one = False
                break
            sim.apply_plan(own)
        assert at_once == one_by_one, case
        verdicts[at_once] += 1
        if not at_once:
            sim.restore()
            continue
        after = sim.state.requested.copy(), sim.state.pod_count.copy()
        sim.restore()
        assert np.array_equal(sim.state.requested, requested)
        assert np.array_equal(sim.state.pod_count, counts)
        sim.checkpoint()
        sim.apply_plan(block.plan)
        assert np.array_equal(sim.state.requested, after[0]), case
        assert np.array_equal(sim.state.pod_count, after[1]), case
        sim.restore()
    assert min(verdicts.values()) > 15 and shared > 15, (verdicts, shared)


def test_a_block_with_a_target_among_its_nodes_is_not_made() -> None:
    # An answer moving a pod onto another answer's node (or a pod in two answers): the one
    # check would read that node's room before its removal, so the block is not taken at once.
    rng = np.random.default_rng(5)
    sim, pods, _ = _simulator(rng, 5, 4)
    entries = _entries([(pods[:2], [1, 2]), (pods[2:], [3, 4])])
    block = autoscale_blocks.Block([2, 7], entries)  # slot 2 is a target of the first
    autoscale_blocks._make(sim, block)
    assert block.plan is False
    twice = _entries([(pods[:2], [1, 2]), (pods[1:3], [3, 4])])
    block = autoscale_blocks.Block([7, 8], twice)
    autoscale_blocks._make(sim, block)
    assert block.plan is False
    fine = autoscale_blocks.Block([7, 8], _entries([(pods[:2], [1, 2]), (pods[2:], [3, 4])]))
    autoscale_blocks._make(sim, fine)
    assert fine.plan is not False


@pytest.mark.parametrize(
    ("seed", "strategy", "raw"),
    [
        (2, "kube-default", None),
        (3, "kube-default", None),
        (8, "most-allocated", None),
        (5, "kube-default", {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}),
        (4, "most-allocated", {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}),
        (7, "kube-default", {"unremovable-node-recheck-timeout": "1m", "scan-interval": "7s"}),
        (8, "most-allocated", {"unremovable-node-recheck-timeout": "1m", "scan-interval": "7s"}),
    ],
)  # fmt: skip
def test_blocks_decide_as_answers_taken_one_by_one(
    monkeypatch: pytest.MonkeyPatch, seed: int, strategy: str, raw: Any
) -> None:
    taken = {True: 0, False: 0}
    take = autoscale_blocks.take

    def counting(*args: Any) -> bool:
        found = take(*args)
        taken[found] += 1
        return found

    monkeypatch.setattr("analyzer.replay.autoscale_candidates.take_block", counting)
    fast, plain = _run(seed, strategy, raw=raw)
    monkeypatch.setattr(autoscale_blocks, "BLOCKS", False)
    single, _ = _run(seed, strategy, raw=raw)
    _same_decisions(fast, single)
    _same_decisions(fast, plain)
    a, b = fast.autoscaler, single.autoscaler
    # the same answers reused: only how they were taken differs
    assert (a.simulated, a.reused, a.skipped, a.passes) == (b.simulated, b.reused, b.skipped,
                                                            b.passes)  # fmt: skip
    assert b.reused_in_blocks == 0
    assert a.reused_in_blocks >= 3 * taken[True] > 0, "no block taken: the seed proves nothing"
    assert a.reused_in_blocks <= a.reused_by_hints <= a.reused


def test_the_seeds_refuse_blocks_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Across the seeds above, some blocks are refused (an answer simulated again since, a pod,
    # hint or room changed) and the pass goes on answer by answer: the comparison above then
    # covers the refusal's path too.
    refused = 0
    take = autoscale_blocks.take

    def counting(*args: Any) -> bool:
        nonlocal refused
        found = take(*args)
        refused += not found
        return found

    monkeypatch.setattr("analyzer.replay.autoscale_candidates.take_block", counting)
    for seed, strategy in ((2, "kube-default"), (3, "kube-default"), (8, "most-allocated")):
        _run(seed, strategy)
    assert refused > 0


def _block_case() -> tuple[Any, Any, Any, dict[int, Any]]:
    """Three candidates n0, n1, n2 (slots 0-2) whose kept answers moved their pods by hints to
    n3 and n4 (n4 shared by all three), and a loop-like ``ca`` holding them as one block."""
    nodes = [node_doc(f"n{i}", {"cpu": 2000, "memory": 8000}) for i in range(5)]
    pods = [
        pod_doc(f"p{k}-{j}", {"cpu": 300, "memory": 1000, "owner": RS}, NOW, f"n{k}")
        for k in range(3)
        for j in range(2)
    ]
    scenario = build_scenario({"autoscaler": "cluster-autoscaler", "now": NOW,
                               "nodes": nodes, "pods": pods})  # fmt: skip
    sim = RemovalSimulator(scenario.cluster, scenario.profile, scenario.options, scenario.now)
    sim.profile = load_strategy("kube-default")
    sim.static, sim.first_fit, sim.light = {}, True, True
    sim.skip = frozenset({"PodTopologySpread", "InterPodAffinity"})
    memo = SimulationMemo(5)
    hints: Hints[str, str] = Hints()
    entries = {}
    for slot in range(3):
        moved = tuple(scenario.cluster.pods[f"n{slot}"])
        targets = [3, 4]
        sets = [(hint_key(p), f"n{t}") for p, t in zip(moved, targets, strict=True)]
        for key, name in sets:
            hints.set(key, name)
        looks: list[tuple[str, str | None]] = list(sets)
        entries[slot] = memo.entries[slot] = Entry(
            0, 0, (), tuple(map(id, moved)), (-1,), 0, 0,
            Outcome(f"n{slot}", True, moved=moved), targets, np.zeros(0, dtype=np.int64), [],
            looks, sets, by_hints=True,
        )  # fmt: skip
    memo.blocks = autoscale_blocks.Blocks()
    ca = SimpleNamespace(
        sims=memo,
        nodes=[SimpleNamespace(name=f"n{i}") for i in range(5)],
        pod_ids=lambda slot, pods: tuple(map(id, pods)),
        hints=hints,
        record=SimpleNamespace(reused_by_hints=0, reused_in_blocks=0, reused_over_epochs=0),
    )
    return ca, sim, memo, entries


def _offer(ca: Any, entries: dict[int, Any]) -> Any:
    block = autoscale_blocks.Block([0, 1, 2], tuple(entries[s] for s in range(3)))
    ca.sims.blocks.at[0] = block
    return block


def test_a_block_is_taken_only_where_each_answer_would_be() -> None:
    # Taken: the moves added as the three answers add them (n4 gets a pod from each: 900 m
    # more cpu, 3 pods), the candidates no longer destinations, their pods off their lists,
    # each answer counted reused. Refused, state untouched and the block dropped: n4 with room
    # for two answers' pods but not the third's (each answer alone would fit: the one check
    # must count the earlier ones), a hint changed, an answer simulated again since (another
    # object), another order, and fewer removable answers left than the block holds.
    ca, sim, memo, entries = _block_case()
    block = _offer(ca, entries)
    before = sim.state.requested.copy()
    assert autoscale_blocks.take(ca, sim, block, [0, 1, 2], 0, 3, (-1,))
    cpu = sim.state.index_of("cpu")
    assert sim.state.requested[4, cpu] - before[4, cpu] == 900
    assert sim.state.requested[3, cpu] - before[3, cpu] == 900
    assert not sim.destinations[[0, 1, 2]].any() and sim.destinations[[3, 4]].all()
    assert all(sim.pods_on(f"n{s}") == [] for s in range(3))
    assert len(sim.pods_on("n4")) == 3 and memo.reused == 3 == ca.record.reused_in_blocks
    assert memo.used == [entries[0], entries[1], entries[2]]

    def refused(change: Any, order: list[int] | None = None, room: int = 3) -> None:
        ca, sim, memo, entries = _block_case()
        block = _offer(ca, entries)
        change(ca, sim, entries)
        requested = sim.state.requested.copy()
        assert not autoscale_blocks.take(ca, sim, block, order or [0, 1, 2], 0, room, (-1,))
        assert np.array_equal(sim.state.requested, requested)
        assert sim.destinations[[0, 1, 2]].all() and memo.reused == 0
        assert 0 not in memo.blocks.at or order is not None or room < 3

    def two_answers_room(ca: Any, sim: Any, entries: Any) -> None:
        cpu = sim.state.index_of("cpu")
        # n4: 2,000 m, 700 m free after this: two answers' 600 m fit, the third's 300 m not
        sim.state.requested[4, cpu] = 1300
        # alone, each answer's one pod on n4 fits
        assert sim.state.allocatable[4, cpu] - sim.state.requested[4, cpu] >= 300

    def hint_moved(ca: Any, sim: Any, entries: Any) -> None:
        key, _ = entries[2].looks[0]
        ca.hints.set(key, "n1")

    def simulated_again(ca: Any, sim: Any, entries: Any) -> None:
        memo = ca.sims
        memo.entries[1] = dataclasses.replace(entries[1])

    refused(two_answers_room)
    refused(hint_moved)
    refused(simulated_again)
    refused(lambda *_: None, order=[0, 2, 1])
    refused(lambda *_: None, room=2)

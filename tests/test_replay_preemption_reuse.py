"""DefaultPreemption's dry run in the replay takes two answers it computed before instead of
computing them again: the topology filters' answers of the failed ``choose`` just before it
(``ScoreCache.filtered``) and each node's room without the lower-priority pods, kept while no
node is touched (``ReplayPreemption._freed``). Both only skip work: a contended cluster with
spread and anti-affinity constraints, waits and preemptions replays to the same placements,
times and victims with them turned off."""

from __future__ import annotations

import numpy as np
import pytest
from test_replay_reproduction import contended

from analyzer.replay import preemption as preemption_module
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.result import ReplayResult
from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import PodDemand, load_strategy
from analyzer.scheduling.arith import BoolArray


def _same(a: ReplayResult, b: ReplayResult) -> bool:
    arrays = ("node", "placed_at", "wait", "waited", "pending_at_end")
    if not all(np.array_equal(getattr(a, f), getattr(b, f)) for f in arrays):
        return False
    return all(np.array_equal(a.preemptions[c], b.preemptions[c]) for c in a.preemptions)


@pytest.mark.parametrize("strategy", ["kube-default", "most-allocated"])
def test_the_kept_answers_change_no_placement(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inp = prepare(contended(1).snapshot, arrivals="created")
    chosen = Strategy(strategy, load_strategy(strategy))
    handed: list[int] = []
    original = ScoreCache.filtered

    def counting(self: ScoreCache, demand: PodDemand, now: float) -> dict[int, BoolArray]:
        answers = original(self, demand, now)
        handed.append(len(answers))
        return answers

    monkeypatch.setattr(ScoreCache, "filtered", counting)
    kept = replay(inp, chosen, seed=1)
    # not vacuous: the dry runs took the topology answers, and preempted
    assert sum(1 for n in handed if n) >= 10
    assert len(kept.preemptions["victim"]) >= 5

    def nothing(self: ScoreCache, demand: PodDemand, now: float) -> dict[int, BoolArray]:
        return {}

    monkeypatch.setattr(ScoreCache, "filtered", nothing)
    unkept = preemption_module.ReplayPreemption._freed

    def fresh(self: preemption_module.ReplayPreemption, priority: int) -> object:
        self._freed_kept = None  # computed again at every call
        return unkept(self, priority)

    monkeypatch.setattr(preemption_module.ReplayPreemption, "_freed", fresh)
    assert _same(kept, replay(inp, chosen, seed=1))


def test_the_topology_answers_are_handed_over_only_for_the_same_pod_time_and_state() -> None:
    inp = prepare(contended(1).snapshot)
    state = inp.fresh_state()
    active = inp.node_join <= inp.start
    state.present = active
    cache = ScoreCache(load_strategy("kube-default"), state, active)
    spread = [i for i, d in enumerate(inp.demands) if d.spread]
    first, second = (
        spread[0],
        next(i for i in spread if inp.demands[i] is not inp.demands[spread[0]]),
    )
    pod = inp.demands[first]
    cache.choose(inp.shape_keys[first], pod, 100.0, np.random.default_rng(0))
    answers = cache.filtered(pod, 100.0)
    assert cache.topology is not None and len(answers) == len(cache.topology.filters) == 2
    for plugin in cache.topology.filters:  # what the filters answer on this state
        assert np.array_equal(answers[id(plugin)], plugin.filter(state, pod, 100.0).feasible)
    assert cache.filtered(pod, 101.0) == {}  # another instant
    assert cache.filtered(inp.demands[second], 100.0) == {}  # another pod
    cache.node_state_changed([])  # taints or cordons changed
    assert cache.filtered(pod, 100.0) == {}
    cache.choose(inp.shape_keys[first], pod, 100.0, np.random.default_rng(0))
    assert cache.filtered(pod, 100.0)
    cache.touch(0)  # a bind, an unbind, a node joining or leaving
    assert cache.filtered(pod, 100.0) == {}

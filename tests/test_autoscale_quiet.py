"""cluster-autoscaler's quiet instants (``engine.CA_QUIET_INSTANTS``): at an instant before
``next_tick`` and before ``ready_at`` the engine calls ``ready`` alone (it only moves the clock
on) and leaves ``tick`` out (it would do nothing: the runs left out and a settled change's run
are at or after ``next_tick``). The replay with them equals the replay that calls ``ready`` and
``tick`` at every instant: every record (presence, scale-ups, removals, evictions, every (time,
reasons) entry, the counters), every placement.

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0), both
strategies, default timings and short ones with a 7-second scan interval (instants off the
loop's grid, nodes becoming Ready between two runs)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from autoscale_cases import (
    RECHECK_TIMINGS,
    SHORT_TIMINGS,
    assert_same_replay,
    replay_seeded,
    seeded_cases,
)

from analyzer.replay import autoscale_loop, engine

SHORT = {**SHORT_TIMINGS, "provisioning-delay": "45s"}
RECHECK = RECHECK_TIMINGS
CASES = seeded_cases(SHORT)
_replay = replay_seeded


@pytest.mark.parametrize(("seed", "strategy", "raw"), CASES)
def test_quiet_instants_change_nothing(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fails if the engine's test leaves out ``ready_at`` (mutant: ``now < ca.next_tick``
    # alone: a node Ready before the next run joins the record but not the engine's node set)
    # or ``next_tick`` (mutant: ``now < ca.ready_at`` alone: the runs due at event instants are
    # not made); the quiet path is taken (fewer ``tick`` calls than with it off)
    ticks: Counter[bool] = Counter()
    real_tick = autoscale_loop.ClusterAutoscaler.tick

    def tick(ca: Any, now: int, waiting: list[int]) -> list[int]:
        ticks[engine.CA_QUIET_INSTANTS] += 1
        return real_tick(ca, now, waiting)  # type: ignore[no-any-return]

    monkeypatch.setattr(autoscale_loop.ClusterAutoscaler, "tick", tick)
    fast = _replay(seed, strategy, raw)
    monkeypatch.setattr(engine, "CA_QUIET_INSTANTS", False)
    plain = _replay(seed, strategy, raw)
    assert_same_replay(fast, plain)
    assert fast.autoscaler.passes > 0 and fast.autoscaler.removed, "too little exercised"
    for key in fast.segments:
        assert np.array_equal(fast.segments[key], plain.segments[key]), key
    assert 0 < ticks[True] < ticks[False], ticks


def test_nodes_ready_between_runs_are_reached() -> None:
    # what the first test's ``ready_at`` mutant needs to fail: in one of its cases (short
    # timings, 45 s provisioning on a 7 s scan) a node becomes Ready at an instant before the
    # next run of the loop, one that ``now < next_tick`` alone would call quiet
    between: Counter[str] = Counter()
    real_ready = autoscale_loop.ClusterAutoscaler.ready

    def ready(ca: Any, now: int) -> list[int]:
        joining = real_ready(ca, now)
        if joining:
            between["before next run" if now < ca.next_tick else "at a run"] += 1
        return joining  # type: ignore[no-any-return]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(autoscale_loop.ClusterAutoscaler, "ready", ready)
        _replay(5, "most-allocated", SHORT)
    assert between["before next run"] > 0, between

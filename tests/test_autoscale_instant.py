"""The cluster-autoscaler loop's per-instant work (``analyzer.replay.autoscale_loop``) reads kept
values instead of computing them again at every instant; each kept value is the plain
computation's, and the replay with them equals the replay without them in every result.

- ``grid_after``: the loop's first run after the clock, advanced by ``ready`` at each instant
  (``next_time`` and ``settle`` read it);
- the recheck deadline's first run on the grid, kept with the earliest deadline (``_expiry``);
- ``deletable``: the first time ``to_delete`` may answer a node; ``tick`` and ``_run`` do not
  ask ``to_delete`` before it.

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0), both
strategies, default timings and short ones, with a 7-second scan interval that puts the replay's
instants off the loop's grid (runs left out, instants between runs) and recheck deadlines."""

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

from analyzer.replay import autoscale_idle, autoscale_loop
from analyzer.replay.autoscale_scaledown import to_delete
from analyzer.replay.input import NEVER

SHORT = SHORT_TIMINGS
RECHECK = RECHECK_TIMINGS
CASES = seeded_cases(SHORT)
_replay = replay_seeded


def _plain_next_time(ca: Any) -> tuple[int, int | None]:
    """``next_time`` computed from scratch (every grid run by ``_on_grid``, the deadline by
    ``next_expiry``): its answer and the first run it leaves out."""
    if ca.again:  # a run frequent loops start at once: at the clock, nothing left out
        return ca.clock, None
    scan, expiry = ca.settings.scan_interval, ca.recheck.next_expiry()
    first = max(ca.next_tick, ca._on_grid(ca.clock + 1))
    recheck = NEVER
    if expiry is not None:
        at = ca._on_grid(max(expiry, ca.clock + 1))
        after = ca.next_tick
        if ca.settled is not None and at > ca.settled:
            after = max(after, ca.settled + scan)
        recheck = max(after, at)
    if not (ca.dirty or ca.waiting or ca.unneeded):
        return min(ca.ready_at, recheck), None
    if ca.queued is not None and not ca.dirty:
        due = autoscale_idle.until(ca, expiry)
        if due > first:
            left_out = NEVER if due >= NEVER else first + -(-(due - first) // scan) * scan
            return min(ca.ready_at, left_out), first
    return min(ca.ready_at, recheck, first), None


@pytest.mark.parametrize(("seed", "strategy", "raw"), CASES)
def test_kept_runs_are_the_plain_ones(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # at every instant, ``next_time`` answers (and leaves out) what the plain computation does,
    # and the kept values it reads are the grid's formula on the clock and deadline now. Fails
    # if ``ready`` advances ``grid_after`` by one scan only (mutant: no check that the instant
    # is past that run too), or if a recheck deadline's kept run is read for a deadline at or
    # before the clock (mutant: ``at = kept[2]`` whatever the deadline)
    seen: Counter[str] = Counter()
    real = autoscale_loop.ClusterAutoscaler.next_time

    def next_time(ca: Any) -> int:
        assert ca.grid_after == ca._on_grid(ca.clock + 1)
        answer, left_out = _plain_next_time(ca)
        got = real(ca)
        assert (got, ca.idle_from) == (answer, left_out), (ca.clock, got, answer)
        expiry = ca.recheck.next_expiry()
        seen["at once"] += ca.again
        if expiry is not None and not ca.again:  # (not read for a run at once)
            assert ca._expiry_kept[1:] == (expiry, ca._on_grid(expiry))
            seen["recheck past" if expiry <= ca.clock + 1 else "recheck ahead"] += 1
        seen["left out"] += left_out is not None
        return got

    monkeypatch.setattr(autoscale_loop.ClusterAutoscaler, "next_time", next_time)
    _replay(seed, strategy, raw)
    # the comparison reached the kept recheck run and the runs left out
    assert seen["recheck ahead"] > 0 and seen["left out"] > 0, seen


@pytest.mark.parametrize(("seed", "strategy", "raw"), CASES)
def test_to_delete_not_asked_before_deletable_changes_nothing(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the replay in which ``tick``/``_run`` ask ``to_delete`` at every run equals the one that
    # does not ask it before ``deletable``: every record and count, every placement. Fails if
    # the runs ask it only after that time (mutant: ``now <= deletable``: a node unneeded for
    # exactly ``scale-down-unneeded-time`` at a run is deleted one run late)
    asked = Counter[str]()
    real_to_delete = autoscale_loop.to_delete

    def counted(ca: Any, now: int) -> list[int]:
        asked["n"] += 1
        return real_to_delete(ca, now)  # type: ignore[no-any-return]

    monkeypatch.setattr(autoscale_loop, "to_delete", counted)
    fast = _replay(seed, strategy, raw)
    fast_asked, asked["n"] = asked["n"], 0
    monkeypatch.setattr(autoscale_loop, "deletable", lambda ca: -NEVER)
    plain = _replay(seed, strategy, raw)
    assert_same_replay(fast, plain)
    assert fast.autoscaler.removed, "CA removed no node: the seed exercises too little"
    assert fast_asked < asked["n"], (fast_asked, asked["n"])  # else nothing was left out


def test_to_delete_answers_nothing_before_deletable(monkeypatch: pytest.MonkeyPatch) -> None:
    # wherever ``deletable`` is read (``until``, ``tick``, ``_run``), ``to_delete`` at the clock
    # answers nothing if the clock is before it: the fact the shortcut rests on. Fails if
    # ``deletable`` keeps a time after the earliest unneeded node's (mutant: ``max`` over the
    # unneeded times); the replay reaches runs at or after it that delete a node
    seen: Counter[str] = Counter()
    real = autoscale_idle.deletable

    def deletable(ca: Any) -> int:
        first: int = real(ca)
        if ca.clock < first:
            assert to_delete(ca, ca.clock) == []
            seen["before"] += 1
        elif ca.outcomes:
            seen["deleting"] += bool(to_delete(ca, ca.clock))
        return first

    monkeypatch.setattr(autoscale_idle, "deletable", deletable)
    monkeypatch.setattr(autoscale_loop, "deletable", deletable)
    _replay(3, "kube-default", SHORT)
    assert seen["before"] > 0 and seen["deleting"] > 0, seen


def test_kept_runs_on_chosen_clocks_and_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    # the loop of a finished replay, put at chosen instants (through ``ready``: on the grid,
    # just after, mid-scan, one before the next run; steps of none, one and several scans, an
    # instant before the data's start) with chosen recheck deadlines (long past, at the clock,
    # just after, on and off the grid ahead), ``next_tick`` before, inside and after the scan
    # and settled runs: ``next_time`` answers as the plain computation. Fails if a deadline
    # at or before the clock reads the kept run of the deadline (mutant: ``at = kept[2]``
    # whatever the deadline: a recheck answered before the next run), or if ``ready`` does
    # not recompute ``grid_after`` after several scans or before the start (mutants above)
    loops = []
    real_init = autoscale_loop.ClusterAutoscaler.__init__

    def init(ca: Any, *args: Any, **kwargs: Any) -> None:
        real_init(ca, *args, **kwargs)
        loops.append(ca)

    monkeypatch.setattr(autoscale_loop.ClusterAutoscaler, "__init__", init)
    _replay(2, "kube-default", RECHECK)
    ca = loops[0]
    start, scan = ca.inp.start, ca.settings.scan_interval
    ca.ready_at, ca.provisioning, ca.queued = NEVER, {}, None
    ca.dirty = ca.waiting = False
    ca.unneeded = {}
    slot = next(iter(np.flatnonzero(ca.active).tolist()))
    compared = 0
    clocks = [start - 3 * scan - 2, start, start + 5 * scan, start + 5 * scan + 1]
    clocks += [start + 6 * scan - 1, start + 6 * scan - 1, start + 9 * scan + scan // 2]
    clocks += [start + 10 * scan, start + 40 * scan + 3]
    for clock in clocks:
        assert ca.ready(clock) == []
        assert ca.grid_after == ca._on_grid(clock + 1), clock
        after = ca.grid_after
        for next_tick in (clock - scan, clock + 1, clock + scan // 3, after, after + scan):
            for expiry in (
                clock - 2 * scan,
                clock,
                clock + 1,
                clock + 2,
                after,
                after + 3 * scan + 1,
            ):
                for settled in (None, clock + 1, after):
                    ca.next_tick, ca.settled = next_tick, settled
                    ca.recheck.deadlines = {slot: expiry}
                    ca._expiry_kept = None
                    answer, _ = _plain_next_time(ca)
                    assert ca.next_time() == answer, (clock, next_tick, expiry, settled)
                    compared += 1
    assert compared == len(clocks) * 5 * 6 * 3

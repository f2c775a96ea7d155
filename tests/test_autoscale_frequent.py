"""cluster-autoscaler's frequent loops at the end of an instant (``autoscale_settle.trigger``):
when a run starts at once, how the loop's timer restarts, and what interval the candidates limit
then reads (upstream's ``Planner.minUpdateInterval``: the time since the loop's last run). The
replay-level cases (a pod that fits nowhere gets its node ordered at its own instant) are in
tests/test_replay_autoscaler.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from analyzer.autoscaler.recheck import PassIntervals
from analyzer.replay.autoscale_settle import trigger

S = 1_000_000_000
START = 1_000 * S
SCAN = 10 * S


def _loop(clock: int, *, passes: int = 3, **flags: bool) -> Any:
    """A loop whose timer runs at START + k × 10 s, ``passes`` passes made so far (the smallest
    interval then the scan: 10 s), at ``clock``."""
    intervals = PassIntervals(600 * S, SCAN)
    for _ in range(passes):
        intervals.step()
    kept = {"changed": 0}
    return SimpleNamespace(
        productive=flags.get("productive", False),
        unschedulable=flags.get("unschedulable", False),
        clock=clock, inp=SimpleNamespace(start=START), intervals=intervals, anchor=START,
        settings=SimpleNamespace(scan_interval=SCAN), next_tick=START + 30 * S,
        grid_after=START + 30 * S, again=False, kept=kept,
        deadlines_changed=lambda: kept.__setitem__("changed", kept["changed"] + 1),
    )  # fmt: skip


def test_a_pod_unschedulable_between_two_runs_starts_one_then() -> None:
    # the timer's last run was at START + 20 s; a pod becomes unschedulable at START + 23 s:
    # the loop runs at once (at the clock), the next timer run is 10 s after it, and the pass
    # is 3 s after the last: the smallest interval drops from 10 s to 3 s
    ca = _loop(START + 23 * S, unschedulable=True)
    trigger(ca)
    assert ca.again and ca.anchor == ca.next_tick == START + 23 * S
    assert ca.grid_after == START + 33 * S
    assert ca.intervals.peek() == 3 * S
    assert not ca.unschedulable and not ca.productive
    assert ca.kept["changed"] == 1  # the recheck deadline's kept run was on the old grid


def test_a_productive_run_starts_another_at_its_own_instant() -> None:
    # a run at START + 30 s (on the timer's grid) ordered a scale-up: the next run is at the same
    # instant, apart from it by its duration, which the replay does not know: 1 ns
    ca = _loop(START + 30 * S, productive=True)
    trigger(ca)
    assert ca.again and ca.anchor == START + 30 * S
    assert ca.intervals.peek() == 1


@pytest.mark.parametrize(
    ("clock", "passes", "flags"),
    [
        (START + 23 * S, 3, {}),  # nothing scaled, no pod became unschedulable: the timer
        (START - 5 * S, 0, {"unschedulable": True}),  # before the data's window: no run
    ],
)
def test_no_run_at_once(clock: int, passes: int, flags: dict[str, bool]) -> None:
    ca = _loop(clock, passes=passes, **flags)
    trigger(ca)
    assert not ca.again and ca.anchor == START and ca.next_tick == START + 30 * S
    assert ca.intervals.peek() == (SCAN if passes else 600 * S)
    assert not ca.unschedulable  # the signal is used up either way


def test_the_first_pass_keeps_its_interval() -> None:
    # upstream's first UpdateClusterState measures from the zero time: the interval it sees is
    # not shorter than the unneeded time, so a run at once before any pass leaves it
    ca = _loop(START + 3 * S, passes=0, unschedulable=True)
    trigger(ca)
    assert ca.again and ca.intervals.peek() == 600 * S
    ca.intervals.step()  # that first pass: the passes after it read the scan, not 3 s
    assert ca.intervals.peek() == SCAN

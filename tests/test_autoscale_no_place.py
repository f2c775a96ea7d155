"""A ``NoPlaceToMovePods`` answer on a candidate's first pod changes nothing a later simulation of
the pass reads (no pod placed: no hint set, the round-robin start where it was), so the replay
treats it as it treats a ``BlockedByPod`` one (``analyzer.replay.autoscale_reuse.Entry.quiet``):
out of the later answers' context, the next pass standing with the node skipped, the pass at its
deadline standing while no node has room for that first pod (``autoscale_steady``,
``autoscale_expiry``).

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0), the
lever on against off (``autoscale_reuse.NO_PLACE_QUIET``) in the same process, compared after
every pass: what a pass leaves is the same, fewer passes run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autoscale_cases import after_each_pass, same_after_each_pass
from test_autoscale_reuse import _same_decisions

from analyzer.replay import autoscale_reuse
from analyzer.replay.autoscale_reuse import Entry

RECHECK = {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}


def _after_each_pass(
    seed: int, strategy: str, raw: Any, lever: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[Any, ...]], int, Any]:
    """``after_each_pass`` with ``autoscale_reuse.NO_PLACE_QUIET`` set to ``lever``, without
    the loop's own state (with the lever on, a pass may stand at the end of its instant,
    ``autoscale_settle``, where with it off the tick runs it): the states, how many passes
    stood at a deadline with a node found with no place for its first pod, the result."""
    levers = {(autoscale_reuse, "NO_PLACE_QUIET"): lever}
    seen, fired, result = after_each_pass(
        seed, strategy, raw, levers, monkeypatch, loop_state=False
    )
    return seen, sum(1 for _, _, inert in fired if inert), result


@pytest.mark.parametrize(
    ("seed", "strategy", "raw"),
    [(1, "kube-default", None), (7, "kube-default", None), (2, "kube-default", RECHECK),
     (8, "kube-default", RECHECK), (9, "most-allocated", RECHECK)],
)  # fmt: skip
def test_a_first_pod_without_a_place_leaves_what_the_pass_run_would(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After every pass the reasons recorded and the summary's (keys, values, order), the
    # deadlines (and their order), ``last_pass``, the unneeded nodes and both
    # generations of the hints are those of the same pass with the lever off; the decisions
    # are the same and no more passes run. Mutants caught (each fails seeds here): the skipped
    # node's ``NoPlaceToMovePods`` count left in the next pass's reasons (``skip_blocked``);
    # no check of room for the first pod at the deadline (``classify``); a ``NoPlaceToMovePods``
    # answer that placed pods before failing taken as quiet.
    fast, _fired, a = _after_each_pass(seed, strategy, raw, True, monkeypatch)
    full, none, b = _after_each_pass(seed, strategy, raw, False, monkeypatch)
    assert none == 0
    same_after_each_pass(fast, full)
    x, y = a.autoscaler, b.autoscaler
    assert x.passes + x.skipped == y.passes + y.skipped and x.passes <= y.passes
    _same_decisions(a, b)


def test_the_lever_acts_on_these_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    # The comparison above is not empty: over the seeds, passes stood at a deadline with a
    # node found with no place for its first pod, and fewer passes ran with the lever on.
    # (Caught: the removable candidates of the pass left as destinations in the room check,
    # which then finds room on the nodes they empty and never stands.)
    fired_total, saved = 0, 0
    for seed, strategy, raw in [(1, "kube-default", None), (2, "kube-default", RECHECK)]:
        _, fired, a = _after_each_pass(seed, strategy, raw, True, monkeypatch)
        _, _, b = _after_each_pass(seed, strategy, raw, False, monkeypatch)
        fired_total += fired
        saved += b.autoscaler.passes - a.autoscaler.passes
    assert fired_total > 0 and saved > 0


def _entry(reason: str, sets: list[tuple[str, str]], start: int, end: int) -> Entry:
    from analyzer.autoscaler.removal_state import Outcome

    return Entry(
        made=1, epoch=0, context=0, pods=(1,), pdbs=(), start=start, end=end,
        outcome=Outcome("a", False, reason), targets=[], reads=np.zeros(0, dtype=np.int64),
        rows=[], looks=[], sets=sets,
    )  # fmt: skip


def test_quiet_answers_are_those_that_placed_no_pod() -> None:
    # Blocked by a pod: quiet whatever else. No place: quiet only if no pod was placed before
    # the one that failed (a placed pod sets its hint, and a search moves the start).
    assert _entry("BlockedByPod", [], 0, 0).quiet
    assert _entry("NoPlaceToMovePods", [], 3, 3).quiet
    assert not _entry("NoPlaceToMovePods", [("p0", "b")], 3, 3).quiet  # placed by its hint
    assert not _entry("NoPlaceToMovePods", [], 3, 4).quiet  # (a start moved: placed)
    assert not _entry("", [], 0, 0).quiet  # removable

"""A scale-down pass at the recheck deadline of nodes the last pass skipped as recently
unremovable stands when each of them is over the threshold by then or blocked by a pod again
(``analyzer.replay.autoscale_expiry``): it leaves what the pass run would.

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0), the
lever on against off (``autoscale_scaledown.EXPIRY``) in the same process, compared after every
pass, and the reasons' order of ``expire`` on a hand-made summary.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from autoscale_cases import after_each_pass, same_after_each_pass
from test_autoscale_reuse import _same_decisions

from analyzer.autoscaler.recheck import RECENTLY_UNREMOVABLE, UnremovableNodes
from analyzer.replay import autoscale_expiry, autoscale_scaledown
from analyzer.replay.autoscale_reuse import PassSummary

RECHECK = {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}


def _after_each_pass(
    seed: int, strategy: str, raw: Any, lever: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[Any, ...]], list[tuple[int, int, int]], Any]:
    """``after_each_pass`` with ``autoscale_scaledown.EXPIRY`` set to ``lever``."""
    levers = {(autoscale_scaledown, "EXPIRY"): lever}
    return after_each_pass(seed, strategy, raw, levers, monkeypatch)


@pytest.mark.parametrize(
    ("seed", "strategy", "raw"),
    [(1, "kube-default", None), (7, "kube-default", None), (2, "kube-default", RECHECK),
     (8, "kube-default", RECHECK), (9, "most-allocated", RECHECK)],
)  # fmt: skip
def test_a_pass_at_a_deadline_that_stands_leaves_the_state_of_the_pass_run(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After every pass (run, or stood at a deadline) the reasons recorded and the summary's
    # (keys, values and their order), the nodes found blocked, the deadlines (and their
    # order), ``dirty``, ``last_pass``, the unneeded nodes and both generations of the hints
    # are those of the same pass run; the decisions are the same and fewer passes run.
    # Mutants caught: a node whose pods can move taken as blocked (``classify`` without the
    # drain rules), the blocked ones' deadlines not added, ``dirty`` not set, ``last_pass``
    # saying no deadline was added (the next pass then runs instead of skipping them), the
    # ``NotUnderutilized`` count not raised for a node over the threshold.
    fast, fired, a = _after_each_pass(seed, strategy, raw, True, monkeypatch)
    full, none, b = _after_each_pass(seed, strategy, raw, False, monkeypatch)
    assert not none and fired, fired
    assert any(o for o, _, _ in fired)
    assert strategy != "kube-default" or any(k or n for _, k, n in fired)
    same_after_each_pass(fast, full)
    # as many passes, fewer run (a pass after a stood one may run where the one after a run
    # pass stands: it is checked against the older summary, which read more)
    x, y = a.autoscaler, b.autoscaler
    assert x.passes + x.skipped == y.passes + y.skipped and x.passes < y.passes
    _same_decisions(a, b)


def _loop(reasons: dict[str, int], deadlines: dict[int, int]) -> Any:
    """The loop's state ``expire`` reads and writes: a summary with ``reasons`` that found no
    node unremovable, four slots, the recheck deadlines left."""
    summary = PassSummary(
        epoch=0, provisioning=0, look=np.zeros(4, dtype=bool), reads=np.zeros(4, dtype=bool),
        failed=[], budgets=False, reasons=dict(reasons), blocked=(),
    )  # fmt: skip
    recheck: UnremovableNodes[int] = UnremovableNodes()
    recheck.deadlines = dict(deadlines)
    changed: list[int] = []
    return SimpleNamespace(
        sims=SimpleNamespace(summary=summary, clear=np.ones(4, dtype=bool)),
        recheck=recheck,
        settings=SimpleNamespace(unremovable_node_recheck_timeout=300),
        dirty=False,
        last_pass=(7, False, False),
        deadlines_changed=lambda: changed.append(1),
        changed=changed,
    )


def test_expire_records_the_reasons_in_the_order_a_pass_adds_them() -> None:
    # A pass adds its reasons in this order (``autoscale_scaledown.update_unneeded``):
    # ``RecentlyUnremovable`` (the deadlines left), ``NotUnderutilized``, the judged nodes'
    # other reasons, its simulations' (here ``BlockedByPod``), ``Unneeded``; a reason at 0 is
    # not recorded. Three nodes were skipped; at their deadline one (slot 0) is over the
    # threshold and two (3, 1) are blocked again: none is skipped now, one more counts
    # ``NotUnderutilized``, two are blocked, judged (``look``), found unremovable in slot
    # order and skipped again until the next deadline.
    ca = _loop(
        {RECENTLY_UNREMOVABLE: 3, "NotUnderutilized": 5, "ScaleDownDisabledAnnotation": 1,
         "Unneeded": 2},
        {2: 900},
    )  # fmt: skip
    autoscale_expiry.expire(ca, [0], [1, 3], 12, 1_000)
    summary = ca.sims.summary
    assert list(summary.reasons.items()) == [
        ("NotUnderutilized", 6), ("ScaleDownDisabledAnnotation", 1), ("BlockedByPod", 2),
        ("Unneeded", 2),
    ]  # fmt: skip
    assert summary.blocked == (1, 3) and summary.look.tolist() == [False, True, False, True]
    assert list(ca.recheck.deadlines.items()) == [(2, 900), (1, 1_300), (3, 1_300)]
    assert ca.dirty and ca.last_pass == (12, False, True) and ca.changed == [1]
    assert ca.sims.clear.tolist() == [True, False, True, False]


def test_expire_with_nodes_over_the_threshold_only_adds_no_deadline() -> None:
    # Two of three skipped nodes over the threshold at their deadline, the third still
    # skipped: ``RecentlyUnremovable`` 1 (first), ``NotUnderutilized`` from 0 (not recorded)
    # to 2 (second), no simulation reason, nothing found unremovable, so no deadline added,
    # ``dirty`` left as it was and ``last_pass`` saying none was added.
    ca = _loop({RECENTLY_UNREMOVABLE: 3, "Unneeded": 4}, {2: 900})
    autoscale_expiry.expire(ca, [0, 1], [], 12, 1_000)
    summary = ca.sims.summary
    assert list(summary.reasons.items()) == [
        (RECENTLY_UNREMOVABLE, 1), ("NotUnderutilized", 2), ("Unneeded", 4),
    ]  # fmt: skip
    assert summary.blocked == () and not summary.look.any()
    assert list(ca.recheck.deadlines.items()) == [(2, 900)]
    assert not ca.dirty and ca.last_pass == (12, False, False)


def test_expire_orders_the_simulations_reasons_as_the_nodes_are_found() -> None:
    # At their deadline slot 0 is over the threshold, slot 3 blocked by a pod and slot 1 finds
    # no place for its first pod (its requests ``row``). The pass simulates 1 then 3 (slot
    # order: neither empty nor unneeded before), so ``NoPlaceToMovePods`` is recorded before
    # ``BlockedByPod``; both are found unremovable (``blocked`` in that order, one of them
    # ``no_place``), given deadlines in that order, and the first pod's requests join the
    # summary's ``failed`` rows (room for it would change 1's answer).
    ca = _loop({RECENTLY_UNREMOVABLE: 4, "NotUnderutilized": 5, "Unneeded": 2}, {2: 900})
    row = np.array([1500, 2**30, 0])
    autoscale_expiry.expire(ca, [0], [3], 12, 1_000, [(1, row)])
    summary = ca.sims.summary
    assert list(summary.reasons.items()) == [
        (RECENTLY_UNREMOVABLE, 1), ("NotUnderutilized", 6), ("NoPlaceToMovePods", 1),
        ("BlockedByPod", 1), ("Unneeded", 2),
    ]  # fmt: skip
    assert summary.blocked == (1, 3) and summary.no_place == 1
    assert len(summary.failed) == 1 and summary.failed[0] is row
    assert list(ca.recheck.deadlines.items()) == [(2, 900), (1, 1_300), (3, 1_300)]
    assert ca.dirty and ca.last_pass == (12, False, True)

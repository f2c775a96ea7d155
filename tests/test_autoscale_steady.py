"""A node a scale-down pass judged with a verdict a bind keeps (``NotUnderutilized``; a static
reason of a node judged whatever its ratio: ``autoscale_steady.steady``) is not verified
again after a bind (``SimulationMemo.touch``: ``clear``); after an unbind it is.

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0): the
fast path decides as the plain path, and at every skip test the incremental answer (nodes
touched since its last True answer, steady ones after a bind left out) is the full one (every
node touched since the pass, a steady one passing only if nothing was unbound from it since).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_autoscale_blocked import RECHECK, _run
from test_autoscale_reuse import _same_decisions

from analyzer.replay.autoscale_reuse import SimulationMemo


@pytest.mark.parametrize(
    ("seed", "strategy", "raw"),
    [(6, "kube-default", None), (6, "kube-default", RECHECK), (7, "kube-default", None)],
)
def test_a_bind_on_a_node_judged_with_a_verdict_it_keeps_is_not_verified(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counted: True answers given with a node judged by the summary touched since (only bound
    # to, steady). Mutants caught: an unbind on a steady node not verified either (``touch``
    # leaves it out of ``pending``: the incremental answer True where the full one is False),
    # and the full check passing a steady node whatever was unbound from it (the other way).
    # Fails on the branch point (no steady node: no such True answer), and with ``steady``
    # giving no node (mutant tried: ``NotUnderutilized`` left out of its mask).
    real = SimulationMemo.unchanged
    seen = {"calls": 0, "steady": 0}

    def both(memo: SimulationMemo, *args: Any) -> bool:
        memo.incremental = False
        try:
            full = real(memo, *args)
        finally:
            memo.incremental = True
        look = memo.summary.look if memo.summary is not None else None
        # a judged node not skipped now (a skipped one is a skipped node's case) nor verified
        # by the caller (``autoscale_expiry``): only ``steady`` lets such an answer be True
        recent, verified = args[6], args[7] if len(args) > 7 else ()
        judged = look is not None and any(
            look.item(n) and n not in recent and n not in verified for n in memo.touched
        )
        answer = real(memo, *args)
        assert answer == full, seen["calls"]
        seen["calls"] += 1
        seen["steady"] += answer and judged
        return answer

    monkeypatch.setattr(SimulationMemo, "unchanged", both)
    fast, plain = _run(seed, strategy, raw)
    _same_decisions(fast, plain)
    assert seen["steady"] > 0, seen

"""A scale-down pass with no candidate to simulate ends without a simulator
(``analyzer.replay.autoscale_scaledown.SHORTCUT``): it leaves every piece of the loop's state as
the same pass run through the simulator does.

Seeded generator clusters (24 nodes, half a day at a 5-minute step, each pool's minSize 0), the
reuse path with the shortcut and without it, in the same process on the same input. After every
call of ``update_unneeded`` the state the next passes read is taken (the unneeded nodes and
their times, the kept outcomes, the candidates limit and recheck deadlines, ``dirty`` and
``hints_stable``, both generations of the scheduling hints, the record's counters and last
reasons, the memo's pass count, touched sets and the whole pass summary the next skip test reads,
and the live requests and pod counts): the two sequences are equal, call by call. The shortcut
must have been taken (else the comparison proves nothing).

Mutants tried (each fails ``test_a_pass_with_no_candidate_leaves_the_state_of_a_full_one``):
the shortcut without ``sims.start_pass()`` (the memo's pass count and touched sets differ),
without ``hints.drop_old()`` (the hints' generations differ), and ``_end_pass`` told PDBs covered
the pass (the summary's ``budgets`` differs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autoscale_cases import same_after_each_pass, seeded_autoscaled

from analyzer.autoscaler import removal
from analyzer.replay import autoscale_loop, autoscale_scaledown
from analyzer.replay.engine import Strategy, replay
from analyzer.scheduling.strategies import load_strategy


def _state(ca: Any, now: int) -> tuple[Any, ...]:
    """What a later pass or the loop reads of ``ca`` after a pass (module docstring)."""
    s, rec = ca.sims.summary, ca.record
    summary = None
    if s is not None:
        failed = [r.tolist() for r in s.failed]
        summary = (s.epoch, s.provisioning, s.look.tobytes(), s.reads.tobytes(), failed,
                   s.budgets, list(s.reasons.items()))  # fmt: skip
    return (
        now,
        ca.dirty,
        ca.hints_stable,
        ca.last_pass,
        ca.last_unneeded,
        list(ca.outcomes),
        dict(ca.unneeded),
        dict(ca.recheck.deadlines),
        dict(ca.hints.current),
        dict(ca.hints.old),
        (rec.passes, rec.skipped, rec.simulated, rec.reused, rec.hinted),
        list(rec.reasons[-1][1].items()) if rec.reasons else None,
        ca.sims.passes,
        sorted(ca.sims.touched),
        sorted(ca.sims.pending),
        sorted(ca.sims.leaning),
        len(ca.sims.used),
        summary,
        ca.state.requested.tobytes(),
        ca.state.pod_count.tobytes(),
    )


def _passes(
    seed: int, strategy: str, raw: Any, shortcut: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[Any, ...]], int, Any]:
    """The state after every ``update_unneeded`` call of one replay, the simulators built, and
    the result."""
    auto, groups, settings = seeded_autoscaled(seed, raw)
    seen: list[tuple[Any, ...]] = []
    built = [0]
    real, real_init = autoscale_scaledown.update_unneeded, removal.RemovalSimulator.__init__

    def update(ca: Any, now: int) -> None:
        assert ca.reuse  # the reuse path, where the shortcut applies
        real(ca, now)
        seen.append(_state(ca, now))

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        real_init(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(autoscale_scaledown, "SHORTCUT", shortcut)
        m.setattr(autoscale_loop, "update_unneeded", update)
        m.setattr(removal.RemovalSimulator, "__init__", init)
        result = replay(auto, Strategy(strategy, load_strategy(strategy)), seed,
                        autoscaler=(groups, settings))  # fmt: skip
    return seen, built[0], result


@pytest.mark.parametrize(
    ("seed", "strategy", "raw"),
    [
        # (seed 1 runs 17 passes since the passes at a recheck deadline stand: too few)
        (4, "kube-default", None),
        (2, "most-allocated", None),
        # the candidates limit binds and rechecks come every 2 minutes
        (6, "kube-default", {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}),
    ],
)  # fmt: skip
def test_a_pass_with_no_candidate_leaves_the_state_of_a_full_one(
    seed: int, strategy: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, fast_built, a = _passes(seed, strategy, raw, True, monkeypatch)
    full, full_built, b = _passes(seed, strategy, raw, False, monkeypatch)
    same_after_each_pass(fast, full)
    # passes ended without a simulator (each full pass builds one; the shortcut none)
    assert full_built - fast_built > 5, (full_built, fast_built)
    assert a.autoscaler.removed, "CA removed no node: the seed exercises too little"
    assert a.autoscaler.reasons == b.autoscaler.reasons
    assert np.array_equal(a.node, b.node)


@pytest.mark.parametrize("few", [64, 0])
@pytest.mark.parametrize(("seed", "strategy"), [(4, "kube-default"), (2, "most-allocated")])
def test_the_kept_eligibility_verdicts_are_fresh_ones(
    seed: int, strategy: str, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``_judge`` judges a node again only when its pods' version moved, and ``empty_ones``
    # asks a candidate's emptiness again likewise: at every pass, the candidates, empty ones
    # and reasons (with their order) against every node of the pass judged afresh
    # (``eligibility.check``, ``has_no_pod_to_move``) in a plain loop. Fails if a verdict is
    # kept past a change of the node's pods (mutants tried: no node judged again once judged;
    # no candidate's emptiness asked again once asked; every node looked at taken for a
    # candidate on the masks). ``few``: ``FEW_LOOKED``, 0 to have every pass's judging on the
    # masks (these 24-node clusters look at fewer nodes than the default 64: plain loops).
    from analyzer.autoscaler.eligibility import check
    from analyzer.autoscaler.planner import has_no_pod_to_move

    real = autoscale_scaledown._judge
    calls = {"passes": 0, "candidates": 0}

    def fresh(ca: Any, look: list[int], reasons: dict[str, int], now: int, *mask: Any) -> Any:
        expected = dict(reasons)
        candidates, empty = [], set()
        groups, _ = ca.member_groups()
        seconds = now / autoscale_scaledown.SECOND
        for slot in look:
            node = ca.nodes[slot]
            node = type(node)(node.name, autoscale_scaledown._allocatable(ca, slot),
                              node.labels, node.annotations)  # fmt: skip
            pods = ca.pods_of(slot)
            elig = check(node, pods, groups.get(node.name), ca.options, seconds)
            if elig.reason:
                expected[elig.reason] = expected.get(elig.reason, 0) + 1
                continue
            candidates.append(slot)
            if has_no_pod_to_move(pods, ca.options, seconds):
                empty.add(slot)
        got = real(ca, look, reasons, now, *mask)
        assert got == candidates, now
        assert autoscale_scaledown.empty_ones(ca, got, now) == empty, now
        assert list(reasons.items()) == list(expected.items()), now
        calls["passes"] += 1
        calls["candidates"] += len(candidates)
        return got

    monkeypatch.setattr(autoscale_scaledown, "_judge", fresh)
    monkeypatch.setattr(autoscale_scaledown, "FEW_LOOKED", few)
    _, _, result = _passes(seed, strategy, None, True, monkeypatch)
    assert result.autoscaler.removed
    assert calls["passes"] > 20 and calls["candidates"] > 20, calls


@pytest.mark.parametrize("seed", [2, 5, 7])
def test_the_min_size_check_is_left_out_only_where_it_refuses_none(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``_kept`` answers "none kept" without ``planner.admit`` where each removable node's group
    # is above its minSize by at least as many nodes as are removable: at every pass with
    # removable nodes, its answer against ``admit``'s. Each pool's minSize is its size at the
    # start less one, so groups reach it and ``admit`` keeps nodes. Counted: passes answered
    # without ``admit`` and passes where it keeps some. Mutants caught: the bound one short
    # (``< count - 1``: ``admit`` left out where a group has one node too few above its
    # minSize for every removable one; each seed here has such a pass), and ``admit`` never
    # asked.
    import dataclasses

    from analyzer.autoscaler.planner import admit
    from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
    from analyzer.replay.input import prepare
    from analyzer.sources import SyntheticSpec, generate

    cluster = generate(SyntheticSpec(seed=seed, nodes=24, days=0.5, step=300))
    pools = cluster.snapshot.nodes["pool"].fillna("default").astype(str).replace("", "default")
    bounds = {p: GroupBounds(min_size=max(n - 1, 0)) for p, n in pools.value_counts().items()}
    settings = dataclasses.replace(parse_settings(None), groups=bounds)
    auto, groups = with_node_groups(prepare(cluster.snapshot), settings)
    real = autoscale_scaledown._kept
    seen = {"passes": 0, "without": 0, "kept": 0}

    def checked(ca: Any, outcomes: Any, sizes: list[int], cluster: Any) -> list[str]:
        got = real(ca, outcomes, sizes, cluster)
        if outcomes:
            expected = admit(list(outcomes.values()), cluster)[2]
            assert got == expected, (got, expected)
            of, low = ca.groups.of_node, ca.groups.min_size
            seen["passes"] += 1
            seen["without"] += all(sizes[of[s]] - low[of[s]] >= len(outcomes) for s in outcomes)
            seen["kept"] += bool(expected)
        return got

    monkeypatch.setattr(autoscale_scaledown, "_kept", checked)
    chosen = Strategy("kube-default", load_strategy("kube-default"))
    replay(auto, chosen, seed, autoscaler=(groups, settings))
    assert seen["without"] > 0 and seen["kept"] > 0, seen

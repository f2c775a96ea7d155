"""cluster-autoscaler's recheck timeout and candidates limit in the replay (analyzer.autoscaler.
recheck): a node the removal simulation found unremovable is skipped as ``RecentlyUnremovable``
until ``unremovable-node-recheck-timeout`` (default 5m) after that pass, and a pass stops
simulating once ``unneededNodesLimit`` removable nodes are found (2 × max-scale-down-parallelism
on the first pass). Hand-made clusters (kube-default, 4-core nodes, 1-minute data), the per-pass
reasons as CA would report them; the fast path (exact reuse) must answer as the plain one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from replay_fixtures import N, P, build

from analyzer.autoscaler.recheck import UnremovableNodes, candidate_order, unneeded_limit
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy

S = 10**9


def _replay(nodes: list[N], pods: list[P], raw: Any, minutes: int) -> tuple[Any, Any, int]:
    snap = build(nodes, pods, minutes=minutes)
    snap.pods["owner_name"] = np.where(snap.pods["owner_kind"] == "DaemonSet", "ds", "web-5d9f")
    inp = prepare(snap)
    settings = dataclasses.replace(parse_settings(raw), groups={"pool": GroupBounds(min_size=0)})
    auto, groups = with_node_groups(inp, settings)
    chosen = Strategy("kube-default", load_strategy("kube-default"))
    fast = replay(auto, chosen, 0, autoscaler=(groups, settings))
    plain = replay(auto, chosen, 0, autoscaler=(groups, dataclasses.replace(settings, reuse=False)))
    assert fast.autoscaler.reasons == plain.autoscaler.reasons
    assert fast.autoscaler.removed == plain.autoscaler.removed
    return fast.autoscaler, plain.autoscaler, auto.start


def _passes(record: Any, start: int) -> dict[float, dict[str, int]]:
    """Seconds from the start -> the reasons of the last record at that instant."""
    return {(t - start) / S: counts for t, counts in record.reasons}


# a (one pod slot) holds p0 (1.5 cores); b 2.5 cores of DaemonSet, c 3.5: from 1:00 to 20:00 p2
# (1 core) on b leaves no room for p0 anywhere; b and c stay above 0.5 (NotUnderutilized)
BLOCKED = (
    [N("a", pods=1), N("b"), N("c")],
    [
        P("ds-b", "b", cpu=2500, owner="DaemonSet"),
        P("ds-c", "c", cpu=3500, owner="DaemonSet"),
        P("p0", "a", cpu=1500, start=0),
        P("p2", "b", cpu=1000, start=1, end=20),
    ],
)


def test_a_node_found_unremovable_is_not_simulated_again_before_the_timeout() -> None:
    fast, plain, start = _replay(*BLOCKED, None, minutes=30)
    passes = _passes(plain, start)
    # 0:10 the first pass: p0 fits b, a unneeded. p2 is bound at 1:00 after that instant's run,
    # so the pass at 1:10 finds a unremovable: deadline 6:10; the pass that follows (1:20,
    # after the state changed) skips it. Re-judged at 6:10, 11:10, 16:10 (still blocked) ...
    assert passes[10] == {"NotUnderutilized": 2, "Unneeded": 1}
    for t in (70, 370, 670, 970):
        assert passes[t] == {"NotUnderutilized": 2, "NoPlaceToMovePods": 1}, t
        assert passes[t + 10] == {"RecentlyUnremovable": 1, "NotUnderutilized": 2}, t
    # ... p2 leaves at 20:00: that pass still skips a (its deadline is 21:10) ...
    assert passes[1200] == {"RecentlyUnremovable": 1, "NotUnderutilized": 2}
    # ... and at 21:10 p0 fits b again: unneeded
    assert passes[1270] == {"NotUnderutilized": 2, "Unneeded": 1}
    # no pass between those judged a but the ones CA's scheduling hints add: 0:20 and 21:20
    # (the pass before searched p0 onto b and set its hint b, which the next pass reads:
    # docs/autoscaling.md "scheduling hints"); each pass that judged a simulated it once
    assert passes[20] == passes[1280] == {"NotUnderutilized": 2, "Unneeded": 1}
    judged = [t for t, c in passes.items() if "RecentlyUnremovable" not in c]
    assert judged == [10, 20, 70, 370, 670, 970, 1270, 1280]
    assert plain.simulated == 8
    # the fast path: a's answer at 1:10 failed on its first pod (p0 fits nowhere: no hint set,
    # nothing moved), so the passes at its 5-minute rechecks stand as the 1:10 one while no
    # node frees room for p0 (``autoscale_expiry``, ``Entry.quiet``); no answer at 0:20 nor
    # 21:20 (each would place p0 by the hint the pass before set, where it went there: those
    # passes stand, ``autoscale_steady.repeats``). Run: 0:10, 1:10, 20:00 (p2 left b: room for
    # p0, a skipped) and 21:10, a simulated in all but the 20:00 one
    assert (fast.passes, fast.simulated, fast.reused) == (4, 3, 0)


def test_the_recheck_timeout_is_the_flag() -> None:
    # 2m: re-judged at 1:10 + 2:00 = 3:10, then every 2 minutes; 0s: judged at every pass
    _, plain, start = _replay(*BLOCKED, {"unremovable-node-recheck-timeout": "2m"}, minutes=10)
    passes = _passes(plain, start)
    judged = [t for t, c in passes.items() if "RecentlyUnremovable" not in c and t < 600]
    assert judged == [10, 20, 70, 190, 310, 430, 550]  # 0:20: the hint p0 -> b (above)
    _, plain, start = _replay(*BLOCKED, {"unremovable-node-recheck-timeout": "0s"}, minutes=10)
    assert all("RecentlyUnremovable" not in c for _, c in plain.reasons)
    # without a deadline nothing changes after 1:10 until p2 leaves (20:00; the replay runs on
    # to its last pod's end), so no pass runs between but 1:20: the 1:10 pass tried p0's hint b
    # (set at 0:10, read at 0:20) and set none, so 1:20 reads no hint (then the hints stand);
    # at 20:00 p0 fits b again
    assert [(t - start) / S for t, _ in plain.reasons] == [10, 20, 70, 80, 1200]
    assert plain.reasons[-1][1] == {"NotUnderutilized": 2, "Unneeded": 1}


def test_the_limit_stops_the_first_pass_after_twice_the_parallelism() -> None:
    # 22 empty nodes and one with a pod: 23 candidates. First pass (0:10, CA's smallest update
    # interval is still scale-down-unneeded-time): limit min(0 + 2N, N * (600 // 600) + N) = 2N
    nodes = [N(f"e{i:02d}") for i in range(23)]
    pods = [P("p0", "e00", cpu=500, start=0)]
    _, plain, start = _replay(nodes, pods, None, minutes=12)
    passes = _passes(plain, start)
    assert passes[10] == {"Unneeded": 20, "UnneededNodesLimit": 3}
    # second pass (0:20, interval 10 s): limit min(20 + 20, 10 * 60 + 10) = 40, all judged; the
    # pod's node is last (not empty) and every other node is already removable: no place
    assert passes[20] == {"Unneeded": 22, "NoPlaceToMovePods": 1}
    # the first 20 were unneeded from 0:10 (the previous candidates kept first): 10 go at the
    # first run when they have been unneeded longer than 10 minutes, 10:20 (upstream's
    # ``since + unneededTime`` strictly before the loop's time; max-scale-down-parallelism),
    # the rest as the budget allows
    removed = [(t - start) / S for t, _, _ in plain.removed]
    assert removed.count(620) == 10 and min(removed) == 620
    assert sum(plain.reasons[0][1].values()) == 23  # every node has one reason

    _, plain, start = _replay(nodes, pods, {"max-scale-down-parallelism": 2}, minutes=1)
    passes = _passes(plain, start)
    assert passes[10] == {"Unneeded": 4, "UnneededNodesLimit": 19}  # 2 x 2
    assert passes[20] == {"Unneeded": 8, "UnneededNodesLimit": 15}  # min(4 + 4, 2 * 60 + 2)


@pytest.mark.parametrize(
    ("parallelism", "unneeded", "seconds", "interval", "limit"),
    [
        (10, 0, 600, 600, 20),  # the first pass: 2N
        (10, 5, 600, 10, 25),  # U + 2N
        (10, 700, 600, 10, 610),  # N * 600 / 10 + N
        (10, 0, 0, 1, 20),  # unneeded time 0: taken as the interval
        (3, 4, 25, 10, 9),  # N * (25 // 10) + N = 9 < 4 + 6
        (0, 7, 600, 10, 0),  # no parallelism: nothing simulated
    ],
)
def test_unneeded_nodes_limit_by_hand(
    parallelism: int, unneeded: int, seconds: int, interval: int, limit: int
) -> None:
    assert unneeded_limit(parallelism, unneeded, seconds, interval) == limit


def test_deadlines_end_at_their_time_and_with_their_node() -> None:
    nodes: UnremovableNodes[str] = UnremovableNodes()
    nodes.add_timeout("a", 300)
    nodes.add_timeout("b", 310)
    assert not nodes.update(299, lambda n: True) and nodes.recent("a")
    assert nodes.update(300, lambda n: True)  # not after 300: dropped at 300
    assert not nodes.recent("a") and nodes.recent("b") and nodes.next_expiry() == 310
    assert nodes.update(301, lambda n: n != "b") and nodes.deadlines == {}  # b is gone
    assert candidate_order(["x", "e", "p", "q"], {"e"}, {"q"}) == ["e", "q", "x", "p"]

"""A node that leaves the data: its pods are tried again at once (as arrivals), and wait only
when they fit nowhere.

kube-scheduler never sees the evicted pod again: its controller creates a new one, which goes to
the active queue and is scheduled at once. Until 2026-12-01 the replay put such pods in its
pending queue untried, and retried the queue only when capacity freed somewhere they fit, so a
pod whose node left waited (here to the end of the hour) beside nodes with plenty of room.
"""

from __future__ import annotations

from typing import Any

from replay_fixtures import N, P, build

from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy


def _replay(nodes: list[N], pods: list[P]) -> Any:
    snap = build(nodes, pods, minutes=60)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: they may move
    inp = prepare(snap)
    return replay(inp, Strategy("kube-default", load_strategy("kube-default", None)), 0)


def test_a_pod_whose_node_left_is_placed_at_once_where_there_is_room() -> None:
    # b holds the only pods' room until it leaves at 2:00 (a joins at 1:00, empty): b's pods
    # go to a at 2:00, with no wait
    result = _replay([N("a", first=1), N("b", last=2)], [P("p1", "b"), P("p2", "b")])
    assert not result.wait.any()
    assert result.evicted == 2


def test_a_pod_whose_node_left_waits_until_a_node_has_room() -> None:
    # b leaves at 2:00 and a joins at 10:00: b's pod waits those 8 minutes
    result = _replay([N("a", first=10), N("b", last=2)], [P("p1", "b")])
    assert int(result.wait[0]) == 8 * 60 * 10**9

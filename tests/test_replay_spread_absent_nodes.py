"""PodTopologySpread in a replay counts only the nodes that exist at that instant.

kube-scheduler's PodTopologySpread counts the domains of the nodes in its snapshot; a node that
has not joined yet, or has left, is not there. The replay keeps every node of the data in its
state and marks the present ones (``ClusterState.present``); until 2026-12-01 the filter counted
the absent ones too, as domains holding 0 matching pods, so the skew's minimum was 0 and pods
that upstream places at once waited for such a node to join.

Three 4-core nodes a, b, c (each labelled with its hostname); web pods spread by hostname with
maxSkew 1, DoNotSchedule: p1 and p2 arrive at 0:00, p3 at 5:00 (the replay places all three).
"""

from __future__ import annotations

import json
from typing import Any

from replay_fixtures import N, P, build

from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy

SPREAD = json.dumps([{
    "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}])  # fmt: skip
WEB = json.dumps({"app": "web"})


def _replay(third: dict[str, float]) -> Any:
    nodes = [
        N(name, labels=json.dumps({"kubernetes.io/hostname": name}), **kw)  # type: ignore[arg-type]
        for name, kw in (("a", {}), ("b", {}), ("c", third))
    ]
    pods = [P("p1", "a", labels=WEB), P("p2", "b", labels=WEB),
            P("p3", "a", labels=WEB, start=5)]  # fmt: skip
    snap = build(nodes, pods, minutes=60)
    snap.pods["topology_spread"] = SPREAD
    snap.pods["owner_name"] = "web-5d9f"
    inp = prepare(snap)
    return inp, replay(inp, Strategy("kube-default", load_strategy("kube-default", None)), 0)


def test_a_node_not_joined_yet_is_no_domain() -> None:
    # c joins at 30:00: at 5:00 the domains are a (1) and b (1), so p3 fits on either (skew 1);
    # counted as a domain with 0 pods, c made both skews 2 and p3 waited until 30:00
    _, result = _replay({"first": 30})
    assert int(result.wait[2]) == 0  # p3 is the third pod of the data
    assert int(result.node[2]) in (0, 1)  # a or b, not c


def test_a_node_that_left_is_no_domain() -> None:
    # c leaves at 2:00: the web pod placed there is placed again at once on the node left
    # empty (tests/test_replay_node_leave.py), and at 5:00 a and b hold one each, so p3 is
    # placed at once; counted as an empty domain, c kept the moved pod waiting to the end
    _, result = _replay({"last": 2})
    assert not result.wait.any()


def test_a_present_node_still_counts() -> None:
    # c there all along: the three pods take one node each (a node with a web pod while
    # another holds none would be a skew of 2)
    _, result = _replay({})
    assert sorted(int(n) for n in result.node) == [0, 1, 2]
    assert not result.wait.any()

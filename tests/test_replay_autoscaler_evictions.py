"""A pod the replay's autoscaler evicts comes back at once (its controller's new pod) unless the
data ends it within its termination grace (30 s, capped by ``max-graceful-termination``): then
its replacement, if any, is a pod of the data — the data's own autoscaler evicted it at the
same instant, as in a cluster the generator autoscaled — or it would end about as soon as it
could be placed again. Placing it again as well doubled the data's replacement pods for the
grace period (docs/autoscaling.md, "Fidelity").

Nodes ``a`` and ``b`` (4000m); ``web`` (3000m) on b; ``dns`` (kube-system, 100m) on a, created
at minute 0: CA 1.36 drains a at 70:20 (``tests/test_replay_autoscaler_system_pods.py``).
"""

from __future__ import annotations

import dataclasses

import pytest
from replay_fixtures import GI, N, P, build
from test_replay_preemption import runs

from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy


@pytest.mark.parametrize(
    ("end", "again"),
    [
        (70.5, False),  # the data ends it at 70:30, within 30 s of the eviction
        (70 + 50 / 60, False),  # at 70:50, as its grace ends
        (71, True),  # at 71:00, 10 s after its grace: placed again on b
        (None, True),  # runs to the end of the data
    ],
)
def test_an_evicted_pod_comes_back_unless_the_data_ends_it_within_its_grace(
    end: float | None, again: bool
) -> None:
    pods = [P("web", "b", cpu=3000, memory=GI), P("dns", "a", cpu=100, memory=GI, end=end)]
    snap = build([N("a"), N("b")], pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"
    snap.pods.loc[snap.pods["uid"] == "dns", "namespace"] = "kube-system"
    settings = dataclasses.replace(parse_settings(None), groups={"pool": GroupBounds(min_size=0)})
    auto, groups = with_node_groups(prepare(snap), settings)
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    result = replay(auto, strategy, 0, autoscaler=(groups, settings))
    assert [(t, bool(e)) for t, _, e in result.autoscaler.removed] == [
        (prepare(snap).start + (70 * 60 + 20) * 10**9, True)
    ]
    got = runs(snap, result, "dns")
    assert got[0][:2] == ("a", 0) and got[0][2] == 70  # evicted at 70:20
    if again:
        assert [r[0] for r in got] == ["a", "b"] and got[1][1] == 70
    else:
        assert len(got) == 1

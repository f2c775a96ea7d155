"""The replay's retry screens with nominated pods' holds in play miss no moment a pod could be
placed: random small clusters whose data records preemptions (a victim ending, its preemptor
nominated to the node meanwhile: ``pods.nominated``) and pods of several priorities give the same
placements whether waiting pods are retried by the rules (``ScoreCache.may_fit`` with the holds
counted only for pods of lower or equal priority, never for their holder:
``queue_order.may_fit_beside``) or after every event (every waiting pod let back into the pass).

The profile keeps PrioritySort but not DefaultPreemption, so a retry that fails has no effect:
the two can differ only where a screen leaves out a pod that would have fitted, for instance by
counting a lower-priority hold against a higher-priority pod (tried: that mutant differs)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from replay_fixtures import T0, N, P, at, build
from test_replay_requeue_random import waits_and_differences

from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import END_PREEMPTED
from analyzer.replay.engine import Strategy
from analyzer.scheduling import load_strategy
from analyzer.scheduling.nominated_holds import Holds

PRIORITIES = (0, 50, 100, 200)


def scenario(seed: int) -> Snapshot:
    """3 nodes of 4 cores over an hour: 1–3 recorded preemptions (victim v on its node by a
    node selector, ending 30 s after the preemption; preemptor x created then, scheduled on that
    node when the victim is gone, nominated there meanwhile) and 15–30 other pods of random
    priority, size, start and end, a third of them never bound in the data."""
    rng = np.random.default_rng(seed)
    nodes = [N(f"n{i}", cpu=4000, labels=json.dumps({"side": f"n{i}"})) for i in range(3)]
    pods: list[P] = []
    priority: dict[str, int] = {}
    selector: dict[str, str] = {}
    created: dict[str, float] = {}
    nominated: dict[str, str] = {}
    for k in range(int(rng.integers(1, 4))):
        node, t = f"n{int(rng.integers(3))}", float(rng.integers(2, 40))
        cpu = int(rng.integers(2, 9)) * 250
        pods.append(P(f"v{k}", node, cpu=cpu, start=0, end=t + 0.5))
        selector[f"v{k}"] = node
        pods.append(P(f"x{k}", node, cpu=int(rng.integers(2, 9)) * 250, start=t + 0.5))
        priority[f"x{k}"] = int(rng.choice(PRIORITIES[1:]))
        created[f"x{k}"] = t
        begin = int(at(t).timestamp())
        nominated[f"x{k}"] = json.dumps([[node, begin, begin + 30]])
    for k in range(int(rng.integers(15, 31))):
        start = float(rng.integers(0, 50))
        end: float | None = start + float(rng.integers(2, 30)) if rng.random() < 0.7 else None
        bound = None if rng.random() < 0.35 else f"n{int(rng.integers(3))}"
        pods.append(P(f"p{k}", bound, cpu=int(rng.integers(2, 9)) * 250, start=start, end=end))
        priority[f"p{k}"] = int(rng.choice(PRIORITIES))
    snapshot = build(nodes, pods, minutes=60)
    frame = snapshot.pods
    uids = [str(u) for u in frame["uid"]]
    frame["priority"] = [priority.get(u, 0) for u in uids]
    frame["priority"] = frame["priority"].astype("Int64")
    frame["node_selector"] = [
        json.dumps({"side": selector[u]}) if u in selector else "{}" for u in uids
    ]
    frame["end_reason"] = [END_PREEMPTED if u in selector else "" for u in uids]
    frame["nominated"] = [nominated.get(u, "[]") for u in uids]
    frame["created"] = [
        at(created[u]) if u in created else c for u, c in zip(uids, frame["created"], strict=True)
    ]
    assert frame["created"].min() >= T0
    return snapshot


@pytest.mark.parametrize("name", ["kube-default", "most-allocated"])
def test_the_retry_screens_with_holds_miss_no_moment_a_pod_could_be_placed(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = load_strategy(name)
    chosen = Strategy(name, dataclasses.replace(profile, post_filters=[]))  # no preemption
    held = [0]
    hold = Holds.hold

    def counted(self: Holds, pod: int, node: int, until: int) -> None:
        held[0] += 1
        hold(self, pod, node, until)

    monkeypatch.setattr(Holds, "hold", counted)
    snapshots = (scenario(seed) for seed in range(80))
    waited, differing = waits_and_differences(snapshots, chosen, monkeypatch)
    # not vacuous: the data's nominations were held, and pods waited
    assert held[0] > 80 and waited > 200
    assert differing == 0

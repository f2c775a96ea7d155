"""A run at which every present node is skipped as recently unremovable runs no pass, so it keeps
no pass summary (``autoscale_scaledown.update_unneeded``).

Before 2026-12-01 it left the last pass's summary in place. A later run that nothing had changed
for then stood on that summary (``autoscale_settle``, ``autoscale_stands.stood``) and recorded
the last pass's reasons, e.g. ``{RecentlyUnremovable: 5, BlockedByPod: 1}``, where a run at that
time records ``{RecentlyUnremovable: 6}``. Only the reasons were wrong (the unremovable-reasons
table of the what-if page), not the removals. ``bench/ca_differential.py`` found it at seed 160
(8 nodes, two days, churn 4, threshold 0.9, unneeded time 1 m); that configuration is replayed
here, fast path against plain.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from test_autoscale_reuse import _same_decisions

from analyzer.replay import autoscale_loop, autoscale_scaledown
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

FLAGS = {"scale-down-unneeded-time": "1m", "scale-down-utilization-threshold": 0.9}


def _replays(monkeypatch: Any) -> tuple[Any, Any, list[bool]]:
    """The seed-160 configuration, fast and plain; and, for each fast run that skipped every
    node as recently unremovable, whether it left a summary."""
    cluster = generate(SyntheticSpec(seed=160, nodes=8, days=2.0, step=300, churn=4.0))
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    settings = dataclasses.replace(
        parse_settings(FLAGS), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    auto, groups = with_node_groups(prepare(cluster.snapshot), settings)
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    kept: list[bool] = []
    run = autoscale_scaledown.update_unneeded

    def update(ca: Any, now: int) -> None:
        reasons = len(ca.record.reasons)
        run(ca, now)
        recorded = ca.record.reasons[reasons:]
        present = int(ca.active.sum())
        if ca.reuse and recorded and recorded[-1][1] == {"RecentlyUnremovable": present}:
            kept.append(ca.sims.summary is not None)

    monkeypatch.setattr(autoscale_loop, "update_unneeded", update)
    fast = replay(auto, strategy, 160, autoscaler=(groups, settings))
    plain = replay(
        auto, strategy, 160, autoscaler=(groups, dataclasses.replace(settings, reuse=False))
    )
    return fast, plain, kept


def test_a_run_with_every_node_recently_unremovable_keeps_no_summary(monkeypatch: Any) -> None:
    # The fast path's reasons are the plain path's at every run (the old code recorded a stale
    # pass's reasons at one run of this configuration), and every run that skipped all present
    # nodes left no summary for a later run to stand on.
    fast, plain, kept = _replays(monkeypatch)
    assert fast.autoscaler.reasons == plain.autoscaler.reasons
    _same_decisions(fast, plain)
    assert kept, "no run skipped every node: the configuration no longer exercises the case"
    assert not any(kept)

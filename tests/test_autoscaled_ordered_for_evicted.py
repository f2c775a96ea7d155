"""The what-if rows' "nodes ordered for pods it had just evicted" (``whatif.autoscaled``): the
nodes of the scale-ups or launches ordered while a pod the autoscaler had evicted at most 10
minutes before still waited since that eviction. Its own drain left the pod no room its
simulation had counted on; repeated, it is the delete-and-relaunch loop Karpenter's users report
upstream (aws/karpenter-provider-aws#3921). The figure by its definition, on a hand-made record,
and the page's sentence against its table.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.input import NEVER
from analyzer.report.whatif_autoscaled import autoscaled_sentence, autoscaled_table
from analyzer.whatif.autoscaled import AutoscaledOutcome, PoolFigures, ordered_for_evicted

S = 1_000_000_000


def _waits(rows: list[tuple[int, int, int]]) -> dict[str, np.ndarray]:
    return {
        "pod": np.array([r[0] for r in rows], dtype=np.int64),
        "start": np.array([r[1] for r in rows], dtype=np.int64),
        "end": np.array([r[2] for r in rows], dtype=np.int64),
    }


def _record(scale_ups: list[tuple[int, int, int]]) -> AutoscalerRecord:
    record = AutoscalerRecord("karpenter", ["pool"], [0], 1)
    # pods 7 and 8 evicted at 100 s; pod 10 evicted at 100 s too, but the data ended it
    # within its termination grace, so it never waited
    record.evictions = [(100 * S, 7), (100 * S, 8), (100 * S, 10)]
    record.scale_ups = scale_ups
    return record


# pod 7 waits from its eviction until 400 s, pod 8 from its eviction to the end; pod 9 waits
# from its arrival (50 s) to 200 s: no eviction of it
WAITS = _waits([(7, 100 * S, 400 * S), (8, 100 * S, NEVER), (9, 50 * S, 200 * S)])


def test_a_scale_up_while_a_pod_it_evicted_waits_counts_its_nodes() -> None:
    # 130 s: pods 7 and 8 wait since their eviction 30 s before: the scale-up's 2 nodes count
    assert sum(ordered_for_evicted(_record([(130 * S, 0, 2)]), WAITS).values()) == 2
    # 100 s, the eviction's own instant (a run right after the drain): counts
    assert sum(ordered_for_evicted(_record([(100 * S, 0, 1)]), WAITS).values()) == 1
    # 500 s: pod 7 was placed at 400 s, pod 8 still waits since 400 s ago: counts
    assert sum(ordered_for_evicted(_record([(500 * S, 0, 1)]), WAITS).values()) == 1


def test_a_scale_up_for_other_pods_or_long_after_does_not_count() -> None:
    # 60 s: only pod 9 waits, which nobody evicted
    assert sum(ordered_for_evicted(_record([(60 * S, 0, 1)]), WAITS).values()) == 0
    # 701 s: pod 8 still waits, but its eviction was 601 s before (more than 10 minutes)
    assert sum(ordered_for_evicted(_record([(701 * S, 0, 1)]), WAITS).values()) == 0
    # 99 s: before any eviction
    assert sum(ordered_for_evicted(_record([(99 * S, 0, 3)]), WAITS).values()) == 0
    # no wait began at pod 10's eviction: it never counts
    only_ten = _waits([(10, 150 * S, 300 * S)])
    assert sum(ordered_for_evicted(_record([(200 * S, 0, 1)]), only_ten).values()) == 0


def test_every_scale_up_is_judged_on_its_own() -> None:
    ups = [(60 * S, 0, 1), (130 * S, 0, 2), (500 * S, 0, 1), (701 * S, 0, 1)]
    assert sum(ordered_for_evicted(_record(ups), WAITS).values()) == 3


def _outcome(ordered: int) -> AutoscaledOutcome:
    total = PoolFigures(
        node_hours=20.0, observed_node_hours=30.0, nodes_added=5, nodes_removed=7, pods_evicted=40,
        ordered_for_evicted=ordered,
    )  # fmt: skip
    series = pd.DataFrame(
        {"time": pd.to_datetime(["2026-11-01T00:00:00Z"]), "nodes": [4], "observed_nodes": [5]}
    )
    return AutoscaledOutcome(
        strategy="kube-default",
        autoscaler="karpenter",
        seed=0,
        total=total,
        pools={"pool": total},
        scale_ups=5,
        evicted_twice_within_hour=3,
        pending_pod_seconds_scale_up=0.0,
        pending_pods_at_end=0,
        reasons_node_hours={},
        series=series,
    )


def _page(ordered: int) -> tuple[int, str]:
    result = SimpleNamespace(autoscaled=[_outcome(ordered)], prices=None)
    table = autoscaled_table(result)  # type: ignore[arg-type]
    assert table is not None
    cell = int(table.frame.iloc[0]["ordered_for_evicted"])
    return cell, autoscaled_sentence(table, result)  # type: ignore[arg-type]


def test_the_sentence_says_what_the_table_shows() -> None:
    cell, sentence = _page(4)
    assert cell == 4
    assert "4 nodes were ordered for pods its own consolidation had evicted in the 10 minutes" in (
        sentence
    )
    assert "aws/karpenter-provider-aws#3921" in sentence
    cell, sentence = _page(1)
    assert cell == 1 and "1 node was ordered for pods" in sentence
    cell, sentence = _page(0)
    assert cell == 0 and "ordered for pods" not in sentence
    # under cluster-autoscaler the same figure, said of its scale-down
    outcome = _outcome(2)
    outcome.autoscaler = "cluster-autoscaler"
    result = SimpleNamespace(autoscaled=[outcome], prices=None)
    table = autoscaled_table(result)  # type: ignore[arg-type]
    assert table is not None
    sentence = autoscaled_sentence(table, result)  # type: ignore[arg-type]
    assert "2 nodes were ordered for pods its own scale-down had evicted" in sentence
    assert "a scale-down and scale-up loop" in sentence and "karpenter" not in sentence.lower()


def test_the_nodes_are_counted_in_the_pool_that_ordered_them() -> None:
    record = _record([(130 * S, 0, 2), (140 * S, 1, 1), (60 * S, 1, 1)])
    record.groups = ["a", "b"]
    assert ordered_for_evicted(record, WAITS) == {0: 2, 1: 1}


def _monthly(ordered: int) -> str:
    from analyzer.report.monthly_autoscaled import autoscaled_decision

    figures = {
        "autoscaler": "karpenter", "nodes_released": 3, "nodes_released_mean": 3.2,
        "peak_nodes": 9, "observed_peak_nodes": 12, "node_hours": 1000.0,
        "observed_node_hours": 1500.0, "nodes_added": 20, "nodes_removed": 23,
        "pods_evicted": 300, "min_size": None, "ordered_for_evicted": ordered,
    }  # fmt: skip
    sim = {"scenario": "today", "nodes": 2, "action": "release", "sentence": "2 left empty."}
    rows = [{"name": "today", "autoscaler": figures}]
    return str(autoscaled_decision(sim, rows, "karpenter")["sentence"])


def test_the_monthly_decision_says_when_nodes_were_ordered_for_evicted_pods() -> None:
    assert "17 nodes were ordered for pods its own consolidation had evicted" in _monthly(17)
    assert "ordered for pods" not in _monthly(0)

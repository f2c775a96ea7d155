"""Karpenter's consolidation state in the replay (``state/cluster.go`` ``ConsolidationState``,
``disruption/consolidation.go`` ``IsConsolidated`` / ``markConsolidated``).

A disruption method that found nothing, with no budget holding a candidate back, skips the
polls that follow until the cluster changes (a pod bound or deleted, a node joining, leaving or
marked for deletion) or its consolidation state resets, five minutes after the last change and
every five minutes after that. A node turning consolidatable by time alone (``consolidateAfter``
elapsed since its last pod event) changes nothing in that state: it is seen at the next change
or reset, not at once.

Two 4-core nodes, one step a minute over two hours, ``consolidateAfter: 2m``: a 3.5-core pod for
the whole window on one node (X) and a 1-core pod ending at 20:00 on the other (Y; the
scheduler spreads them). Neither pod fits beside the other's node's and there is one shape, so
nothing goes before 20:00. At 20:00 Y empties: a change; the pass at 20:10 finds Y within its
``consolidateAfter`` (until 22:00) and X's pod no room (Y is within its window), so nothing:
the methods mark the state consolidated.

- **quiet**: nothing changes after 20:00, so the state resets at 25:00; emptiness then takes Y,
  deleted after the 15 s validation at 25:15 (the replay before 2026-12-02 took it at 22:15);
- **a change**: X's pod ends at 23:00; the pass at 23:10 looks again and emptiness takes Y
  (consolidatable since 22:00), deleted at 23:25;
- **a pod starts waiting**: a 5-core pod created at 21:00 fits no node and no shape. A pod that
  waits is no change of the consolidation state (no binding; ``UpdatePod`` returns early for a
  pod without a node), so Y still goes at the 25:00 reset, at 25:15 — also where a
  PodDisruptionBudget selects it, which has the replay's pass read the budgets again
  (``reads_changed``) but changes no state either (were it a change at 21:00, the reset would
  come at 26:00).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from autoscaled_row import autoscaled_row
from replay_fixtures import N, P, build

CONFIG = "autoscaler:\n  karpenter:\n    disruption: {consolidateAfter: 2m}\n"


def _nodes_by_minute(
    tmp_path: Path, big_end: float | None, waiting: P | None = None, budget: bool = False
) -> list[int]:
    pods = [P("big", "x", cpu=3500, end=big_end), P("small", "y", cpu=1000, end=20)]
    if waiting is not None:
        pods.append(waiting)
    snap = build([N("x"), N("y")], pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: they may move
    if budget:  # a budget over the waiting pod only (it blocks no node's pods)
        pdb = {
            "namespace": "default",
            "name": "huge",
            "spec": {"selector": {"matchLabels": {"app": "huge"}}, "maxUnavailable": 1},
        }
        snap = dataclasses.replace(snap, objects={"PodDisruptionBudget": [pdb]})
    row = autoscaled_row(tmp_path, snap, "karpenter", CONFIG)
    counts: dict[str, Any] = row["node_count"]
    # the grid is the data's one-minute step from its start: index = minute
    return [int(n) for n in counts["nodes"]]


def test_a_node_consolidatable_by_time_alone_waits_for_the_state_to_reset(
    tmp_path: Path,
) -> None:
    nodes = _nodes_by_minute(tmp_path, None)
    assert nodes[:26] == [2] * 26  # through 25:00 (the pass at 25:00 only makes the command)
    assert nodes[26] == 1  # deleted at 25:15
    assert nodes[-1] == 1  # X stays: its pod runs to the end


def test_a_change_has_the_methods_look_again_at_once(tmp_path: Path) -> None:
    nodes = _nodes_by_minute(tmp_path, 23)
    assert nodes[:24] == [2] * 24  # through 23:00
    assert nodes[24] == 1  # Y deleted at 23:25, after the pass at 23:10 and its validation


@pytest.mark.parametrize("budget", [False, True])
def test_a_pod_that_starts_waiting_is_no_change_of_the_state(tmp_path: Path, budget: bool) -> None:
    huge = P("huge", None, cpu=5000, start=21, labels='{"app": "huge"}')
    nodes = _nodes_by_minute(tmp_path, None, huge, budget)
    assert nodes[:26] == [2] * 26
    assert nodes[26] == 1  # at the reset, as on the quiet cluster

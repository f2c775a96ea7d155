"""The pods a cluster-autoscaler run helps are the waiting pods that fit neither an existing node
nor a node already being provisioned (upstream's ``unschedulablePodsToHelp``), and the young-pod
test reads that list.

``RunOnce`` (cluster-autoscaler core/static_autoscaler.go) adds the upcoming nodes to its snapshot
(``addUpcomingNodesToClusterSnapshot``) before ``PodListProcessor.Process`` filters out the pods
that fit somewhere, then asks ``allPodsAreNew`` of what is left: a pod waiting for a node already
ordered does not make a run's pods "old". Until 2026-12-02 the replay asked the test of the pods
that fit no existing node, upcoming nodes left in, so such a pod let a young one's node be ordered
a loop early.

Two 4-core / 16 GiB nodes, each full enough with a 3-core pod; kube-default; frequent loops on
(CA 1.36's default): a run starts at once when a pod becomes unschedulable. Worked by hand:

- ``first`` (3 cores) arrives at 30:00 and fits nowhere: the run it starts at 30:00 finds it
  younger than 2 s and waits one loop; the timer's run at 30:10 orders one node, Ready at 32:10
  (120 s provisioning), and ``first`` waits 130 s;
- ``second`` (3 cores) arrives at 31:00 and fits nowhere (the new node is not Ready): the run it
  starts at 31:00 sees ``first`` fit the upcoming node, which then has 1 core left, so the pods to
  help are ``second`` alone, younger than 2 s: nothing ordered. The timer's next run, 31:10, orders
  its node, Ready at 33:10: ``second`` waits 130 s. (Reading ``first`` as a pod to help, the run at
  31:00 ordered the node: Ready at 33:00, a 120 s wait, 250 pod-seconds in all.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_fixtures import GI, N, P, build
from test_replay_autoscaler import _ca_row


def test_a_pod_waiting_for_an_upcoming_node_is_no_pod_to_help(tmp_path: Path) -> None:
    pods = [P("p0", "a", cpu=3000, memory=GI), P("p1", "b", cpu=3000, memory=GI),
            P("first", "a", cpu=3000, memory=GI, start=30, end=90),
            P("second", "a", cpu=3000, memory=GI, start=31, end=90)]  # fmt: skip
    snap = build([N("a"), N("b")], pods, minutes=120)
    row = _ca_row(tmp_path, snap, "autoscaler:\n  node-groups: {pool: {maxSize: 6}}\n")
    assert row["scale_ups"] == 2 and row["nodes_added"] == 2
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(130.0 + 130.0)

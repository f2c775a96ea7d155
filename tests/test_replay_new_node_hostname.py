"""A node the autoscaler adds in the replay has its own ``kubernetes.io/hostname``.

The replay's spare nodes are copies of a pool's template node. They used to copy its hostname
label too, so every new node sat in the template node's hostname domain: a pod whose required
anti-affinity (or hostname spreading) kept it off the template node was kept off every new node,
and cluster-autoscaler's template refused it, so nothing was added for it. Upstream's template
node gets the new node's name as its hostname (cluster-autoscaler
``simulator/node_info_utils.go`` ``createSanitizedNode``), as a launched node has.

One 4-core node a (hostname a) with a web pod; a second web replica, whose required
anti-affinity on the hostname keeps it off a, arrives at 5:00.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replay_fixtures import N, P, build
from test_replay_autoscaler_daemonsets import _autoscaled_row

ANTI = json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
]}})  # fmt: skip
WEB = json.dumps({"app": "web"})


def _row(tmp_path: Path, autoscaler: str, config: str) -> dict[str, Any]:
    nodes = [N("a", labels=json.dumps({"kubernetes.io/hostname": "a"}))]
    snap = build(nodes, [P("p1", "a", labels=WEB), P("p2", "a", labels=WEB, start=5)], minutes=60)
    snap.pods["affinity"] = ANTI
    return _autoscaled_row(tmp_path, snap, autoscaler, config)


@pytest.mark.parametrize(
    ("autoscaler", "config", "waited"),
    [
        # frequent loops (CA 1.35+): the run at once when the pod became unschedulable, 5:00,
        # waits one loop for more pods (it is younger than 2 s: ``allPodsAreNew``); ordered at
        # the timer's next run, 5:10, Ready 2 min later: 130 s
        ("cluster-autoscaler", "autoscaler:\n  node-groups: {pool: {minSize: 0, maxSize: 3}}\n",
         130.0),
        # the batch closes 1 s after the pod went pending, Ready 2 min later: 121 s
        ("karpenter", "autoscaler:\n  karpenter: {disruption: {consolidateAfter: Never}}\n",
         121.0),
    ],
)  # fmt: skip
def test_a_new_node_is_a_hostname_domain_of_its_own(
    tmp_path: Path, autoscaler: str, config: str, waited: float
) -> None:
    row = _row(tmp_path, autoscaler, config)
    assert row["nodes_added"] == 1 and row["pending_pods_at_end"] == 0
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(waited)

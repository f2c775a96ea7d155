"""A kube-system pod in the replay under cluster-autoscaler (CA 1.33+, upstream commit
696af986ed; simulator/drainability/rules/system/rule.go): with no PodDisruptionBudget covering
it, it blocks its node's drain (``UnmovableKubeSystemPod``) until it was created longer ago than
``blocking-system-pod-distruption-timeout`` (default 1h), and then is moved like any replicated
pod. Before 1.33 it always blocks.

Nodes ``a`` and ``b`` (4000m); ``web`` (3000m) on b; ``dns`` (kube-system, a ReplicaSet's,
100m) on a, created at minute 0. Node a is under the threshold from the first run; its drain
is blocked, and CA looks at it again every ``unremovable-node-recheck-timeout`` (5 min) from the
first run at 0:10: at 60:10 the pod is older than the hour, the node is unneeded from then and
deleted at the first run more than 10 minutes later (70:20); its pod goes to b.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_fixtures import GI, N, P, build
from test_replay_autoscaler import _row, _whatif

from analyzer.core.snapshot import write_snapshot


def _row_at(tmp_path: Path, version: str, config: str = "") -> dict[str, Any]:
    pods = [P("web", "b", cpu=3000, memory=GI), P("dns", "a", cpu=100, memory=GI)]
    snap = build([N("a"), N("b")], pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"
    snap.pods.loc[snap.pods["uid"] == "dns", "namespace"] = "kube-system"
    write_snapshot(snap, tmp_path / "snap")
    text = f"autoscaler:\n{config}  node-groups: {{pool: {{minSize: 0}}}}\n"
    run = _whatif(tmp_path, tmp_path / "snap", text, "--autoscaler", "cluster-autoscaler",
                  "--kubernetes-version", version)  # fmt: skip
    return _row(run)


@pytest.mark.parametrize("version", ["1.33", "1.36"])
def test_a_kube_system_pod_blocks_for_an_hour(tmp_path: Path, version: str) -> None:
    row = _row_at(tmp_path, version)
    nodes = row["node_count"]["nodes"]
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1
    assert all(n == 2 for n in nodes[:70]), nodes  # blocked until 60:10, then 10 min unneeded
    assert all(n == 1 for n in nodes[72:]), nodes


def test_before_133_it_always_blocks(tmp_path: Path) -> None:
    row = _row_at(tmp_path, "1.32")
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    assert set(row["node_count"]["nodes"]) == {2}


def test_a_longer_timeout_is_read(tmp_path: Path) -> None:
    """At a 90-minute timeout the pod is old enough at 90:10: deleted at 100:20."""
    row = _row_at(tmp_path, "1.36", "  blocking-system-pod-distruption-timeout: 90m\n")
    nodes = row["node_count"]["nodes"]
    assert row["nodes_removed"] == 1
    assert all(n == 2 for n in nodes[:100]) and all(n == 1 for n in nodes[102:]), nodes

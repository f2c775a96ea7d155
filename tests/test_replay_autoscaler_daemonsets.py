"""A new node's DaemonSet pods in the replay under cluster-autoscaler.

A node CA adds is a node of its group: the DaemonSet controller puts the group's DaemonSet pods
on it as it registers, and CA plans the scale-up on a template node that already holds them
(``simulator/node_info_utils.go`` ``SanitizedTemplateNodeInfoFromNodeInfo``: an existing node
of the group with its DaemonSet and mirror pods; the binpacking estimator packs the pending pods
onto copies of it). So a new node takes only what its allocatable less its DaemonSet pods holds,
a pod that fits an empty node but not beside those pods asks for no node, and CA's utilisation
of the new node counts them (``utilization.Calculate``: every pod's requests, DaemonSet pods
left out only with ``ignore-daemonsets-utilization``, which takes them off both sides).

Every node is 4000m (or 8000m) of cpu with one DaemonSet pod; the other pods are ReplicaSet
pods. Each case's expected count follows from that arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build
from test_replay_autoscaler import _ca_row

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

WHEN_EMPTY = "autoscaler:\n  karpenter:\n    disruption: {consolidationPolicy: WhenEmpty}\n"


def _ds(node: str, cpu: int) -> P:
    return P(f"ds-{node}", node, cpu=cpu, memory=GI // 4, owner="DaemonSet")


def _autoscaled_row(
    tmp_path: Path, snap: Any, autoscaler: str, config: str, strategy: str = "kube-default"
) -> dict[str, Any]:
    """``snap`` (ReplicaSet pods but the DaemonSet ones) replayed under ``autoscaler`` with
    the ``config`` file's text: the what-if's autoscaled row."""
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp_path / "snap")
    (tmp_path / "config.yaml").write_text(config)
    run = CliRunner().invoke(
        main,
        ["--config", str(tmp_path / "config.yaml"), "whatif", str(tmp_path / "snap"),
         "--strategy", strategy, "--workers", "1", "--format", "json",
         "--autoscaler", autoscaler],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.output)["autoscaled"]
    return dict(row)


def test_a_new_node_holds_what_is_left_beside_its_daemonset_pods(tmp_path: Path) -> None:
    """Seven 1000m pods wait; a new node is 4000m with a 1000m DaemonSet pod: 3 pods per new
    node, so 3 nodes (2 if the new nodes held no DaemonSet pod)."""
    pods = [_ds("a", 1000), P("p0", "a", cpu=3000, memory=GI)]
    pods += [P(f"w{i}", "a", cpu=1000, memory=GI, start=30, end=90) for i in range(7)]
    snap = build([N("a")], pods, minutes=120)
    config = "autoscaler:\n  node-groups: {pool: {minSize: 1, maxSize: 5}}\n"
    row = _ca_row(tmp_path, snap, config)
    assert row["nodes_added"] == 3, row
    assert row["pending_pod_seconds_scale_up"] > 0


def test_a_pod_too_big_beside_the_daemonset_pods_asks_for_no_node(tmp_path: Path) -> None:
    """A 3500m pod fits an empty 4000m node but not one holding its 1000m DaemonSet pod: the
    template node refuses it, so no scale-up (one if new nodes held no DaemonSet pod)."""
    pods = [_ds("a", 1000), P("p0", "a", cpu=3000, memory=GI)]
    pods.append(P("big", "a", cpu=3500, memory=GI, start=30, end=90))
    snap = build([N("a")], pods, minutes=120)
    config = "autoscaler:\n  node-groups: {pool: {minSize: 1, maxSize: 5}}\n"
    row = _ca_row(tmp_path, snap, config)
    assert row["nodes_added"] == 0, row
    assert row["scale_ups"] == 0


def _kept_row(tmp_path: Path, ignore: bool) -> dict[str, object]:
    """8000m nodes with a 3000m DaemonSet pod. Node ``a`` is full (p0 2000m for the whole
    window, p1 3000m until minute 30) when ``x`` (1500m) arrives at minute 5: CA adds a node
    for it, which holds its DaemonSet pod and ``x``: (3000 + 1500) / 8000 = 0.5625, over the
    0.5 threshold, so not a candidate, though ``x`` fits on ``a`` once p1 has ended (a at
    5000 / 8000 = 0.625, no candidate either). With ``ignore-daemonsets-utilization`` it is
    1500 / (8000 - 3000) = 0.3: a candidate, ``x`` moves to ``a`` and the node goes."""
    pods = [_ds("a", 3000), P("p0", "a", cpu=2000, memory=GI)]
    pods += [P("p1", "a", cpu=3000, memory=GI, end=30), P("x", "a", cpu=1500, start=5)]
    snap = build([N("a", cpu=8000, memory=32 * GI)], pods, minutes=120)
    flag = "  ignore-daemonsets-utilization: true\n" if ignore else ""
    config = f"autoscaler:\n{flag}  node-groups: {{pool: {{minSize: 1, maxSize: 3}}}}\n"
    return _ca_row(tmp_path, snap, config)


def test_a_new_nodes_daemonset_pods_count_in_its_utilisation(tmp_path: Path) -> None:
    row = _kept_row(tmp_path, ignore=False)
    assert (row["nodes_added"], row["nodes_removed"]) == (1, 0), row


def test_ignore_daemonsets_utilization_takes_them_off_a_new_node(tmp_path: Path) -> None:
    row = _kept_row(tmp_path, ignore=True)
    assert (row["nodes_added"], row["nodes_removed"]) == (1, 1), row
    assert row["pods_evicted"] == 1


def test_karpenter_launches_a_shape_that_holds_the_pod_beside_its_daemonset_pods(
    tmp_path: Path,
) -> None:
    """Karpenter: an 8-core and a 4-core node, each full with its 1000m DaemonSet pod (the
    pool's two shapes); a 3500m pod from 30:00 to 90:00. Upstream adds the pool's daemon
    overhead to every NodeClaim (``scheduling/scheduler.go`` ``buildDaemonOverheadGroups``):
    the 4-core shape has 3000m left beside it, too little, so the 8-core shape launches
    (without the overhead the cheaper 4-core one would). Ready at 32:01 (batch closed 1 s after
    the pod went pending, 2 m to launch), emptied at 90:00 (its DaemonSet pod left, which
    makes no node non-empty), deleted after the 15 s validation. ``WhenEmpty``: no other
    consolidation (under ``WhenEmptyOrUnderutilized`` the 4-core node's pod would move onto
    the new node's room, a story of its own)."""
    pods = [_ds("big", 1000), _ds("small", 1000), P("p0", "big", cpu=7000)]
    pods += [P("p1", "small", cpu=3000), P("burst", "small", cpu=3500, start=30, end=90)]
    snap = build([N("big", cpu=8000, memory=32 * GI), N("small")], pods, minutes=120)
    row = _autoscaled_row(tmp_path, snap, "karpenter", WHEN_EMPTY)
    assert row["nodes_added"] == 1 and row["scale_ups"] == 1, row
    added = (90 * 60 + 15 - (32 * 60 + 1)) / 3600
    assert row["core_hours"] == pytest.approx(8 * 2 + 4 * 2 + 8 * added, abs=1e-5)


@pytest.mark.parametrize("autoscaler", ["cluster-autoscaler", "karpenter"])
def test_a_gpu_device_strategy_replays_with_the_copies(tmp_path: Path, autoscaler: str) -> None:
    """A GPU-device strategy (fgd) attaches its device state to an empty state: the copies are
    held after it (``ReplayInput.hold_baseline``), as a pinned pod is bound. The scenario of
    the first test: 3 new nodes whatever the scoring (3 pods fit beside the DaemonSet pod)."""
    pods = [_ds("a", 1000), P("p0", "a", cpu=3000, memory=GI)]
    pods += [P(f"w{i}", "a", cpu=1000, memory=GI, start=30, end=90) for i in range(7)]
    snap = build([N("a")], pods, minutes=120)
    config = (
        "autoscaler:\n  node-groups: {pool: {minSize: 1, maxSize: 5}}\n"
        if autoscaler != "karpenter"
        else "autoscaler: {}\n"
    )
    row = _autoscaled_row(tmp_path, snap, autoscaler, config, "fgd")
    assert row["pending_pods_at_end"] == 0
    if autoscaler == "cluster-autoscaler":
        assert row["nodes_added"] == 3, row


def test_karpenter_asks_again_for_a_shape_it_had_no_free_slot_of(tmp_path: Path) -> None:
    """Karpenter: whether a new node of a pool could take a pod is kept per pod shape only when
    a free slot of every shape of the pool was asked. 8-core and 4-core nodes, each full with
    its 1000m DaemonSet pod (two slots per shape: the pool's peak); b1 and b2 (7 cores, 10:00 to
    40:00) take both 8-core slots; x (3.5 cores, 11:00) then finds only 4-core slots free,
    3000m beside the DaemonSet pod: no node. Once the 8-core nodes have gone, y (3.5 cores,
    50:00) gets an 8-core node: upstream recomputes the instance types at every Solve
    (``scheduling/scheduler.go``). Kept from x's ask, the answer would leave y waiting."""
    pods = [
        _ds("big", 1000),
        _ds("small", 1000),
        P("p0", "big", cpu=7000),
        P("p1", "small", cpu=3000),
    ]
    pods += [P("b1", "big", cpu=7000, start=10, end=40), P("b2", "big", cpu=7000, start=10, end=40)]
    pods += [P("x", "big", cpu=3500, start=11, end=13), P("y", "big", cpu=3500, start=50, end=150)]
    snap = build([N("big", cpu=8000, memory=32 * GI), N("small")], pods, minutes=180)
    row = _autoscaled_row(tmp_path, snap, "karpenter", WHEN_EMPTY)
    # an 8-core node each for b1 and b2 (10:00, Ready 12:01) and for y (50:00, Ready 52:01):
    # 121 s of waiting each; x gets none (it ends at 13:00, before an 8-core slot is free)
    assert (row["nodes_added"], row["scale_ups"], row["pending_pods_at_end"]) == (3, 3, 0), row
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(3 * 121.0)


@pytest.mark.parametrize("strategy", ["kube-default", "fgd"])
def test_a_gpu_pods_node_stays_under_a_gpu_sharing_strategy(tmp_path: Path, strategy: str) -> None:
    """A 4-GPU node holding a pod that asks for one GPU, beside a CPU node. CA's simulation
    checks GPUs as an extended resource (its NodeResourcesFit: ``simulator/cluster.go``
    ``findPlaceFor``): the pod has nowhere to go, so its node stays, under any strategy. The
    GPU-sharing presets leave GPUs to their device filter (``ignoredResources``); the
    autoscaler's profile, without that filter, counts them again (``Profile.without_devices``)."""
    nodes = [
        N("g", cpu=4000, memory=16 * GI, pool="gpu"),
        N("c", cpu=8000, memory=32 * GI, pool="cpu"),
    ]
    pods = [P("gp", "g", cpu=500, memory=GI), P("cp", "c", cpu=1000, memory=GI)]
    snap = build(nodes, pods, minutes=60)
    snap.nodes["allocatable:nvidia.com/gpu"] = [4, 0]
    snap.pods["requests:nvidia.com/gpu"] = [1, 0]
    groups = "{gpu: {minSize: 0, maxSize: 2}, cpu: {minSize: 1, maxSize: 2}}"
    config = f"autoscaler:\n  node-groups: {groups}\n"
    row = _autoscaled_row(tmp_path, snap, "cluster-autoscaler", config, strategy)
    assert row["nodes_removed"] == 0 and row["pending_pods_at_end"] == 0, row

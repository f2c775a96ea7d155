"""The replay under cluster-autoscaler with ``ignore-daemonsets-utilization``: CA's utilisation of
a node then takes its DaemonSet pods' requests off both sides,
``(requested - ds) / (allocatable - ds)`` (``CalculateUtilizationOfResource``,
simulator/utilization/info.go), which is below the plain ratio ``requested / allocatable``. A node
whose plain ratio is at or over the threshold may be under it that way: the replay must judge it
(its screen of the nodes near the threshold must not leave it out)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build

from analyzer.autoscaler.cluster import CANode
from analyzer.autoscaler.eligibility import check
from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.replay import autoscale_scaledown
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

MI = 2**20


def _two_nodes(tmp_path: Path) -> Path:
    """Two 4-core nodes, each with a 1.2-core DaemonSet pod and a 1-core ReplicaSet pod: each
    node's plain cpu ratio is 2.2 / 4 = 0.55, over the default threshold 0.5; with the
    DaemonSet pods taken off it is 1.0 / 2.8 = 0.357, under it. Either node's app pod fits on
    the other (3.2 of 4 cores)."""
    pods = []
    for n in "ab":
        pods.append(P(f"ds-{n}", n, cpu=1200, memory=100 * MI, owner="DaemonSet"))
        pods.append(P(f"web-{n}", n, cpu=1000, memory=GI))
    snap = build([N("a"), N("b")], pods, minutes=120)
    snap.pods["owner_name"] = ["node-agent" if n.startswith("ds-") else "web-5d9f"
                               for n in snap.pods["uid"]]  # fmt: skip
    out = tmp_path / "snap"
    write_snapshot(snap, out)
    return out


def _removed(tmp_path: Path, snap: Path, ignore: bool) -> dict[str, Any]:
    config = tmp_path / f"config-{ignore}.yaml"
    config.write_text(
        "autoscaler:\n"
        f"  ignore-daemonsets-utilization: {str(ignore).lower()}\n"
        "  node-groups: {pool: {minSize: 0}}\n"
    )
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "whatif", str(snap), "--strategy", "kube-default",
         "--workers", "1", "--format", "json", "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.output)["autoscaled"]
    return dict(row)


def test_a_node_under_the_threshold_only_without_its_daemonsets_is_removed(
    tmp_path: Path,
) -> None:
    snap = _two_nodes(tmp_path)
    # plain ratios 0.55: no node is a candidate, none goes; both count NotUnderutilized from
    # the first pass (at the first scan, 10 s in) to the end of the 2 hours
    kept = _removed(tmp_path, snap, ignore=False)
    assert kept["nodes_removed"] == 0
    assert kept["unremovable_reasons_node_hours"] == {
        "NotUnderutilized": pytest.approx(2 * (2 - 10 / 3600), abs=1e-5)
    }
    # DaemonSet pods taken off: both 0.357, both candidates; the first simulated is removable
    # (its app pod fits on the other), the second then has nowhere to go (the first is no
    # destination once removable): one node goes, after scale-down-unneeded-time
    gone = _removed(tmp_path, snap, ignore=True)
    assert gone["nodes_removed"] == 1 and gone["pods_evicted"] == 1
    assert gone["node_count"]["nodes"][-1] == 1
    # the drain rules the data cannot feed are named (no volumes nor annotations in a snapshot)
    (note,) = [n for n in gone["notes"] if "volumes and annotations" in n]
    assert "skip-nodes-with-local-storage" in note and "safe-to-evict" in note


@pytest.mark.parametrize("reuse", [True, False])
def test_every_node_under_the_threshold_is_judged(reuse: bool) -> None:
    """On a generated cluster whose DaemonSet pods request 1.5 cores, every pass judges each
    present node that CA's own check (``eligibility.check``, the DaemonSet pods taken off)
    would not call ``NotUnderutilized``: none is left out as over the threshold; and each node
    it judges gets that check's verdict (its kept verdict, judged again where its pods
    changed)."""
    cluster = generate(SyntheticSpec(seed=2015, nodes=24, days=0.1, step=300))
    pods = cluster.snapshot.pods
    daemons = pods["owner_kind"] == "DaemonSet"
    pods.loc[daemons, "requests:cpu"] = 1500.0
    pods.loc[daemons, "nonzero_requests:cpu"] = 1500.0
    inp = prepare(cluster.snapshot)
    settings = parse_settings({"ignore-daemonsets-utilization": True})
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    settings = dataclasses.replace(
        settings, groups={p: GroupBounds(min_size=0) for p in pools}, reuse=reuse
    )
    auto, groups = with_node_groups(inp, settings)
    missed: list[tuple[int, int]] = []
    misjudged: list[tuple[int, int, str, str]] = []
    passes = [0]
    judge = autoscale_scaledown._judge

    def verdict(ca: Any, slot: int, now: int) -> str:
        node = ca.nodes[slot]
        alloc = autoscale_scaledown._allocatable(ca, slot)
        group = ca.member_groups()[0].get(node.name)
        return check(CANode(node.name, alloc, node.labels, node.annotations),
                     ca.pods_of(slot), group, ca.options, now / 1e9).reason  # fmt: skip

    def checked(ca: Any, look: list[int], reasons: Any, now: int, looked: Any = None) -> Any:
        if looked is not None or len(look) > 3:  # a whole pass (not a recheck of a few nodes)
            passes[0] += 1
            seen = set(look) | set(ca.recheck.deadlines)
            for slot in np.flatnonzero(ca.active).tolist():
                if slot not in seen and verdict(ca, slot, now) != "NotUnderutilized":
                    missed.append((now, slot))
        candidates = judge(ca, look, reasons, now, looked)
        for slot in look:
            got = "" if slot in candidates else ca.unfit_reason[slot]
            if got != (want := verdict(ca, slot, now)):
                misjudged.append((now, slot, want, got))
        return candidates

    mp = pytest.MonkeyPatch()
    mp.setattr(autoscale_scaledown, "_judge", checked)
    try:
        replay(auto, Strategy("kube-default", load_strategy("kube-default")), 0,
               autoscaler=(groups, settings))  # fmt: skip
    finally:
        mp.undo()
    assert passes[0] > 0
    assert missed == [] and misjudged == []


@pytest.mark.parametrize(
    ("seed", "nodes", "hours", "churn", "raw", "below"),
    [
        (2015, 120, 3, 4.0, {"max-scale-down-parallelism": 5}, None),
        (2040, 40, 48, 0.5, {"max-empty-bulk-delete": 1}, 2),
    ],
)
def test_the_fast_path_decides_as_the_plain_path_with_daemonsets_left_out(
    seed: int, nodes: int, hours: int, churn: float, raw: dict[str, Any], below: int | None
) -> None:
    """The replay's reuse of answers and passes (``AutoscalerSettings.reuse``) against every
    candidate simulated at every pass, with ``ignore-daemonsets-utilization``: the same
    decisions and the same reasons at every pass. Two of the configurations where a random
    sweep of 1,500 found the reasons apart before the screen took the DaemonSet pods off
    (``None``: the default bounds, each pool at its observed minimum)."""
    spec = SyntheticSpec(seed=seed, nodes=nodes, days=hours / 24, step=300, churn=churn)
    cluster = generate(spec)
    inp = prepare(cluster.snapshot)
    settings = parse_settings({"ignore-daemonsets-utilization": True, **raw})
    if below is not None:
        sizes = cluster.snapshot.nodes["pool"].fillna("default").astype(str).value_counts()
        settings = dataclasses.replace(
            settings,
            groups={p: GroupBounds(min_size=max(0, int(n) - below)) for p, n in sizes.items()},
        )
    auto, groups = with_node_groups(inp, settings)
    chosen = Strategy("kube-default", load_strategy("kube-default"))
    fast = replay(auto, chosen, seed, autoscaler=(groups, settings))
    plain = replay(auto, chosen, seed,
                   autoscaler=(groups, dataclasses.replace(settings, reuse=False)))  # fmt: skip
    a, b = fast.autoscaler, plain.autoscaler
    assert a is not None and b is not None
    assert a.reused + a.skipped > 0, "nothing was reused: the comparison would prove nothing"
    assert a.reasons == b.reasons
    assert (a.presence, a.removed, a.added, a.evictions) == (
        b.presence,
        b.removed,
        b.added,
        b.evictions,
    )
    assert np.array_equal(fast.node, plain.node) and np.array_equal(fast.wait, plain.wait)


def test_a_daemonset_pod_that_takes_all_memory_has_the_node_judged_again() -> None:
    """Two 4-core, 16 GiB nodes. ``batch`` (2 cores, ends at minute 20) lands first, on one node
    (call it b); ``web-a`` (2.5 cores, no memory) then takes the emptier one, a; ``web-b`` (1
    core, 10 GiB) takes b (the less allocated). Until minute 30 neither is under the threshold
    (a's cpu 0.625: over it, so a bind on a need not be verified, as a bind only raises a
    ratio; b's memory 0.625 after batch ends). At minute 30 a DaemonSet pod requesting all of
    a's memory lands on a: with DaemonSet pods taken off, CA's memory utilisation of a is 0 / 0
    (NaN) and, the cpu ratio not being above NaN in Go's comparison, the node's utilisation:
    under any threshold, a candidate whose pod fits on b (3.5 cores, 10 GiB). The fast path
    must judge a again (its screen reads -inf) as the plain path does: a goes after the
    unneeded time."""
    nodes = [N("a", cpu=4000, memory=16 * GI), N("b", cpu=4000, memory=16 * GI)]
    pods = [
        P("batch", "b", cpu=2000, memory=0, end=20),
        P("web-a", "a", cpu=2500, memory=0, start=0.5),
        P("web-b", "b", cpu=1000, memory=10 * GI, start=1),
        P("ds-a", "a", cpu=100, memory=16 * GI, start=30, owner="DaemonSet"),
    ]
    snap = build(nodes, pods, minutes=90)
    snap.pods["owner_name"] = [
        "node-agent" if n == "ds-a" else f"{n}-5d9f" for n in snap.pods["uid"]
    ]
    inp = prepare(snap)
    settings = parse_settings({"ignore-daemonsets-utilization": True})
    settings = dataclasses.replace(settings, groups={"pool": GroupBounds(min_size=0)})
    auto, groups = with_node_groups(inp, settings)
    chosen = Strategy("kube-default", load_strategy("kube-default"))
    fast = replay(auto, chosen, 0, autoscaler=(groups, settings))
    plain = replay(auto, chosen, 0, autoscaler=(groups, dataclasses.replace(settings, reuse=False)))
    a, b = fast.autoscaler, plain.autoscaler
    assert a is not None and b is not None
    where = {inp.demands[p].name: auto.node_names[n] for p, n in enumerate(plain.node.tolist())}
    assert where["web-a"] == where["ds-a"] != where["web-b"] == where["batch"]
    ((when, slot, drained),) = b.removed
    assert auto.node_names[slot] == where["ds-a"] and drained
    assert when >= inp.start + 40 * 60 * 10**9  # judged from minute 30, unneeded for 10 minutes
    assert (a.removed, a.reasons) == (b.removed, b.reasons)

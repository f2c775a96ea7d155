"""``analyzer whatif --autoscaler cluster-autoscaler``: the replay with CA driving the nodes.

Small clusters of 4-core / 16 GiB nodes over two hours at a 60 s step, where what CA does can be
worked out by hand with its defaults (scan every 10 s from the start, scale-down-unneeded-time
10 m, scale-down-delay-after-add 10 m, a new node Ready 2 m after the scale-up, threshold 0.5):

- **scale-down**: three 1.5-core pods spread by kube-default one per node (0.375 < 0.5 each).
  Two fit on one node (3 cores), three do not (4.5): at the first run (0:10) CA finds the first
  node's pod a place and marks it unneeded; the two others then have none (NoPlaceToMovePods:
  the simulation keeps the first move). 10 m later (10:10) the node is drained: one pod evicted
  and placed again by kube-default (pending from the eviction), two nodes left; the drained node
  runs on until its evicted pod is gone: kube's default grace period of 30 s (under CA's
  max-graceful-termination, 600 s), so node-hours 2 × 2 h + 10 m 40 s; with
  max-graceful-termination 10 s the pod gets 10 s and the node 10 m 20 s.
- **scale-up**: two nodes each holding a 3-core pod; a third 3-core pod from 30:00 to 90:00 fits
  nowhere. CA's run at 30:10 adds one node of the group (one pod, one node, though maxSize 5
  would allow three more), Ready at 32:10, where the pod waits until then (130 pending
  pod-seconds); CA's run at 32:10 sees the pod fit the new node and orders none. It ends at 90:00; CA's run at
  90:00 comes after that departure (at one instant the data's events come first), so the node is
  unneeded from 90:00 and deleted at 100:00: node-hours 2 × 2 h + 67 m 50 s.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from autoscaler_page import AUTOSCALED_PARTS, reasons_and_explanation
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, at, build
from test_replay_preemption import with_priorities

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.sources import SyntheticSpec, generate, write_openmetrics


def _snapshot(tmp_path: Path, nodes: list[N], pods: list[P]) -> Path:
    snap = build(nodes, pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: CA may move them
    out = tmp_path / "snap"
    write_snapshot(snap, out)
    return out


def _whatif(tmp_path: Path, snap: Path, config: str | None, *extra: str) -> Any:
    args = []
    if config is not None:
        path = tmp_path / "config.yaml"
        path.write_text(config)
        args = ["--config", str(path)]
    run = CliRunner().invoke(
        main,
        [*args, "whatif", str(snap), "--strategy", "kube-default", "--workers", "1",
         "--format", "json", *extra],
    )  # fmt: skip
    return run


def _row(run: Any) -> dict[str, Any]:
    assert run.exit_code == 0, run.output
    page = json.loads(run.output)
    assert page["autoscaler"] == "cluster-autoscaler"
    (row,) = page["autoscaled"]
    return dict(row)


def _ca_row(tmp_path: Path, snap: Any, config: str) -> dict[str, Any]:
    """The CA row of ``snap`` (ReplicaSet pods) replayed under ``config``'s autoscaler section."""
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp_path / "snap")
    return _row(_whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler"))


@pytest.fixture(scope="module")
def spread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three nodes, three 1.5-core pods for the whole window."""
    tmp = tmp_path_factory.mktemp("spread")
    pods = [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")]
    return _snapshot(tmp, [N("a"), N("b"), N("c")], pods)


def test_a_node_whose_pod_fits_elsewhere_goes_after_ten_minutes(
    spread: Path, tmp_path: Path
) -> None:
    # minSize 0: the data's own minimum (3: every node all along) would keep every node
    row = _row(_whatif(tmp_path, spread, "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n",
                       "--autoscaler", "cluster-autoscaler"))  # fmt: skip
    assert row["nodes_removed"] == 1 and row["nodes_added"] == 0
    assert row["pods_evicted"] == 1 and row["evicted_twice_within_hour"] == 0
    # unneeded from the first run (0:10), deleted at the first run when that is strictly more
    # than 10 minutes (10:20: upstream's ``since + unneededTime`` before the loop's time), gone
    # after its pod's 30 s of grace: 650 s
    assert row["node_hours"] == pytest.approx(2 * 2 + 650 / 3600, abs=1e-6)
    assert row["core_hours"] == pytest.approx(4 * row["node_hours"], abs=1e-5)
    assert row["gib_hours"] == pytest.approx(16 * row["node_hours"], abs=1e-4)
    assert row["observed_node_hours"] == pytest.approx(6.0)
    counts = row["node_count"]
    assert counts["nodes"][0] == 3 and counts["nodes"][10] == 3  # 10:00: still there
    assert counts["nodes"][11] == 2 and counts["nodes"][-1] == 2  # 11:00 on: drained
    assert set(counts["observed_nodes"]) == {3}
    reasons = row["unremovable_reasons_node_hours"]
    # 0:10-10:20 one node unneeded and two with no place; then the two left stay. A node found
    # with no place is skipped as recently unremovable for 5 minutes after each such answer
    # (re-judged at 5:10, 10:10, ...): 10 s of each 5 minutes count as NoPlaceToMovePods
    assert reasons["Unneeded"] == pytest.approx(610 / 3600, abs=1e-6)
    assert reasons["NoPlaceToMovePods"] + reasons["RecentlyUnremovable"] >= 2 * 10 / 60
    assert reasons["RecentlyUnremovable"] > 20 * reasons["NoPlaceToMovePods"] > 0
    assert row["pending_pods_at_end"] == 0
    # the bound set in the config is not called observed; the one taken from the data is
    assert "pool pool: minSize 0, maxSize 3 (maxSize from the data's observed range, the other " \
        "from the config" in " ".join(row["notes"])  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "config", "said"),
    [
        ((), "", "cluster-autoscaler 1.36.1's rules (the newest of its minor known here; "
         "autoscaler.cluster-autoscaler-version pins one): expander least-waste (CA's default "
         "for this version); a node exactly at the scale-down threshold is a candidate (CA "
         "1.35+, 1.32.6+, 1.33.4+, 1.34.3+)"),
        (("--kubernetes-version", "1.32"), "", "cluster-autoscaler 1.32.7's rules (the newest "
         "of its minor known here; autoscaler.cluster-autoscaler-version pins one): expander "
         "random (CA's default for this version); a node exactly at the scale-down threshold "
         "is a candidate (CA 1.35+"),
        (("--kubernetes-version", "1.32"), "  cluster-autoscaler-version: 1.32.5\n",
         "cluster-autoscaler 1.32.5's rules (as set in the config): expander random (CA's "
         "default for this version); a node exactly at the scale-down threshold is "
         "NotUnderutilized (CA before 1.35 but for 1.32.6+, 1.33.4+, 1.34.3+)"),
        # frequent loops: on by default from CA 1.35 (upstream 7b9a707f5f), off before
        (("--kubernetes-version", "1.35"), "", "1.34.3+); frequent loops "
         "(CA's default for this version): a run at once after a scale-up or a deletion and "
         "when a pod becomes unschedulable, else every scan-interval"),
        (("--kubernetes-version", "1.32"), "", "; the loop runs every scan-interval (frequent "
         "loops off: CA's default for this version)"),
        ((), "  frequent-loops-enabled: false\n", "; the loop runs every scan-interval (frequent "
         "loops off: as set in the config)"),
        (("--kubernetes-version", "1.32"), "  frequent-loops-enabled: true\n", "frequent loops "
         "(as set in the config): a run at once"),
        ((), "  expander: random\n", "expander random (as set in the config)"),
    ],
)  # fmt: skip
def test_the_row_says_which_version_rules_it_followed(
    spread: Path, tmp_path: Path, extra: tuple[str, ...], config: str, said: str
) -> None:
    # the expander and the threshold rule depend on CA's release (its minor follows Kubernetes':
    # least-waste the default from 1.33, a node at the threshold a candidate from 1.35 and in
    # 1.32.6+, 1.33.4+, 1.34.3+; the newest release of the minor unless the config pins one)
    text = f"autoscaler:\n{config}  node-groups: {{pool: {{minSize: 0}}}}\n"
    row = _row(_whatif(tmp_path, spread, text, "--autoscaler", "cluster-autoscaler", *extra))
    notes = " ".join(row["notes"])
    assert said in notes
    on = "frequent-loops-enabled: true" in config or (
        "1.32" not in extra and "frequent-loops-enabled: false" not in config
    )
    assert ("frequent loops (" in notes) == on


def test_a_drained_node_runs_until_its_pods_terminate(spread: Path, tmp_path: Path) -> None:
    config = "autoscaler:\n  max-graceful-termination: 10s\n  node-groups: {pool: {minSize: 0}}\n"
    row = _row(_whatif(tmp_path, spread, config, "--autoscaler", "cluster-autoscaler"))
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1
    # 10 s of grace instead of the pod's 30 s: deleted at 10:20 (unneeded from 0:10 for more
    # than 10 minutes) + 10 s of drain
    assert row["node_hours"] == pytest.approx(2 * 2 + 630 / 3600, abs=1e-6)


def test_a_drain_in_progress_takes_the_drain_budget(tmp_path: Path) -> None:
    # b and c each hold one 0.5-core pod that fits on a or d (3 of 4 cores taken): both are
    # unneeded from the first run (0:10). At 10:20 both are due, and max-drain-parallelism 1
    # lets one drain: b. Its pod's 30 s of grace keep that drain in progress (upstream's
    # ``CropNodes`` takes ``DeletionsInProgress`` off the budgets) until 10:50, so the runs at
    # 10:30 and 10:40 drain nothing and c goes at 10:50, not at 10:30: b runs 650 s, c 680 s
    pods = [P(f"p{n}", n, cpu=3000 if n in "ad" else 500, memory=GI) for n in "abcd"]
    snap = _snapshot(tmp_path, [N(n) for n in "abcd"], pods)
    row = _row(_whatif(tmp_path, snap, "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n",
                       "--autoscaler", "cluster-autoscaler"))  # fmt: skip
    # b's evicted pod goes back to the scheduler, which puts it on the least allocated node,
    # c: c's drain evicts it again (2 + 1 evictions, one pod evicted twice within the hour)
    assert row["nodes_removed"] == 2 and row["pods_evicted"] == 3
    assert row["evicted_twice_within_hour"] == 1
    assert row["node_hours"] == pytest.approx(2 * 2 + (650 + 680) / 3600, abs=1e-6)
    # with a drain parallelism of 2, both go at 10:20
    config = "autoscaler:\n  max-drain-parallelism: 2\n  node-groups: {pool: {minSize: 0}}\n"
    both = _row(_whatif(tmp_path, snap, config, "--autoscaler", "cluster-autoscaler"))
    assert both["nodes_removed"] == 2 and both["pods_evicted"] == 2
    assert both["node_hours"] == pytest.approx(2 * 2 + 2 * 650 / 3600, abs=1e-6)


def test_a_change_between_two_runs_waits_for_the_next_run(tmp_path: Path) -> None:
    # b's only pod ends at 30:15, between two runs of the loop's timer (every 10 s from the
    # start, as upstream's ``time.After(scanInterval)``). CA sees b empty at its next run, 30:20
    # (not at 30:15: no run there), so b is unneeded from 30:20 and deleted at the first run
    # more than 10 minutes later, 40:30 (an empty node: gone at once). Frequent loops (on: the
    # default of CA 1.35+) start no run for a pod that ends
    pods = [P("pa", "a", cpu=3000, memory=GI), P("pb", "b", cpu=3000, memory=GI, end=30.25)]
    snap = _snapshot(tmp_path, [N("a"), N("b")], pods)
    config = "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n"
    row = _row(_whatif(tmp_path, snap, config, "--autoscaler", "cluster-autoscaler"))
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(2 + (40 * 60 + 30) / 3600, abs=1e-6)


def test_the_observed_minimum_keeps_every_node(spread: Path, tmp_path: Path) -> None:
    row = _row(_whatif(tmp_path, spread, None, "--autoscaler", "cluster-autoscaler"))
    assert row["nodes_removed"] == 0 and row["node_hours"] == pytest.approx(6.0)
    assert row["unremovable_reasons_node_hours"]["NodeGroupMinSizeReached"] > 1.9


def test_the_sentence_says_how_long_the_minimum_kept_nodes(spread: Path, tmp_path: Path) -> None:
    # the observed range (one size) keeps every node: the page's sentence says "0 removed" and
    # why, with the reasons table's NodeGroupMinSizeReached node-hours
    out = tmp_path / "report"
    run = CliRunner().invoke(
        main,
        ["report", "whatif", str(spread), "--out", str(out), "--strategy", "kube-default",
         "--workers", "1", "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (row,) = json.loads((out / "report.json").read_text())["comparison"]["autoscaled"]
    held = row["unremovable_reasons_node_hours"]["NodeGroupMinSizeReached"]
    html = (out / "report.html").read_text()
    start = html.index('<p data-answer="autoscaler">')
    sentence = html[start : html.index("</p>", start)]
    assert "0 added, 0 removed" in sentence
    assert (
        f"Nodes it found under-used stayed {held:,.1f} node-hours because their pool was at its "
        "minSize (NodeGroupMinSizeReached" in sentence
    )
    # at most the hours the three nodes existed
    assert 0 < held <= row["node_hours"]


def _loops(frequent: bool | None) -> str:
    """The ``autoscaler:`` line setting ``frequent-loops-enabled`` (None: the version's default,
    on from CA 1.35; the default version is 1.36)."""
    return "" if frequent is None else f"  frequent-loops-enabled: {str(frequent).lower()}\n"


# (frequent loops, the burst's wait, the new node's seconds): without frequent loops the loop's
# next run is 30:10, which orders the node (Ready at 32:10: a 130 s wait). With them (CA
# 1.35+'s default) the pod that becomes unschedulable at 30:00 starts a run at once, but that
# run finds it younger than 2 s (``allPodsAreNew``) and waits one loop: the node is ordered at
# 30:10 too (before 2026-12-01 the replay ordered it at 30:00). The node goes empty when the
# burst ends at 90:00, is unneeded from the run at 90:00 and deleted at the first run more
# than 10 minutes later, 100:10
@pytest.mark.parametrize(
    ("frequent", "wait", "seconds"), [(False, 130.0, 68 * 60), (None, 130.0, 68 * 60)]
)
def test_a_pod_that_fits_nowhere_gets_one_node_after_the_provisioning_delay(
    tmp_path: Path, frequent: bool | None, wait: float, seconds: int
) -> None:
    pods = [
        P("p0", "a", cpu=3000, memory=GI),
        P("p1", "b", cpu=3000, memory=GI),
        P("burst", "a", cpu=3000, memory=GI, start=30, end=90),
    ]
    snap = _snapshot(tmp_path, [N("a"), N("b")], pods)
    config = f"autoscaler:\n{_loops(frequent)}  node-groups: {{pool: {{maxSize: 5}}}}\n"
    row = _row(_whatif(tmp_path, snap, config, "--autoscaler", "cluster-autoscaler"))
    assert row["scale_ups"] == 1 and row["nodes_added"] == 1 and row["nodes_removed"] == 1
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(wait)
    assert row["node_hours"] == pytest.approx(2 * 2 + seconds / 3600, abs=1e-6)
    assert row["pods_evicted"] == 0  # the new node was empty when it went
    assert max(row["node_count"]["nodes"]) == 3
    assert row["node_count"]["nodes"][31] == 2 and row["node_count"]["nodes"][33] == 3


def _with_web_budget(tmp_path: Path, snap: Any, frequent: bool | None = None) -> dict[str, Any]:
    """The CA row of ``snap``'s what-if (ReplicaSet pods, every node present all along: minSize 0,
    maxSize the node count) with a PodDisruptionBudget on app=web allowing 1 unavailable;
    ``frequent``: ``frequent-loops-enabled`` (``_loops``)."""
    snap.pods["owner_name"] = "web-5d9f"
    pdb = {"namespace": "default", "name": "web",
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}}  # fmt: skip
    snap = dataclasses.replace(snap, objects={"PodDisruptionBudget": [pdb]})
    write_snapshot(snap, tmp_path / "snap")
    config = f"autoscaler:\n{_loops(frequent)}  node-groups: {{pool: {{minSize: 0}}}}\n"
    return _row(_whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler"))


# the pass that finds the budget spent: at the loop's next run (5:10), or, with frequent loops,
# at the run the pod that became unschedulable at 5:00 starts at once (5:00)
BUDGET_SPENT = [(False, 5 * 60), (None, 4 * 60 + 50)]


@pytest.mark.parametrize(("frequent", "unneeded"), BUDGET_SPENT)
def test_a_pod_that_starts_waiting_spends_its_budgets_disruption(
    tmp_path: Path, frequent: bool | None, unneeded: int
) -> None:
    # three 4-core nodes: w1 (app=web, 1 core) alone on one, 3-core pods on the others; a budget
    # on app=web with maxUnavailable 1. w1 fits beside either 3-core pod, so its node is unneeded
    # from the first run (expected 1, healthy 1: 1 disruption allowed). At 5:00 w2 (app=web, 3.5
    # cores) arrives and fits nowhere, and maxSize 3 allows no new node: the disruption
    # controller now expects 2 web pods with 1 healthy, so 0 disruptions are allowed (desired
    # healthy 2 - 1 = 1) and CA's pass at 5:10 finds w1's node blocked (NotEnoughPdb). No bind
    # or unbind happened: a replay that ran passes only after binds kept the node unneeded and
    # deleted it at 10:10, evicting w1 against its budget
    web = '{"app": "web"}'
    pods = [
        P("w1", "a", cpu=1000, memory=GI, labels=web),
        P("big-b", "b", cpu=3000, memory=GI),
        P("big-c", "c", cpu=3000, memory=GI),
        P("w2", "a", cpu=3500, memory=GI, start=5, labels=web),
    ]
    snap = build([N("a"), N("b"), N("c")], pods, minutes=60)
    row = _with_web_budget(tmp_path, snap, frequent)
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0 and row["scale_ups"] == 0
    assert row["pending_pods_at_end"] == 1  # w2: no room, no node to add
    reasons = row["unremovable_reasons_node_hours"]
    # w1's node unneeded from 0:10 to 5:10 (5:00 with frequent loops), then blocked by its pod
    # (re-judged every 5 minutes, skipped as recently unremovable in between)
    assert reasons["Unneeded"] == pytest.approx(unneeded / 3600, abs=1e-6)
    assert reasons["BlockedByPod"] > 0 and reasons["RecentlyUnremovable"] > 0


@pytest.mark.parametrize(("frequent", "unneeded"), BUDGET_SPENT)
def test_a_terminating_victim_spends_its_budgets_disruption(
    tmp_path: Path, frequent: bool | None, unneeded: int
) -> None:
    # two 4-core nodes, one web pod (1 core) on each: w2 (priority 1) and w1 (priority 2); a
    # budget on app=web with maxUnavailable 1 (2 expected, 2 healthy: 1 disruption). The first
    # candidate in node order is unneeded from 0:10 (its pod fits beside the other). At 5:00 h
    # (priority 100, 3.5 cores) fits nowhere and preempts w2 (the node whose highest victim
    # priority is lowest); w2 terminates for 30 s. The disruption controller counts a pod being
    # deleted as not healthy: 1 healthy of 2 expected, 0 disruptions, so CA's pass at 5:10
    # finds both nodes blocked by their web pod (NotEnoughPdb); the unneeded time ends at 5:10,
    # not at the first pass after w2 is gone (5:40). With frequent loops h, unschedulable at
    # 5:00 (nominated, still pending), starts a run at once: the pass is at 5:00
    web = '{"app": "web"}'
    pods = [
        P("w2", "b", cpu=1000, memory=GI, labels=web),
        P("w1", "a", cpu=1000, memory=GI, labels=web),
        P("h", "a", cpu=3500, memory=GI, start=5),
    ]
    snap = with_priorities(build([N("a"), N("b")], pods, minutes=60), {"w2": 1, "w1": 2, "h": 100})
    row = _with_web_budget(tmp_path, snap, frequent)
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    reasons = row["unremovable_reasons_node_hours"]
    assert reasons["Unneeded"] == pytest.approx(unneeded / 3600, abs=1e-6)  # 0:10 to the pass
    assert reasons["BlockedByPod"] > 0


def test_a_cordon_alone_takes_the_destinations_away(tmp_path: Path) -> None:
    # 3-core pods at 0:00 on two of three 4-core nodes, w1 (1 core) at 1:00 on the third (the
    # emptiest): its node is unneeded from 0:10 (empty, then w1 fits beside either 3-core pod).
    # At 5:00 all three nodes are cordoned (the snapshot's node-state intervals, to the end):
    # no pod is evicted, but a cordoned node takes no pod, so CA's pass that run finds w1 with no
    # place (NoPlaceToMovePods) and the node stays. No bind or unbind happened: a replay that ran
    # passes only after binds kept the node unneeded and deleted it at 10:10
    pods = [
        P("big1", "b", cpu=3000, memory=GI),
        P("big2", "c", cpu=3000, memory=GI),
        P("w1", "a", cpu=1000, memory=GI, start=1),
    ]
    snap = build([N("a"), N("b"), N("c")], pods, minutes=60)
    snap.pods["owner_name"] = "web-5d9f"
    rows = [(n, "cordon", "", "", "", at(5), None) for n in "abc"]
    state = pd.DataFrame(rows, columns=["node", "kind", "key", "value", "effect", "start", "end"])
    state["end"] = pd.to_datetime(state["end"], utc=True)
    snap.node_state = state
    write_snapshot(snap, tmp_path / "snap")
    config = "autoscaler:\n  node-groups: {pool: {minSize: 0, maxSize: 3}}\n"
    row = _row(_whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler"))
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0 and row["scale_ups"] == 0
    reasons = row["unremovable_reasons_node_hours"]
    # unneeded from 0:10 to the run at 5:00 (the cordons apply before that instant's run)
    assert reasons["Unneeded"] == pytest.approx(290 / 3600, abs=1e-6)
    assert reasons["NoPlaceToMovePods"] > 0 and reasons["RecentlyUnremovable"] > 0


@pytest.mark.parametrize(("frequent", "wait"), [(False, 310.0), (None, 310.0)])
def test_a_longer_provisioning_delay_is_the_pods_longer_wait(
    tmp_path: Path, frequent: bool | None, wait: float
) -> None:
    # the node ordered at the next run (30:10); with frequent loops the run at 30:00 finds the
    # pod younger than 2 s and waits one loop (``allPodsAreNew``): 30:10 too
    pods = [P("p0", "a", cpu=3000, memory=GI), P("burst", "a", cpu=3000, start=30, end=90)]
    snap = _snapshot(tmp_path, [N("a")], pods)
    config = (
        f"autoscaler:\n{_loops(frequent)}  provisioning-delay: 5m\n"
        "  node-groups: {pool: {maxSize: 2}}\n"
    )
    row = _row(_whatif(tmp_path, snap, config, "--autoscaler", "cluster-autoscaler"))
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(wait)


# (frequent loops, the new node's minute at its first count, the drained node's seconds): the
# scale-up's run is 30:10 either way (with frequent loops the run the burst starts at 30:00
# finds it younger than 2 s and waits one loop, ``allPodsAreNew``)
@pytest.mark.parametrize(
    ("frequent", "ready", "drained"), [(False, 33, 40 * 60 + 50), (None, 33, 40 * 60 + 50)]
)
def test_a_scale_up_lifts_the_minimum_at_its_own_run(
    tmp_path: Path, frequent: bool | None, ready: int, drained: int
) -> None:
    # three 4-core nodes at the pool's minSize 3, their pods at 40 %, 90 % and 20 % cpu (kube-default
    # spreads them one a node); a 3.4-core pod at 30:00 fits none, so the run at 30:10 orders a
    # node (the group's target size 4). Until then no node is a scale-down candidate: CA drops
    # a node whose group is at its minSize before the planner (GetScaleDownCandidates,
    # pre_filtering_processor.go). RunOnce scales up before it asks for the candidates, so the
    # 40 % node, whose pod fits on the 20 % one, is unneeded from the scale-up's own run, 30:10,
    # and deleted when that is strictly more than 10 minutes, at 40:20, its pod's 30 s of grace
    # after. (Waiting for the new node to be Ready at 32:10 before judging it again would
    # delete it at 42:20.) With frequent loops the burst, unschedulable at 30:00, starts a run
    # then, which waits one loop for more pods (it is younger than 2 s) and deletes nothing:
    # the same 30:10 order and 40:20 deletion
    pods = [
        P("p40", "a", cpu=1600, memory=GI),
        P("p90", "b", cpu=3600, memory=GI),
        P("p20", "c", cpu=800, memory=GI),
        P("burst", "a", cpu=3400, memory=GI, start=30),
    ]
    snap = _snapshot(tmp_path, [N("a"), N("b"), N("c")], pods)
    config = f"autoscaler:\n{_loops(frequent)}  node-groups: {{pool: {{minSize: 3, maxSize: 5}}}}\n"
    row = _row(_whatif(tmp_path, snap, config, "--autoscaler", "cluster-autoscaler"))
    assert row["scale_ups"] == 1 and row["nodes_added"] == 1 and row["nodes_removed"] == 1
    assert row["pods_evicted"] == 1  # the 40 % node's pod, placed again on the 20 % node
    counts = row["node_count"]["nodes"]
    assert counts[ready - 1] == 3 and counts[ready] == 4  # the new node Ready (32:10)
    assert counts[40] == 4 and counts[41] == 3  # the drained node gone (40:50)
    # two nodes all along, the drained one until it is gone, the new one from Ready to 2:00:00
    new = 120 * 60 - (ready * 60 - 50)
    assert row["node_hours"] == pytest.approx(2 * 2 + (drained + new) / 3600, abs=1e-6)


def test_none_is_todays_whatif(spread: Path, tmp_path: Path) -> None:
    plain = _whatif(tmp_path, spread, None)
    none = _whatif(tmp_path, spread, None, "--autoscaler", "none")
    assert plain.exit_code == 0 and none.exit_code == 0
    assert json.loads(plain.output) == json.loads(none.output)
    assert "autoscaled" not in json.loads(plain.output)


def test_figures_are_never_impossible(spread: Path, tmp_path: Path) -> None:
    row = _row(_whatif(tmp_path, spread, "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n",
                       "--autoscaler", "cluster-autoscaler", "--seeds", "1"))  # fmt: skip
    hours = 2.0
    slots = 3 + 3  # the data's nodes and the group's spare nodes (maxSize 3)
    for key in ("node_hours", "core_hours", "gib_hours", "pending_pod_seconds_scale_up"):
        assert math.isfinite(row[key]) and row[key] >= 0
    assert row["node_hours"] <= slots * hours
    assert all(0 <= n <= slots for n in row["node_count"]["nodes"])
    total_reasons = sum(row["unremovable_reasons_node_hours"].values())
    assert total_reasons <= row["node_hours"] + 1e-9  # a reason is about a node that exists


@pytest.mark.parametrize(
    ("fault", "config", "extra", "names"),
    [
        ("autoscaler-config-bad", "autoscaler:\n  scale-down-unneeded-time: soon\n", (),
         "autoscaler.scale-down-unneeded-time"),
        ("autoscaler-config-bad", "autoscaler:\n  node-groups: {nope: {minSize: 1}}\n", (),
         "node-groups"),
        ("autoscaler-config-bad", "autoscaler:\n  expander: cheapest\n", (), "expander"),
        ("autoscaler-config-bad", "autoscaler:\n  unremovable-node-recheck-timeout: -1m\n", (),
         "autoscaler.unremovable-node-recheck-timeout"),
        ("autoscaler-config-bad", "autoscaler:\n  frequent-loops-enabled: \"yes\"\n", (),
         "autoscaler.frequent-loops-enabled: 'yes' is not true or false"),
    ],
)  # fmt: skip
def test_bad_autoscaler_input_is_one_line(
    spread: Path, tmp_path: Path, fault: str, config: str | None, extra: tuple[str, ...],
    names: str,
) -> None:  # fmt: skip
    flags = ("--autoscaler", "cluster-autoscaler") if "--autoscaler" not in extra else ()
    run = _whatif(tmp_path, spread, config, *flags, *extra)
    # each row id spelled out: the catalogue test looks for documented_exit("<id>") in the tests
    expected = {
        "autoscaler-config-bad": documented_exit("autoscaler-config-bad"),
    }[fault]
    assert run.exit_code == expected
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in run.output


@pytest.mark.browser
def test_the_page_shows_the_rows_and_the_node_count_chart(spread: Path, tmp_path: Path) -> None:
    require_chromium()
    config = tmp_path / "config.yaml"
    config.write_text("autoscaler:\n  node-groups: {pool: {minSize: 0}}\n")
    out = tmp_path / "report"
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "whatif", str(spread), "--out", str(out),
         "--strategy", "kube-default", "--workers", "1", "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "report.html")
        answer = browser.evaluate("document.querySelector('[data-answer=autoscaler]').textContent")
        # the row's table in its two parts (capacity; churn and waiting): headers and rows each
        parts = browser.evaluate(AUTOSCALED_PARTS)
        chart = browser.evaluate(
            "[...document.querySelectorAll('img.chart')].filter(i => i.alt.startsWith("
            "'Nodes over time')).map(i => i.complete && i.naturalWidth > 0)"
        )
        reasons, explained = reasons_and_explanation(browser)
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert chart == [True]
    # each reason the table shows is explained on the page
    assert {"NotUnderutilized", "NoPlaceToMovePods"} <= set(reasons), reasons
    assert all(f"{reason}:" in explained for reason in reasons), (reasons, explained)
    assert [name for name, _, _ in parts] == ["autoscaled", "autoscaled_churn"]
    shown = {}
    for _, heads, rows in parts:
        (row,) = rows
        shown.update(zip((h.rstrip(" ↕") for h in heads), row, strict=True))
    assert shown["Strategy + autoscaler"] == "kube-default + cluster-autoscaler"
    # the hand-worked figures (first test): 4 h 10 min 10 s of nodes, one removed, one evicted
    assert shown["Node-hours"] == "4.2" and shown["Nodes removed"] == "1"
    assert (
        shown["Pods evicted by scale-down or consolidation"] == "1" and shown["Peak nodes"] == "3"
    )
    # the sentence says what the row says
    assert answer == (
        "Under cluster-autoscaler, kube-default would have run 4.2 node-hours, 1.8 fewer than "
        "the 6.0 observed, peaking at 3 nodes: 0 added, 1 removed, 1 pod evicted by scale-down."
    )


@pytest.fixture(scope="module")
def collected(prometheus_from_openmetrics: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated cluster day (8 nodes, 5-minute step) through a real Prometheus and
    ``analyzer collect``: the snapshot folder."""
    cluster = generate(SyntheticSpec(seed=3, nodes=8, days=1, step=300, pods_per_node=3))
    folder = tmp_path_factory.mktemp("as-prom")
    write_openmetrics(cluster, folder / "cluster.om")
    server = prometheus_from_openmetrics(folder / "cluster.om")
    meta = cluster.snapshot.meta
    run = CliRunner().invoke(
        main,
        ["collect", "--prometheus", server.url, "--start", meta.start, "--end", meta.end,
         "--step", "5m", "--out", str(folder / "snap")],
    )  # fmt: skip
    assert run.exit_code in (0, 3), run.output  # 3: partial (a few queries the writer lacks)
    return folder / "snap"


@pytest.mark.prometheus
def test_whatif_under_cluster_autoscaler_on_a_collected_snapshot(
    collected: Path, tmp_path: Path
) -> None:
    snapshot = read_snapshot(collected)
    run = _whatif(tmp_path, collected, None, "--autoscaler", "cluster-autoscaler")
    row = _row(run)
    hours = (snapshot.end - snapshot.start).total_seconds() / 3600
    nodes = len(snapshot.nodes)
    # every node of the data and at most maxSize (≤ the data's node count) spare nodes
    assert 0 < row["node_hours"] <= 2 * nodes * hours
    assert row["observed_node_hours"] <= nodes * hours + 1e-9
    counts = row["node_count"]
    assert len(counts["nodes"]) == len(counts["observed_nodes"]) == len(counts["time"])
    assert max(counts["observed_nodes"]) <= nodes
    # node-hours are the node count's integral (grid step 5 min, within a step per change)
    step_hours = 300 / 3600
    integral = sum(counts["nodes"][:-1]) * step_hours
    changes = row["nodes_added"] + row["nodes_removed"]
    assert abs(integral - row["node_hours"]) <= (changes + 1) * step_hours + 1e-6
    for value in row["unremovable_reasons_node_hours"].values():
        assert 0 <= value <= row["node_hours"] + 1e-9


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generator's 8-node day (pools general 4, memory 2, compute 1, gpu 1), 5-minute step."""
    out = tmp_path_factory.mktemp("generated") / "snap"
    write_snapshot(generate(SyntheticSpec(seed=3, nodes=8, days=1, step=300)).snapshot, out)
    return out


def test_groups_stay_within_their_bounds(generated: Path, tmp_path: Path) -> None:
    config = (
        "autoscaler:\n  expander: least-waste\n  node-groups:\n"
        "    general: {minSize: 1, maxSize: 5}\n    memory: {minSize: 0, maxSize: 3}\n"
    )
    run = _whatif(tmp_path, generated, config, "--autoscaler", "cluster-autoscaler",
                  "--seeds", "2")  # fmt: skip
    assert run.exit_code == 0, run.output
    rows = json.loads(run.output)["autoscaled"]
    assert [r["seed"] for r in rows] == [0, 1]
    # compute and gpu keep the data's range (one node all day); general and memory as set
    bounds = {"general": (1, 5), "memory": (0, 3), "compute": (1, 1), "gpu": (1, 1)}
    low = sum(b[0] for b in bounds.values())
    high = sum(b[1] for b in bounds.values())
    for row in rows:
        pools = row["pools"]
        assert all(low <= n <= high for n in row["node_count"]["nodes"])
        for name, (_, most) in bounds.items():
            assert pools[name]["node_hours"] <= most * 24.0 + 1e-6
        assert pools["compute"]["nodes_removed"] == pools["gpu"]["nodes_removed"] == 0
        for key in ("nodes_added", "nodes_removed", "pods_evicted", "node_hours"):
            assert row[key] == pytest.approx(sum(p[key] for p in pools.values()), abs=1e-5)
        # a node can only be removed after it existed: removals <= initial nodes + additions
        assert row["nodes_removed"] <= 8 + row["nodes_added"]


def test_the_text_output_says_why_no_node_went(spread: Path, tmp_path: Path) -> None:
    # the table's autoscaled row has no fixed-node figures ("-", never NaN), and the page's
    # sentence and the pools' bounds follow it
    run = CliRunner().invoke(
        main,
        ["whatif", str(spread), "--strategy", "kube-default", "--workers", "1",
         "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "NaN" not in run.output
    assert "kube-default + cluster-autoscaler" in run.output
    assert "0 added, 0 removed" in run.output
    assert "because their pool was at its minSize (NodeGroupMinSizeReached" in run.output
    assert "pool pool: minSize 3, maxSize 3 (the data's observed range;" in run.output


def test_a_node_being_provisioned_takes_only_the_pods_its_group_may_hold(tmp_path: Path) -> None:
    """Pools small (a 2-core node labelled pool=small) and big (an 8-core node, pool=big), both
    full. X (1 core) waits from 30:00: least-waste orders a small node at the run at 30:10.
    Y (1 core, nodeSelector pool=big) waits from 30:30: the small node still being provisioned
    could hold it by its resources, but not by its selector; upstream puts template copies of
    the upcoming nodes in its snapshot and runs every filter on them
    (``filter_out_schedulable.go``), so Y gets a big node at the run at 30:40, Ready at 32:40:
    130 s of waiting each. Counted by resources alone, Y waited for the small node to be Ready
    (32:10) before its own scale-up."""
    nodes = [
        N("a", cpu=2000, pool="small", labels=json.dumps({"pool": "small"})),
        N("b", cpu=8000, memory=64 * GI, pool="big", labels=json.dumps({"pool": "big"})),
    ]
    pods = [P("fa", "a", cpu=2000, start=1), P("fb", "b", cpu=8000),
            P("x", "a", cpu=1000, start=30), P("y", "b", cpu=1000, start=30.5)]  # fmt: skip
    snap = build(nodes, pods, minutes=120)
    snap.pods["node_selector"] = ["{}", "{}", "{}", json.dumps({"pool": "big"})]
    config = (
        "autoscaler:\n  frequent-loops-enabled: false\n  expander: least-waste\n"
        "  node-groups: {small: {minSize: 1, maxSize: 3}, big: {minSize: 1, maxSize: 3}}\n"
    )
    row = _ca_row(tmp_path, snap, config)
    assert row["scale_ups"] == 2 and row["nodes_added"] == 2
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(2 * 130.0)


def test_the_estimator_asks_the_filters_on_its_new_nodes(tmp_path: Path) -> None:
    """Two 4-core nodes, each nearly full (3.6 cores); three 0.5-core pods asking for host
    port 8080 wait from 30:00. Upstream's binpacking estimator runs every filter on its new
    nodes (``tryToScheduleOnNewNodes``): the second pod's port clashes on the first new node,
    and so on, so the run at 30:10 orders 3 nodes at once, Ready at 32:10: 3 × 130 s. Packed
    by resources alone, the three went onto one new node, two of them then fit nowhere, and
    each needed a scale-up of its own, 2 minutes apart."""
    port = json.dumps([["TCP", "0.0.0.0", 8080]])
    pods = [P("fa", "a", cpu=3600), P("fb", "b", cpu=3600)]
    pods += [P(f"h{i}", "a", cpu=500, start=30) for i in range(3)]
    snap = build([N("a"), N("b")], pods, minutes=120)
    snap.pods["host_ports"] = ["[]"] * 2 + [port] * 3
    config = "autoscaler:\n  frequent-loops-enabled: false\n  node-groups: {pool: {minSize: 2, maxSize: 6}}\n"
    row = _ca_row(tmp_path, snap, config)
    assert row["scale_ups"] == 1 and row["nodes_added"] == 3
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(3 * 130.0)


@pytest.mark.parametrize(
    ("start", "frequent", "gpu", "wait"),
    [
        # arrives 1.2 s before the timer's run at 30:00: too young there; ordered at 30:10
        (29.98, False, False, 131.2),
        # asks for a GPU: 30 s of buffer, the runs at 30:00 (frequent), 30:10 and 30:20 wait;
        # ordered at 30:30, Ready at 32:30
        (30, None, True, 150.0),
        (30, False, True, 150.0),
    ],
)
def test_a_scale_up_waits_while_every_pod_to_help_is_very_new(
    tmp_path: Path, start: float, frequent: bool | None, gpu: bool, wait: float
) -> None:
    """``allPodsAreNew`` (static_autoscaler.go): a run whose oldest pod to help was created
    less than 2 s ago (30 s for a pod asking for a GPU) orders nothing and deletes nothing,
    waiting one loop for more pods. Two 4-core nodes with a 3-core pod each; a 3-core pod
    arrives at ``start`` minutes and fits nowhere."""
    pods = [P("p0", "a", cpu=3000, memory=GI), P("p1", "b", cpu=3000, memory=GI),
            P("burst", "a", cpu=3000, memory=GI, start=start, end=90)]  # fmt: skip
    snap = build([N("a"), N("b")], pods, minutes=120)
    if gpu:
        snap.nodes["allocatable:nvidia.com/gpu"] = [1, 1]
        snap.pods["requests:nvidia.com/gpu"] = [1, 1, 1]
    config = f"autoscaler:\n{_loops(frequent)}  node-groups: {{pool: {{maxSize: 5}}}}\n"
    row = _ca_row(tmp_path, snap, config)
    assert row["scale_ups"] == 1
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(wait)

"""cluster-autoscaler's scheduling hints in the removal simulation (cluster-autoscaler/simulator/
scheduling/hinting_simulator.go, hints.go; ``analyzer.scheduling.sim_hints``): a pod the last pass
placed on a node goes back to that node first, if it still exists, is a destination and passes
the filters, without moving the round-robin start; a hint lives for the pass that set it and the
next (``DropOldHints`` once per pass). Hand-made clusters of 1-core nodes built from scenario
documents; two passes are two ``RemovalSimulator``s sharing one ``Hints``, as the replay's loop
runs them. ``analyzer autoscale`` (one instant) has no earlier pass and no hints.
"""

from __future__ import annotations

from typing import Any

from autoscale_cases import node, pod

from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.scenario import build
from analyzer.scheduling.sim_hints import Hints

NOW = "2026-11-01T12:00:00Z"
CORE = {"cpu": 1000, "memory": 4_000_000_000}
RS = ["ReplicaSet", "rs", "apps/v1"]


def _pass(used: dict[str, int], hints: Hints[str, str] | None) -> dict[str, str]:
    """One pass: candidate ``c`` (pods p of 400m and q of 300m, in that order) simulated on
    nodes c, n1, n2 (1 core each, in that order) where n1 and n2 already hold ``used``
    millicores. Where c's pods went."""
    pods = [
        pod("p", {"cpu": 400, "memory": 1000, "owner": RS}, NOW, "c"),
        pod("q", {"cpu": 300, "memory": 1000, "owner": RS}, NOW, "c"),
    ]
    pods += [
        pod(f"fill-{n}", {"cpu": m, "memory": 1000, "owner": RS}, NOW, n)
        for n, m in used.items()
        if m
    ]
    doc: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodes": [node(n, CORE) for n in ("c", "n1", "n2")],
        "pods": pods,
    }
    scenario = build(doc)
    sim = RemovalSimulator(scenario.cluster, scenario.profile, scenario.options, scenario.now)
    sim.hints = hints
    outcome = sim.simulate("c", PdbTracker([]))
    if hints is not None:
        hints.drop_old()  # ``Planner.UpdateClusterState`` after the pass
    return outcome.destinations if outcome.removable else {"not removable": outcome.reason}


def test_a_pod_goes_back_to_its_hinted_node_though_round_robin_picks_another() -> None:
    hints: Hints[str, str] = Hints()
    # pass 1: n1 is full (1000m), so both go to n2 (round-robin from n1: n1 refuses, n2 takes)
    assert _pass({"n1": 1000, "n2": 0}, hints) == {"default/p": "n2", "default/q": "n2"}
    # pass 2: n1 has room for both now; the search would start at n1 (lastIndex 0, c is the
    # candidate), but each pod tries its hint n2 first, where both still fit
    assert _pass({"n1": 0, "n2": 0}, hints) == {"default/p": "n2", "default/q": "n2"}
    # without hints (the control) the same state sends p to n1 (and q round-robin on to n2):
    # the hint made the difference
    assert _pass({"n1": 0, "n2": 0}, None) == {"default/p": "n1", "default/q": "n2"}


def test_a_hinted_placement_does_not_move_the_round_robin_start() -> None:
    hints: Hints[str, str] = Hints()
    hints.set("default/p", "n1")  # as a pass before would have left it
    hints.drop_old()
    # p goes to its hint n1; q has no hint: its search starts where the last search stopped
    # (index 0: c, skipped as the candidate; then n1, which still has room for it). Had p's
    # placement moved the start past n1 (as a search onto n1 does), q would go to n2.
    assert _pass({"n1": 0, "n2": 0}, hints) == {"default/p": "n1", "default/q": "n1"}


def test_a_hint_whose_node_no_longer_fits_falls_back_to_the_search() -> None:
    hints: Hints[str, str] = Hints()
    assert _pass({"n1": 1000, "n2": 0}, hints) == {"default/p": "n2", "default/q": "n2"}
    # n2 now holds 700m: p (400m) does not fit its hint; the search from n1 takes it (n1 empty);
    # q (300m) fits its hint n2 exactly
    assert _pass({"n1": 0, "n2": 700}, hints) == {"default/p": "n1", "default/q": "n2"}
    # and the hints now name where they went
    assert hints.get("default/p") == "n1" and hints.get("default/q") == "n2"


def test_a_hint_to_a_node_that_is_gone_or_no_destination_is_ignored() -> None:
    hints: Hints[str, str] = Hints()
    hints.set("default/p", "gone-node")  # no such node now
    hints.set("default/q", "c")  # the candidate itself is never a destination
    hints.drop_old()
    # both searched, as without hints: p to n1, q round-robin on to n2
    assert _pass({"n1": 0, "n2": 0}, hints) == {"default/p": "n1", "default/q": "n2"}


def test_hints_of_pods_no_pass_placed_are_dropped_after_one_pass() -> None:
    hints: Hints[str, int] = Hints()
    hints.set("a", 1)
    hints.set("b", 2)
    hints.drop_old()  # end of pass 1: both readable in pass 2
    assert hints.get("a") == 1 and hints.get("b") == 2
    hints.set("a", 3)  # pass 2 placed a again (elsewhere); b not looked at (its pod left)
    hints.drop_old()  # end of pass 2
    assert hints.get("a") == 3  # the newest placement wins
    assert hints.get("b") is None  # b's pod was placed by no pass since: dropped
    hints.forget("a")  # the replay's evicted pod: upstream's replacement has a new UID
    assert hints.get("a") is None


def test_a_failed_simulation_keeps_the_hints_of_the_pods_it_placed() -> None:
    hints: Hints[str, str] = Hints()
    # n1 full, n2 has 600m free: p (400m) fits n2, then q (300m) fits nowhere: NoPlaceToMovePods
    assert _pass({"n1": 1000, "n2": 400}, hints) == {"not removable": "NoPlaceToMovePods"}
    # upstream sets p's hint before q fails (the snapshot is reverted, the hint is not)
    assert hints.get("default/p") == "n2" and hints.get("default/q") is None

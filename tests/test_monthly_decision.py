"""One decision per pool (issue 29): the reconciliation rules of docs/monthly.md, case by case,
and the grouping of nodes that cannot go alone (counts add up, one group per kind of refusal).

The inputs are report.json's own shapes (``decision``, ``simulated_decision``, a scenario row,
``blocked_nodes``) written out by hand, so each expected sentence follows from the table in
docs/monthly.md "One decision per pool", not from the code's output.
"""

from __future__ import annotations

from typing import Any

from analyzer.report.monthly_decision import pool_decision
from analyzer.report.refusal_groups import group_blocked, reason_kind


def _forecast(action: str, nodes: int, by: str | None = None, binds: str | None = None,
              rule: str = "release") -> dict[str, Any]:  # fmt: skip
    return {"action": action, "nodes": nodes, "by_date": by, "binds": binds, "rule": rule}


def _sim(nodes: int, scenario: str = "repack only") -> dict[str, Any]:
    return {"nodes": nodes, "scenario": scenario, "strategy": "most-allocated", "workloads": 3}


ROW = {"core_hours_released": 93395.4, "gib_hours_released": 171314.0, "cost_released": 1234.5}


def test_the_forecast_count_stands_when_the_replay_frees_more() -> None:
    d = pool_decision(_forecast("release", 5, binds="requested CPU (daily peak)"), _sim(15),
                      ROW, "EUR")  # fmt: skip
    assert (d["action"], d["nodes"]) == ("release", 5)
    assert d["sentence"] == (
        "Release 5 nodes now (CPU requests bind); repacking with most-allocated "
        "would let 15 nodes go at today's demand (93,395 core-hours and 171,314 GiB-hours freed over "
        "the busiest week, 1,234 EUR)."
    )


def test_the_replay_caps_a_release_the_pods_would_not_fit() -> None:
    d = pool_decision(_forecast("release", 16), _sim(15), ROW, None)
    assert (d["action"], d["nodes"]) == ("release", 15)  # never 16, never 16 + 15
    assert d["sentence"].startswith("Release 15 nodes after repacking with most-allocated (")
    assert d["sentence"].endswith("though the forecast allows 16.")
    none = pool_decision(_forecast("release", 4), _sim(0), ROW, None)
    assert (none["action"], none["nodes"]) == ("none", 0)


def test_an_addition_is_not_netted_against_todays_slack() -> None:
    d = pool_decision(
        _forecast("add", 4, "2027-03-23", "requested memory (daily peak)", "exhaustion"),
        _sim(7, "both"), ROW, None,
    )  # fmt: skip
    assert (d["action"], d["nodes"], d["state"]) == ("add", 4, "bad")
    assert d["sentence"].startswith(
        "Add 4 nodes by 2027-03-23 (memory requests bind); at today's demand "
        "right-sizing 3 workloads and repacking with most-allocated would leave 7 nodes empty"
    )
    assert d["sentence"].endswith("not the growth ahead.")


def test_without_a_replay_the_forecast_decides_alone() -> None:
    d = pool_decision(_forecast("release", 2, binds="at least two nodes left"), None, None, None)
    assert d["sentence"] == "Release 2 nodes now (two nodes stay)."
    hold = pool_decision(_forecast("none", 0, rule="no_forecast"), _sim(3), ROW, None)
    assert hold["action"] == "none" and hold["sentence"].startswith(
        "No action now: no forecast yet (under 21 days of history); repacking with "
        "most-allocated would let 3 nodes go"
    )


def _blocked(node: str, *refusals: tuple[str, list[str]]) -> dict[str, Any]:
    return {
        "node": node,
        "reasons": [f"1 pod of {w}: …" for w, _ in refusals],
        "refusals": [{"workload": w, "pods": 1, "reasons": r} for w, r in refusals],
    }


def test_blocked_nodes_group_by_kind_of_refusal_and_add_up() -> None:
    cpu = ["Insufficient cpu", "node(s) didn't match pod topology spread constraints"]
    # the same kinds in another order (and other node counts in the full message): one group
    cpu_other_order = ["node(s) didn't match pod topology spread constraints", "Insufficient cpu"]
    memory = ["Insufficient memory", "node(s) had untolerated taint {dedicated: gpu}"]
    groups = group_blocked([
        _blocked("n1", ("shop/api-1", cpu)),
        _blocked("n2", ("shop/cache-1", memory)),
        _blocked("n3", ("shop/api-2", cpu_other_order)),
        _blocked("n4", ("shop/api-1", cpu)),
    ])  # fmt: skip
    assert [g.count for g in groups] == [3, 1] and sum(g.count for g in groups) == 4
    assert [n["node"] for n in groups[0].nodes] == ["n1", "n3", "n4"]
    assert groups[0].summary() == (
        "3 nodes: insufficient cpu elsewhere, its topology spread (pods of shop/api-1, shop/api-2)"
    )
    assert groups[1].summary() == (
        "1 node: insufficient memory elsewhere, taints it does not tolerate (pods of shop/cache-1)"
    )
    assert reason_kind("node(s) didn't match Pod's node affinity/selector") == (
        "its node affinity/selector"
    )


def test_no_release_under_an_autoscaler_held_at_its_minimum_says_why() -> None:
    # the forecast allows 4, the replay under cluster-autoscaler released none because the
    # pool's minSize is the size it ran at in the data (``autoscaled_decision``'s held_at_min)
    held = {**_sim(0), "autoscaler": "cluster-autoscaler", "held_at_min": True}
    d = pool_decision(_forecast("release", 4), held, ROW, None)
    assert (d["action"], d["nodes"]) == ("none", 0)
    assert d["sentence"] == (
        "No release: the forecast allows 4, but cluster-autoscaler would release no node in the "
        "best scenario of the busiest week: the pool's minSize is its size in the data."
    )
    free = pool_decision(_forecast("release", 4), {**held, "held_at_min": False}, ROW, None)
    assert free["sentence"].endswith(
        "would release no node in the best scenario of the busiest week."
    )

"""``analyzer whatif --autoscaler karpenter``: the replay with Karpenter driving the nodes.

Small clusters over two hours (1-minute data step), where what Karpenter does can be worked out by
hand with its defaults (disruption polled every 10 s from the start, consolidateAfter 0s, one
budget of 10 % of the pool's nodes rounded up, batches closing after 1 s idle, a node Ready 2 m
after launch; without --prices a shape costs by capacity, so a 4-core / 16 GiB node is cheaper
than an 8-core / 32 GiB one and two nodes of one shape cost the same). A command runs 15 s after
the pass that made it, once validated (``commandValidationDelay``), and the next pass follows at
once (``RequeueImmediately``):

- **delete**: three 4-core nodes each with a 1.5-core pod. At 0:10 every node is a candidate but
  the budget (10 % of 3 → 1) lets one go: multi-node needs two, so single-node takes the first,
  whose pod fits on the second (3 ≤ 4 cores): deleted at 0:25, its pod evicted and placed
  again. Then neither remaining node's pod fits on the other (4.5 > 4) and no shape is cheaper:
  single-node tries both (a budget above 0 is not counted down per candidate).
- **replace**: an 8-core node with a 3-core pod, then a 4-core node with a 3-core pod: the big
  node's pod fits nowhere (6 > 4), but the 4-core shape holds it and is strictly cheaper: a 4-core
  node launches at 0:25, is Ready at 2:25 and the big node goes then.
- **provision**: an 8-core node with a 7-core pod and a 4-core node with a 3-core pod; a 3-core
  pod from 30:00 to 90:00 fits nowhere: the batch closes 1 s after it went pending (30:01), the
  cheapest shape that holds it (4-core) is Ready at 32:01; at 90:00 the pod ends, the node is
  empty and emptiness deletes it after the validation, at 90:15.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from autoscaler_page import AUTOSCALED_PARTS, reasons_and_explanation
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot


def _snapshot(tmp_path: Path, nodes: list[N], pods: list[P]) -> Path:
    snap = build(nodes, pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: they may move
    out = tmp_path / "snap"
    write_snapshot(snap, out)
    return out


def _whatif(tmp_path: Path, snap: Path, config: str | None, *extra: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(config or "autoscaler: {}\n")
    return CliRunner().invoke(
        main,
        ["--config", str(path), "whatif", str(snap), "--strategy", "kube-default",
         "--workers", "1", "--format", "json", "--autoscaler", "karpenter", *extra],
    )  # fmt: skip


def _row(run: Any) -> dict[str, Any]:
    assert run.exit_code == 0, run.output
    page = json.loads(run.output)
    assert page["autoscaler"] == "karpenter"
    (row,) = page["autoscaled"]
    return dict(row)


def _karpenter(disruption: str) -> str:
    return f"autoscaler:\n  karpenter:\n    disruption: {disruption}\n"


@pytest.fixture(scope="module")
def spread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three 4-core nodes, a 1.5-core pod on each for the whole window."""
    tmp = tmp_path_factory.mktemp("spread")
    pods = [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")]
    return _snapshot(tmp, [N("a"), N("b"), N("c")], pods)


@pytest.fixture(scope="module")
def default_row(spread: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The spread cluster replayed under Karpenter's defaults (one run for the tests below)."""
    return _row(_whatif(tmp_path_factory.mktemp("default"), spread, None))


def test_a_node_whose_pods_fit_on_the_others_is_deleted(default_row: dict[str, Any]) -> None:
    row = default_row
    assert row["nodes_removed"] == 1 and row["nodes_added"] == 0
    assert row["pods_evicted"] == 1 and row["evicted_twice_within_hour"] == 0
    # the command made at the 0:10 pass runs at 0:25, after its validation
    assert row["node_hours"] == pytest.approx(2 * 2 + 25 / 3600, abs=1e-6)
    assert row["observed_node_hours"] == pytest.approx(6.0)
    counts = row["node_count"]["nodes"]
    assert counts[0] == 3 and counts[1] == 2 and counts[-1] == 2
    reasons = row["unremovable_reasons_node_hours"]
    # the 0:10 pass: one node chosen, the two others not tried, for the 15 s of the validation;
    # from the pass right after the deletion (0:25) single-node consolidation tries both (the
    # budget, 10 % of 2 → 1, is not 0 and is not counted down per candidate:
    # singlenodeconsolidation.go) and neither's pod fits
    assert reasons["Disrupting"] == pytest.approx(15 / 3600, abs=1e-6)
    assert reasons["Consolidatable"] == pytest.approx(2 * 15 / 3600, abs=1e-6)
    assert reasons["NotCheaper"] == pytest.approx(2 * (2 - 25 / 3600), abs=1e-6)
    assert reasons.get("BudgetExhausted", 0) == 0


def test_a_budget_of_zero_nodes_blocks_all_disruption(spread: Path, tmp_path: Path) -> None:
    row = _row(_whatif(tmp_path, spread, _karpenter("{budgets: [{nodes: '0'}]}")))
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(6.0)
    # every node held back by the budget from the first pass (0:10) on
    assert row["unremovable_reasons_node_hours"]["BudgetExhausted"] == pytest.approx(
        3 * (2 - 10 / 3600), abs=1e-6
    )


def test_a_scheduled_budget_blocks_only_in_its_window(spread: Path, tmp_path: Path) -> None:
    # the data starts at midnight (replay_fixtures.T0): a 0-node budget from 00:00 for 30m, then
    # the default applies and the first node is chosen at the 30:00 pass, deleted at 30:15
    rule = "{budgets: [{nodes: '0', schedule: '0 0 * * *', duration: 30m}, {nodes: '10%'}]}"
    row = _row(_whatif(tmp_path, spread, _karpenter(rule)))
    assert row["nodes_removed"] == 1
    assert row["node_hours"] == pytest.approx(2 * 2 + (30 * 60 + 15) / 3600, abs=1e-6)


def test_when_empty_never_removes_a_non_empty_node(spread: Path, tmp_path: Path) -> None:
    row = _row(_whatif(tmp_path, spread, _karpenter("{consolidationPolicy: WhenEmpty}")))
    assert row["nodes_removed"] == 0 and row["node_hours"] == pytest.approx(6.0)
    assert row["unremovable_reasons_node_hours"]["WhenEmptyPolicy"] > 3 * 1.99


def _two(tmp_path: Path, keep: str = "{}") -> Path:
    """A 4-core node with a 3-core pod and a 2-core node with a 1.5-core pod until 30:00: neither
    pod fits beside the other, and the 2-core shape is too small for the 3-core pod."""
    pods = [P("p0", "a", cpu=3000), P("p1", "b", cpu=1500, end=30)]
    return _snapshot(tmp_path, [N("a"), N("b", cpu=2000, memory=8 * GI, annotations=keep)], pods)


def test_an_empty_node_goes_after_consolidate_after(tmp_path: Path) -> None:
    # b empties at 30:00 and is consolidatable at 35:00: emptiness chooses it then and deletes
    # it at 35:15, after the validation
    row = _row(_whatif(tmp_path, _two(tmp_path), _karpenter("{consolidateAfter: 5m}")))
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(2 + (35 * 60 + 15) / 3600, abs=1e-6)
    counts = row["node_count"]["nodes"]
    assert counts[35] == 2 and counts[36] == 1
    # with the default (0s) chosen at the 30:00 pass, deleted at 30:15
    again = tmp_path / "default"
    again.mkdir()
    row = _row(_whatif(again, _two(again), None))
    assert row["node_hours"] == pytest.approx(2 + (30 * 60 + 15) / 3600, abs=1e-6)


def test_do_not_disrupt_on_the_node_blocks_it(tmp_path: Path) -> None:
    snap = _two(tmp_path, keep='{"karpenter.sh/do-not-disrupt": "true"}')
    row = _row(_whatif(tmp_path, snap, None))
    assert row["nodes_removed"] == 0 and row["node_hours"] == pytest.approx(4.0)
    held = row["unremovable_reasons_node_hours"]["DoNotDisruptNode"]
    assert held == pytest.approx(2 - 10 / 3600, abs=1e-6)  # from the first pass at 0:10


def test_a_node_is_replaced_only_by_a_strictly_cheaper_shape(tmp_path: Path) -> None:
    # kube-default puts the 3-core pod on the 8-core node (more room left); the empty 4-core node
    # is chosen at 0:10 (emptiness) and deleted at 0:25; the pass right after chooses the 8-core
    # one for a 4-core replacement (cheaper, holds the pod), launched at 0:40 after the
    # validation and Ready at 2:40, when the 8-core node is deleted and its pod evicted
    nodes = [N("big", cpu=8000, memory=32 * GI), N("small")]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, [P("p0", "big", cpu=3000)]), None))
    assert row["nodes_added"] == 1 and row["nodes_removed"] == 2 and row["pods_evicted"] == 1
    assert row["scale_ups"] == 1
    assert row["node_hours"] == pytest.approx((25 + 160 + 7200 - 160) / 3600, abs=1e-6)
    cores = (4 * 25 + 8 * 160 + 4 * (7200 - 160)) / 3600
    assert row["core_hours"] == pytest.approx(cores, abs=1e-5)
    # two nodes of one shape with a 3-core pod each: neither is cheaper, nothing happens
    other = tmp_path / "same"
    other.mkdir()
    pods = [P("q0", "x", cpu=3000), P("q1", "y", cpu=3000)]
    row = _row(_whatif(other, _snapshot(other, [N("x"), N("y")], pods), None))
    assert row["nodes_added"] == 0 and row["nodes_removed"] == 0
    assert row["unremovable_reasons_node_hours"]["NotCheaper"] > 0


def test_pending_pods_get_the_cheapest_fitting_shape_after_the_launch_delay(
    tmp_path: Path,
) -> None:
    pods = [
        P("p0", "big", cpu=7000),
        P("p1", "small", cpu=3000),
        P("burst", "small", cpu=3000, start=30, end=90),
    ]
    nodes = [N("big", cpu=8000, memory=32 * GI), N("small")]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, pods), None))
    assert row["scale_ups"] == 1 and row["nodes_added"] == 1 and row["nodes_removed"] == 1
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(121.0)
    # the 4-core shape (cheaper than the 8-core one): 4 core-hours per node-hour; from 32:01
    # to 90:15, when emptiness's command runs after its validation
    added = (90 * 60 + 15 - (32 * 60 + 1)) / 3600
    assert row["node_hours"] == pytest.approx(4 + added, abs=1e-6)
    assert row["core_hours"] == pytest.approx(8 * 2 + 4 * 2 + 4 * added, abs=1e-5)


def test_figures_are_never_impossible(default_row: dict[str, Any]) -> None:
    row = default_row
    slots = 3 + 3  # the data's nodes and the pool's spare nodes of its one shape
    for key in ("node_hours", "core_hours", "gib_hours", "pending_pod_seconds_scale_up"):
        assert math.isfinite(row[key]) and row[key] >= 0
    assert row["node_hours"] <= slots * 2.0
    assert all(0 <= n <= slots for n in row["node_count"]["nodes"])
    assert sum(row["unremovable_reasons_node_hours"].values()) <= row["node_hours"] + 1e-9


@pytest.mark.parametrize(
    ("fault", "config", "names"),
    [
        ("karpenter-policy-bad", _karpenter("{consolidationPolicy: Sometimes}"),
         "consolidationPolicy"),
        ("karpenter-budget-bad", _karpenter("{budgets: [{nodes: lots}]}"), "nodes"),
        ("karpenter-schedule-bad",
         _karpenter("{budgets: [{nodes: '0', schedule: 'every day', duration: 1h}]}"),
         "schedule"),
        ("karpenter-consolidate-after-bad", _karpenter("{consolidateAfter: soon}"),
         "consolidateAfter"),
        ("karpenter-setting-unknown", "autoscaler:\n  karpenter:\n    weight: 3\n", "weight"),
    ],
)  # fmt: skip
def test_bad_karpenter_settings_are_one_line(
    spread: Path, tmp_path: Path, fault: str, config: str, names: str
) -> None:
    run = _whatif(tmp_path, spread, config)
    # each row id spelled out: the catalogue test looks for documented_exit("<id>") in the tests
    expected = {
        "karpenter-policy-bad": documented_exit("karpenter-policy-bad"),
        "karpenter-budget-bad": documented_exit("karpenter-budget-bad"),
        "karpenter-schedule-bad": documented_exit("karpenter-schedule-bad"),
        "karpenter-consolidate-after-bad": documented_exit("karpenter-consolidate-after-bad"),
        "karpenter-setting-unknown": documented_exit("karpenter-setting-unknown"),
    }[fault]
    assert run.exit_code == expected, run.output
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in run.output


@pytest.mark.browser
def test_the_page_shows_the_karpenter_row_and_the_node_count_chart(
    spread: Path, tmp_path: Path
) -> None:
    require_chromium()
    config = tmp_path / "config.yaml"
    config.write_text("autoscaler: {}\n")
    out = tmp_path / "report"
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "whatif", str(spread), "--out", str(out),
         "--strategy", "kube-default", "--workers", "1", "--autoscaler", "karpenter"],
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
        notes = browser.evaluate("document.querySelector('[data-notes=autoscaler]').textContent")
        reasons, explained = reasons_and_explanation(browser)
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert chart == [True]
    assert [name for name, _, _ in parts] == ["autoscaled", "autoscaled_churn"]
    shown = {}
    for _, heads, rows in parts:
        (row,) = rows
        shown.update(zip((h.rstrip(" ↕") for h in heads), row, strict=True))
    assert shown["Strategy + autoscaler"] == "kube-default + karpenter"
    # the hand-worked figures (first test): 4 h 25 s of nodes, one removed, one evicted
    assert shown["Node-hours"] == "4.0" and shown["Nodes removed"] == "1"
    assert shown["Pods evicted by scale-down or consolidation"] == "1"
    assert answer == (
        "Under karpenter, kube-default would have run 4.0 node-hours, 2.0 fewer than "
        "the 6.0 observed, peaking at 3 nodes: 0 added, 1 removed, 1 pod evicted by consolidation."
    )
    # unpriced: the page says what ranks the shapes
    assert "ranked by capacity" in notes
    # each reason the table shows is explained on the page (this cluster: Disrupting,
    # Consolidatable, NotCheaper)
    assert {"Disrupting", "Consolidatable", "NotCheaper"} <= set(reasons)
    assert all(f"{reason}:" in explained for reason in reasons), (reasons, explained)


def test_none_is_unchanged_by_a_karpenter_section(spread: Path, tmp_path: Path) -> None:
    config = tmp_path / "k.yaml"
    config.write_text(_karpenter("{consolidationPolicy: WhenEmpty}"))
    args = ["whatif", str(spread), "--strategy", "kube-default", "--workers", "1",
            "--format", "json"]  # fmt: skip
    plain = CliRunner().invoke(main, args)
    none = CliRunner().invoke(main, ["--config", str(config), *args, "--autoscaler", "none"])
    assert plain.exit_code == 0 and none.exit_code == 0, none.output
    assert json.loads(plain.output) == json.loads(none.output)
    assert "autoscaled" not in json.loads(none.output)


def test_budget_schedules_are_cron_in_utc() -> None:
    from datetime import UTC, datetime

    from analyzer.autoscaler.cron import active, parse_cron, windows

    def minute(text: str) -> int:
        return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() // 60)

    weekdays = parse_cron("0 9 * * 1-5", "t")
    assert weekdays.fires(minute("2026-11-30T09:00"))  # a Monday
    assert not weekdays.fires(minute("2026-11-29T09:00"))  # a Sunday
    assert not weekdays.fires(minute("2026-11-30T09:01"))
    # day-of-month and day-of-week both restricted: either matches (cron's rule)
    either = parse_cron("0 0 1 * 0", "t")
    assert either.fires(minute("2026-11-29T00:00"))  # a Sunday, not the 1st
    assert either.fires(minute("2026-12-01T00:00"))  # the 1st, a Tuesday
    assert parse_cron("@daily", "t").fires(minute("2026-11-30T00:00"))
    # active in (t - duration, t]: from the trigger for 8 hours
    t0 = minute("2026-11-30T09:00") * 60
    assert active(weekdays, 8 * 3600, t0) and active(weekdays, 8 * 3600, t0 + 8 * 3600 - 1)
    assert not active(weekdays, 8 * 3600, t0 - 1) and not active(weekdays, 8 * 3600, t0 + 8 * 3600)
    assert windows(weekdays, 8 * 3600, t0 - 3600, t0 + 86400) == [(t0, t0 + 8 * 3600)]


def test_no_pod_moves_onto_a_node_within_its_consolidate_after(tmp_path: Path) -> None:
    """v1.14.0 (scheduler.go ``addToExistingNode``, upstream's test "should not consolidate pods
    onto a destination node that is under its consolidateAfter window"): two 4-core nodes with a
    1-core pod each; a third 1-core pod arrives at 20:00 on one of them (X), whose window then
    runs to 50:00. The other (Y) is consolidatable from 30:00, but its pod may move only onto X:
    not before 50:00, when Y is chosen (it has the fewer pods: the higher savings ratio), and
    deleted at 50:15, after the validation."""
    pods = [P("p0", "a", cpu=1000), P("p1", "b", cpu=1000), P("late", "a", cpu=1000, start=20)]
    snap = _snapshot(tmp_path, [N("a"), N("b")], pods)
    row = _row(_whatif(tmp_path, snap, _karpenter("{consolidateAfter: 30m}")))
    assert row["nodes_removed"] == 1 and row["pods_evicted"] == 1
    assert row["node_hours"] == pytest.approx(2 + (50 * 60 + 15) / 3600, abs=1e-6)


def test_a_node_being_replaced_takes_no_new_pod(tmp_path: Path) -> None:
    """Karpenter taints its candidates (karpenter.sh/disruption=disrupting:NoSchedule) before
    the replacement launches (after the command's validation). As in the replacement case
    above, a 4-core node is launched at 0:40 for the 8-core one and Ready at 2:40; a 1-core pod
    arriving at 1:00 finds only the tainted node: it waits for the replacement, 100 s
    (Karpenter counts the node still launching as room for it, so launches nothing more), and
    is not evicted with the 8-core node."""
    nodes = [N("big", cpu=8000, memory=32 * GI), N("small")]
    pods = [P("p0", "big", cpu=3000), P("late", "big", cpu=1000, start=1, end=100)]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, pods), None))
    assert row["nodes_added"] == 1 and row["nodes_removed"] == 2
    assert row["pods_evicted"] == 1  # p0 alone; untainted, "late" would have gone with it
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(160.0 - 60.0)


def test_the_provisioner_schedules_the_pods_of_the_nodes_being_replaced(tmp_path: Path) -> None:
    """Upstream's ``Provisioner.Schedule`` schedules the pods of the nodes being deleted with
    the pending ones (``nodes.Deleting()``'s reschedulable pods; the deleting nodes are no
    destination). As above, the 4-core replacement for the 8-core node launches at 0:40, Ready
    at 2:40; a 2-core pod arrives at 1:00. Largest first, p0 (3 cores, on the node being
    replaced) takes the replacement's room and the 2-core pod gets a node of its own, launched
    at 1:01 (the batch closes 1 s later), Ready at 3:01. At 2:40 the waiting 2-core pod lands on
    the replacement, the 8-core node goes and p0 waits for the second node: 100 s + 21 s of
    waiting (with the pending pod alone in the simulation, the second node would be launched
    only once p0 waits, at 2:41, Ready at 4:41: 100 s + 121 s)."""
    nodes = [N("big", cpu=8000, memory=32 * GI), N("small")]
    pods = [P("p0", "big", cpu=3000), P("late", "big", cpu=2000, start=1, end=100)]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, pods), None))
    assert row["nodes_added"] == 2 and row["scale_ups"] == 2
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(100.0 + 21.0)


def _late(tmp_path: Path, pods: list[P], config: str | None = None) -> dict[str, Any]:
    """Two 4-core nodes a and b with ``pods``, and a 3-core pod arriving at 0:20 (kube-default
    places it on the emptier node): the cluster replayed under Karpenter."""
    late = P("late", None, cpu=3000, start=20 / 60)
    return _row(_whatif(tmp_path, _snapshot(tmp_path, [N("a"), N("b")], [*pods, late]), config))


def test_an_empty_node_taking_a_pod_during_the_validation_stays(tmp_path: Path) -> None:
    """Emptiness chooses the empty node b at the 0:10 pass; the 3-core pod lands on it at 0:20,
    within the 15 s before the command runs (``EmptinessValidator``: the candidate is no longer
    empty), so the command is abandoned and b stays. Consolidation finds nothing then or later:
    neither node's pods fit beside the other's (1.5 + 3 > 4 cores) and there is no cheaper
    shape. Acting at once instead, b would go at 0:10 and the late pod, fitting nowhere, would
    have a node launched for it."""
    row = _late(tmp_path, [P("p0", "a", cpu=1500)])
    assert row["nodes_removed"] == 0 and row["nodes_added"] == 0 and row["scale_ups"] == 0
    assert row["node_hours"] == pytest.approx(4.0)
    assert row["pending_pod_seconds_scale_up"] == 0
    # b was the command's candidate for the 15 s of the validation (0:10 to 0:25)
    held = row["unremovable_reasons_node_hours"]
    assert held["Disrupting"] == pytest.approx(15 / 3600, abs=1e-6)


def test_a_consolidation_whose_pods_no_longer_fit_is_abandoned(tmp_path: Path) -> None:
    """Single-node consolidation chooses a (1 core) at the 0:10 pass: its pod fits beside b's
    (0.5 core). The 3-core pod lands on b at 0:20 (the emptier node), so when the command is
    validated at 0:25 the simulation leaves a's pod over (0.5 + 3 + 1 > 4) with no replacement
    planned (``validateCommand``): abandoned, and nothing consolidates later either."""
    row = _late(tmp_path, [P("p0", "a", cpu=1000), P("p1", "b", cpu=500)])
    assert row["nodes_removed"] == 0 and row["nodes_added"] == 0 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(4.0)
    assert row["unremovable_reasons_node_hours"]["Disrupting"] == pytest.approx(15 / 3600, abs=1e-6)


def test_an_emptiness_command_runs_for_the_candidates_still_empty(tmp_path: Path) -> None:
    """With a budget of 2 nodes, emptiness chooses the empty nodes b and c at the 0:10 pass;
    the 3-core pod lands on one of them at 0:20. The validation drops that one and the command
    runs for the other at 0:25 (``EmptinessValidator`` keeps the candidates still valid)."""
    nodes = [N("a"), N("b"), N("c")]
    pods = [P("p0", "a", cpu=1500), P("late", None, cpu=3000, start=20 / 60)]
    config = _karpenter("{budgets: [{nodes: '2'}]}")
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, pods), config))
    assert row["nodes_removed"] == 1 and row["nodes_added"] == 0 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(2 * 2 + 25 / 3600, abs=1e-6)


def test_spot_nodes_are_not_replaced_by_spot_nodes(tmp_path: Path) -> None:
    """As in the replacement case, an 8-core node with a 3-core pod beside an empty 4-core
    node, both labelled ``karpenter.sh/capacity-type: spot``: the empty node goes (emptiness,
    0:25), but the 8-core node, whose pod fits on no other node, is not replaced by the cheaper
    4-core shape: its pool may launch spot (no requirement excludes it) and spot-to-spot
    consolidation is off by default upstream. Unlabelled (on-demand), the same cluster has it
    replaced (``test_a_node_is_replaced_only_by_a_strictly_cheaper_shape``)."""
    spot = '{"karpenter.sh/capacity-type": "spot"}'
    nodes = [N("big", cpu=8000, memory=32 * GI, labels=spot), N("small", labels=spot)]
    snap = _snapshot(tmp_path, nodes, [P("p0", "big", cpu=3000)])
    row = _row(_whatif(tmp_path, snap, None))
    assert row["nodes_removed"] == 1 and row["nodes_added"] == 0 and row["pods_evicted"] == 0
    assert row["node_hours"] == pytest.approx(2 + 25 / 3600, abs=1e-6)


def test_a_pool_whose_first_launched_node_is_busy_still_launches(tmp_path: Path) -> None:
    """Two full 4-core nodes; P1 (3 cores) pends at 10:00 and gets a new 4-core node (Ready at
    12:01); P2 (2 cores) pends at 15:00 and fits nowhere (1 core left on the new node), so a
    second node is launched at 15:01, Ready at 17:01: 121 s of waiting each. Upstream asks its
    NodeClaim template whether the pool may hold a pod; the replay asked the pool's first slot,
    which by then ran P1 and failed the resource fit, and that answer was kept: P2 waited to
    its end."""
    fill = [P("f1", "n1", cpu=4000), P("f2", "n2", cpu=4000)]
    late = [P("P1", None, cpu=3000, start=10, end=110), P("P2", None, cpu=2000, start=15, end=110)]
    snap = _snapshot(tmp_path, [N("n1"), N("n2")], [*fill, *late])
    row = _row(_whatif(tmp_path, snap, _karpenter("{consolidateAfter: Never}")))
    assert row["scale_ups"] == 2 and row["nodes_added"] == 2
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(2 * 121.0)


def test_a_pod_joins_the_open_node_claim_with_the_fewest_pods(tmp_path: Path) -> None:
    """A full 4-core and a full 8-core node (the pool's two shapes; the 4-core node's pod comes
    a moment later, so the 8-core pod takes the 8-core node); pods of 3, 3, 3 and 2 cores pend
    together from 10:00:01 (created at 10:00; the autoscaled replay takes a pod one second after
    its creation, ``whatif.autoscaled.for_autoscaler``). Largest first: the first two 3-core pods
    share a claim (6 of 8 cores), the third opens a second; the 2-core pod fits both claims and
    joins the one with fewer pods (``Scheduler.add``), so both claims hold 5–6 cores: two 8-core
    nodes, Ready at 12:02 (the batch closes 1 s after the pods, then 120 s) and kept to the end
    (consolidation off). Joining the first claim (8 cores, then a
    4-core node for the lone 3-core pod) would give 12 cores instead of 16."""
    fill = [P("f1", "small", cpu=4000, start=0.1), P("f2", "big", cpu=8000)]
    burst = [P(f"c{i}", None, cpu=3000, start=10, end=100) for i in range(3)]
    burst.append(P("d", None, cpu=2000, start=10, end=100))
    nodes = [N("small"), N("big", cpu=8000, memory=32 * GI)]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, [*fill, *burst]),
                       _karpenter("{consolidateAfter: Never}")))  # fmt: skip
    assert row["nodes_added"] == 2 and row["pending_pod_seconds_scale_up"] == pytest.approx(4 * 121)
    ready = (120 * 60 - (10 * 60 + 1 + 121)) / 3600
    assert row["core_hours"] == pytest.approx(4 * 2 + 8 * 2 + 2 * 8 * ready, abs=1e-4)


def test_equal_weight_pools_are_tried_by_name_descending(tmp_path: Path) -> None:
    """Two pools, a and b, one full 4-core node each; a 1-core pod pends at 10:00 and either
    pool could launch a node for it. Upstream orders NodePools by weight, equal weights by name
    descending (``nodepool.OrderByWeight``): pool b's node is launched."""
    nodes = [N("a1", pool="a"), N("b1", pool="b")]
    pods = [P("fa", "a1", cpu=4000), P("fb", "b1", cpu=4000, start=0.1),
            P("x", None, cpu=1000, start=10, end=100)]  # fmt: skip
    run = _whatif(
        tmp_path, _snapshot(tmp_path, nodes, pods), _karpenter("{consolidateAfter: Never}")
    )
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.output)["autoscaled"]
    assert row["nodes_added"] == 1
    assert row["pools"]["b"]["nodes_added"] == 1 and row["pools"]["a"]["nodes_added"] == 0


def test_a_launching_node_is_room_only_for_pods_its_pool_may_hold(tmp_path: Path) -> None:
    """Pools a and b (nodes labelled pool=a / pool=b), each with one full 4-core node. x
    (nodeSelector pool=a) pends at 10:00 and gets a pool-a node (Ready 12:01); y (nodeSelector
    pool=b) pends at 10:30. The launching pool-a node has room for y but fails its selector
    (upstream checks an in-flight node as an existing one, ``existingnode.go`` ``CanAdd``), so
    pool b launches for y at 10:31, Ready 12:31: 121 s each. Counted onto the pool-a node by its
    resources, y waited for that node's Ready before its own launch."""
    nodes = [N("a1", pool="a", labels=json.dumps({"pool": "a"})),
             N("b1", pool="b", labels=json.dumps({"pool": "b"}))]  # fmt: skip
    pods = [P("fa", "a1", cpu=4000), P("fb", "b1", cpu=4000, start=0.1),
            P("x", None, cpu=1000, start=10, end=100), P("y", None, cpu=1000, start=10.5, end=100)]  # fmt: skip
    snap = build(nodes, pods, minutes=120)
    snap.pods["owner_name"] = "web-5d9f"
    snap.pods["node_selector"] = ["{}", "{}", json.dumps({"pool": "a"}), json.dumps({"pool": "b"})]
    write_snapshot(snap, tmp_path / "snap")
    row = _row(_whatif(tmp_path, tmp_path / "snap", _karpenter("{consolidateAfter: Never}")))
    assert row["pools"]["a"]["nodes_added"] == 1 and row["pools"]["b"]["nodes_added"] == 1
    assert row["pending_pod_seconds_scale_up"] == pytest.approx(2 * 121.0)


def test_the_pods_being_moved_are_counted_on_no_node_while_the_provisioner_solves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's provisioner leaves the pods it schedules out of its topology counts
    (``scheduling/topology.go``, ``excludedPods``): the replaced node's pods are scheduled as if
    gone from it, so no spreading or pod (anti-)affinity counts them where they were. The case
    above: at the 1:01 batch the 8-core node is being replaced and its pod p0 is scheduled with
    the pending one; while the provisioner solves, that node holds no pod in the scheduler's
    state, and it holds p0 again afterwards."""
    from analyzer.replay import karpenter_loop

    seen: list[tuple[list[int], list[int]]] = []
    solve = karpenter_loop.solve

    def spy(state: Any, profile: Any, demands: Any, pods: Any, existing: Any, *rest: Any) -> Any:
        gone = [int(i) for i in np.flatnonzero(state.present & ~existing)]
        seen.append((gone, [int(state.pod_count[i]) for i in gone]))
        return solve(state, profile, demands, pods, existing, *rest)

    monkeypatch.setattr(karpenter_loop, "solve", spy)
    nodes = [N("big", cpu=8000, memory=32 * GI), N("small")]
    pods = [P("p0", "big", cpu=3000), P("late", "big", cpu=2000, start=1, end=100)]
    row = _row(_whatif(tmp_path, _snapshot(tmp_path, nodes, pods), None))
    assert row["nodes_added"] == 2  # (as above: the case ran its course)
    during = [counts for gone, counts in seen if gone]
    assert during, seen  # the batch while "big" was being replaced
    assert all(count == 0 for counts in during for count in counts), during

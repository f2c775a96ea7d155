"""Karpenter's consolidation command (``analyzer.autoscaler.karpenter.decide``), the candidates'
order and their costs, on hand-made candidates: the facts of kubernetes-sigs/karpenter v1.14
``pkg/controllers/disruption`` (``types.go``, ``consolidation.go``, ``emptiness.go``,
``multinodeconsolidation.go``, ``singlenodeconsolidation.go``; ``pkg/utils/disruption``
``EvictionCost``; ``pkg/utils/pod`` ``IsDoNotDisruptActive``).

``leftover`` stands for the scheduling simulation: the requests of the candidates' pods that fit
on no node that stays (here: given per candidate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from analyzer.autoscaler.karpenter import (
    Candidate,
    decide,
    do_not_disrupt_until,
    go_duration,
    pod_eviction_cost,
    reschedule_cost,
    savings_order,
)
from analyzer.autoscaler.nodepool import Shape

CPU = 1000


def _shape(name: str, cores: int, price: float) -> Shape:
    return Shape(name, {"cpu": cores * CPU, "memory": cores * 2**32, "pods": 110}, price)


# t3a-like: each size doubles cpu and price
NANO, SMALL = _shape("nano", 1, 0.005), _shape("small", 2, 0.02)
XLARGE, XXLARGE = _shape("xlarge", 4, 0.15), _shape("2xlarge", 8, 0.3)


def _candidate(name: str, shape: Shape, pods: int = 1, pool: str = "p") -> Candidate:
    costs = [1.0] * pods
    return Candidate(name, pool, sum(costs), False, shape.price, shape.name, reschedule_cost(costs))


def _run(
    ordered: Sequence[Candidate],
    left: Mapping[str, list[Mapping[str, int]]],
    shapes: Sequence[Shape],
    budget: int | Mapping[str, int] = 100,
) -> tuple[str, list[str], str | None]:
    def allowed(pool: str, _reason: str) -> int:
        return budget if isinstance(budget, int) else budget.get(pool, 0)

    def leftover(names: list[str]) -> list[Mapping[str, int]]:
        return [r for n in names for r in left.get(n, [])]

    decision = decide(ordered, allowed, "WhenEmptyOrUnderutilized", lambda _c: shapes, leftover)
    replacement = None if decision.replacement is None else decision.replacement.name
    return decision.kind, decision.nodes, replacement


def test_eviction_cost_reads_pod_deletion_cost_only() -> None:
    """``EvictionCost`` reads ``controller.kubernetes.io/pod-deletion-cost`` (/ 2^27) and the
    priority (/ 2^25); there is no ``karpenter.sh/disruption-cost`` annotation upstream."""
    assert pod_eviction_cost({"karpenter.sh/disruption-cost": str(2**27)}, None) == 1.0
    assert pod_eviction_cost({"controller.kubernetes.io/pod-deletion-cost": str(2**27)}, None) == 2
    assert pod_eviction_cost({}, 2**25) == 2.0
    assert pod_eviction_cost({}, -(2**31)) == -10.0  # clamped


def test_candidates_go_by_savings_ratio_highest_first() -> None:
    """v1.14.0 ``sortCandidates``: price / (1 + Σ max(0, EvictionCost)), highest first; upstream's
    case: two nodes of one price, the one with fewer pods sorts first."""
    two = _candidate("two-pods", SMALL, pods=2)
    one = _candidate("one-pod", SMALL, pods=1)
    assert [c.name for c in savings_order([two, one])] == ["one-pod", "two-pods"]
    # a dearer node with more pods can come first: 0.3 / 4 > 0.02 / 2
    big = _candidate("big", XXLARGE, pods=3)
    assert [c.name for c in savings_order([one, big])] == ["big", "one-pod"]
    # negative eviction costs count as 0, not below
    assert reschedule_cost([-5.0, 1.0]) == 2.0


def test_empty_candidates_are_left_to_emptiness_and_its_budget() -> None:
    """``consolidation.ShouldDisrupt`` refuses empty nodes: with the Empty budget at 0 an empty
    node is not deleted by single-node consolidation (Underutilized budget open)."""
    empty = Candidate("idle", "p", 0.0, True, SMALL.price, SMALL.name, 1.0)

    def allowed(_pool: str, reason: str) -> int:
        return 0 if reason == "Empty" else 5

    decision = decide([empty], allowed, "WhenEmptyOrUnderutilized", lambda _c: [SMALL], list)
    assert decision.kind == "none" and decision.blocked == ["idle"]


def test_single_node_tries_past_the_budget_count() -> None:
    """``SingleNodeConsolidation.ComputeCommands`` skips a candidate only when its pool's budget
    is 0, without counting down: with a budget of 1 the second candidate is tried when the first
    cannot go."""
    stuck = _candidate("stuck", SMALL)
    free = _candidate("free", SMALL)
    left = {"stuck": [{"cpu": 3 * CPU}]}  # fits nowhere, and no cheaper shape holds it
    assert _run([stuck, free], left, [SMALL], budget=1) == ("single", ["free"], None)
    # a pool at 0 is skipped, the other pool's candidate goes
    other = _candidate("other", SMALL, pool="q")
    assert _run([free, other], {}, [SMALL], budget={"p": 0, "q": 1}) == (
        "single",
        ["other"],
        None,
    )


def test_same_instance_type_caps_the_replacement_only_among_its_options() -> None:
    """``filterOutSameInstanceType``, upstream's examples: [small, 2xlarge, 2xlarge] → options
    small, xlarge, 2xlarge: small is in both lists, so nothing as dear as a small may replace
    them (no multi-node command; single-node then replaces one 2xlarge by a small); with nano
    among the options, nano replaces the three."""
    group = [_candidate("c", SMALL), _candidate("a", XXLARGE), _candidate("b", XXLARGE)]
    left = {"c": [{"cpu": CPU // 4}], "a": [{"cpu": CPU}], "b": [{"cpu": CPU // 2}]}
    assert _run(group, left, [SMALL, XLARGE, XXLARGE]) == ("single", ["a"], "small")
    light = {"c": [{"cpu": CPU // 10}], "a": [{"cpu": CPU // 4}], "b": [{"cpu": CPU // 4}]}
    assert _run(group, light, [NANO, SMALL, XLARGE, XXLARGE]) == (
        "multi",
        ["c", "a", "b"],
        "nano",
    )


def test_a_candidate_type_no_option_has_does_not_cap_the_replacement() -> None:
    """The cap is the cheapest candidate of a type among the replacement's options: when the
    pods need 3 cores, small (2) is no option, so only 2xlarge's price caps: xlarge replaces
    [2xlarge, 2xlarge, small] (0.15 < 0.3)."""
    group = [_candidate("a", XXLARGE), _candidate("b", XXLARGE), _candidate("c", SMALL)]
    left = {"a": [{"cpu": 2 * CPU}], "b": [{"cpu": CPU}]}
    assert _run(group, left, [SMALL, XLARGE, XXLARGE]) == ("multi", ["a", "b", "c"], "xlarge")


def test_multi_node_takes_up_to_101_candidates() -> None:
    """``firstNConsolidationOption`` with ``maxParallel`` 100: the prefixes tried are
    ``candidates[0 : mid + 1]`` with mid up to 100, so 101 nodes when every prefix works."""
    many = [_candidate(f"n{i:03d}", SMALL) for i in range(150)]
    kind, nodes, _ = _run(many, {}, [SMALL], budget=150)
    assert kind == "multi" and nodes == [c.name for c in many[:101]]
    few = many[:60]
    assert _run(few, {}, [SMALL])[1] == [c.name for c in few]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h", 3600.0), ("1h30m", 5400.0), ("1.5s", 1.5), (".5m", 30.0), ("300ms", 0.3),
     ("-1h", -3600.0), ("0", 0.0), ("1d", None), ("true", None), ("", None), ("5", None)],
)  # fmt: skip
def test_go_durations(text: str, seconds: float | None) -> None:
    assert go_duration(text) == seconds


def test_do_not_disrupt_duration_blocks_while_the_pod_is_younger() -> None:
    """``IsDoNotDisruptActive``: "true" for ever; a positive duration from the pod's start
    (no start: for ever); anything else is ignored."""
    assert do_not_disrupt_until("true", 100.0) == float("inf")
    assert do_not_disrupt_until("1h", 100.0) == 3700.0
    assert do_not_disrupt_until("1h", None) == float("inf")
    assert do_not_disrupt_until("0s", 100.0) is None
    assert do_not_disrupt_until("false", 100.0) is None
    assert do_not_disrupt_until(None, 100.0) is None

"""Capacity released (issue 24 item 4): the integral by hand, a pool-mix shift that must not win,
and the money of a priced run through the real CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from capacity_checks import capacity_problems, split_pool_mix
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.whatif.compare import WhatIfResult, WhatIfSettings, run_whatif
from analyzer.whatif.search_rule import SearchRow, recommend

H = 1 / 60  # one grid step of the fixtures (1 min) in hours


def three_sizes() -> Snapshot:
    """Three nodes of different sizes with known active intervals (observed placement).

    small (2 cores, 8 GiB): pod a from minute 10 to 40 → active at grid points 10..39 (30);
    big (8 cores, 32 GiB): b 0..30 and c 20..50 overlap → one run, points 0..49 (50);
    mid (4 cores, 16 GiB): a DaemonSet pod all window (never makes a node active) and d from
    minute 55 to the end → points 55..60 (6: a pod still running holds the last point too).
    """
    nodes = [
        N("small", cpu=2000, memory=8 * GI),
        N("big", cpu=8000, memory=32 * GI),
        N("mid", cpu=4000, memory=16 * GI),
    ]
    pods = [
        P("a", "small", cpu=500, start=10, end=40),
        P("b", "big", cpu=500, start=0, end=30),
        P("c", "big", cpu=500, start=20, end=50),
        P("ds", "mid", cpu=100, start=0, owner="DaemonSet"),
        P("d", "mid", cpu=500, start=55),
    ]
    return build(nodes, pods, minutes=60)


def test_capacity_integral_by_hand() -> None:
    result = run_whatif(three_sizes(), WhatIfSettings(strategies=("most-allocated",), workers=1))
    observed = result.strategies[0].outcomes[0]
    core = 2 * 30 * H + 8 * 50 * H + 4 * 6 * H  # 1 + 6.667 + 0.4
    gib = 8 * 30 * H + 32 * 50 * H + 16 * 6 * H  # 4 + 26.667 + 1.6
    assert observed.capacity.core_hours == pytest.approx(core)
    assert observed.capacity.gib_hours == pytest.approx(gib)
    assert observed.capacity.cost is None  # no --prices
    # observed releases nothing against itself
    assert observed.released_figures()["core_hours_released"] == 0.0
    assert capacity_problems(result.to_dict()) == []


def pool_mix_cluster() -> Snapshot:
    """Five small nodes (4 cores, 16 GiB) and one big (12 cores, 50 GiB), idle in reality.

    Observed: three 3-core/12-GiB pods (minute 1) and two 1-core/4-GiB pods (minutes 4, 5),
    one per small node: 5 active nodes, 20 cores, 80 GiB. kube-default (LeastAllocated) sends
    the three big pods to the big node (it stays the least allocated: its free share after the
    third, 3/12 cores and 14/50 GiB, beats a small node's 1/4 and 4/16) and the small pods to
    empty small nodes: 3 nodes, but 12 + 2 × 4 = 20 cores, 50 + 32 = 82 GiB: no capacity freed,
    a pool-mix shift. most-allocated fills small nodes (3 + 1 cores each): 3 nodes, 12 cores.
    """
    nodes = [N(f"s{i}", cpu=4000, memory=16 * GI) for i in range(5)]
    nodes.append(N("big", cpu=12000, memory=50 * GI))
    pods = [P(f"p{i}", f"s{i}", cpu=3000, memory=12 * GI, start=1) for i in range(3)]
    pods += [P(f"q{i}", f"s{i + 3}", cpu=1000, memory=4 * GI, start=i + 4) for i in range(2)]
    return build(nodes, pods, minutes=60)


@pytest.fixture(scope="module")
def shifted() -> WhatIfResult:
    settings = WhatIfSettings(strategies=("kube-default", "most-allocated"), workers=1)
    return run_whatif(pool_mix_cluster(), settings)


def _strategy(result: WhatIfResult, name: str) -> Any:
    return next(c for c in result.strategies if c.name == name)


def test_pool_mix_shift_is_named_and_does_not_win(shifted: WhatIfResult) -> None:
    kube, most = _strategy(shifted, "kube-default"), _strategy(shifted, "most-allocated")
    observed = shifted.strategies[0]
    assert observed.worst("active_nodes_peak") == 5
    assert kube.worst("active_nodes_peak") == 3  # 40 % fewer nodes at peak ...
    assert kube.worst("core_hours_released") == pytest.approx(0.0, abs=1e-9)  # ... no core freed
    assert kube.worst("gib_hours_released") < 0  # the big node has 2 GiB more than two smalls
    assert most.worst("active_nodes_peak") == 3
    # most-allocated frees two small nodes from minute 4 and 5 on: 2 × 4 cores over 57 + 56 points
    assert most.worst("core_hours_released") == pytest.approx(4 * (57 + 56) * H)
    assert shifted.pool_mix == ["kube-default"]
    assert shifted.best == "most-allocated"
    main_sentence, shifts = split_pool_mix(shifted.recommendation)
    assert main_sentence.startswith("most-allocated would have released the most capacity")
    assert shifts == [("kube-default", 2, "releases only", 0.0)]
    assert capacity_problems(shifted.to_dict()) == []


def test_pool_mix_shift_alone_is_no_recommendation() -> None:
    # the old rule (fewest peak nodes) recommended kube-default here: 3 nodes instead of 5
    result = run_whatif(pool_mix_cluster(), WhatIfSettings(strategies=("kube-default",), workers=1))
    assert result.best is None
    assert result.recommendation.startswith("No strategy would have released capacity")
    assert "kube-default peaks at 2 fewer nodes, but releases only 0.0 % of core-hours" in (
        result.recommendation
    )


def test_priced_whatif_through_the_cli(tmp_path: Path) -> None:
    snap = write_snapshot(pool_mix_cluster(), tmp_path / "snap")
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\npools:\n  pool: {core_hour: 0.04, gib_hour: 0.005}\n")
    args = ["whatif", str(snap), "--strategy", "most-allocated", "--strategy", "kube-default"]
    run = CliRunner().invoke(
        main, [*args, "--prices", str(prices), "--format", "json", "--workers", "1"]
    )
    assert run.exit_code == 0, run.output
    data = json.loads(run.output)
    assert data["prices"] == {"currency": "EUR", "source": str(prices), "unpriced_pools": []}
    rows = {s["name"]: s["worst_seed"] for s in data["strategies"]}
    for name, row in rows.items():
        money = 0.04 * row["core_hours_released"] + 0.005 * row["gib_hours_released"]
        assert row["cost_released"] == pytest.approx(money), name
        assert row["active_cost"] == pytest.approx(
            0.04 * row["active_core_hours"] + 0.005 * row["active_gib_hours"]
        )
    assert rows["observed"]["active_cost"] == pytest.approx(
        0.04 * (4 * (3 * 60 + 57 + 56) * H) + 0.005 * (16 * (3 * 60 + 57 + 56) * H)
    )
    assert data["best"] == "most-allocated"
    assert f"worth {rows['most-allocated']['cost_released']:,.2f} EUR" in data["recommendation"]
    assert capacity_problems(data) == []
    # the same file with a pool the data lacks and no default: the pool is unpriced, no money
    prices.write_text("currency: EUR\npools:\n  other: {node_hour: 1.0}\n")
    run = CliRunner().invoke(
        main, [*args, "--prices", str(prices), "--format", "json", "--workers", "1"]
    )
    data = json.loads(run.output)
    assert data["prices"]["unpriced_pools"] == ["pool"]
    assert all("cost_released" not in s["worst_seed"] for s in data["strategies"])


def test_a_bad_prices_file_is_one_line(tmp_path: Path) -> None:
    snap = write_snapshot(pool_mix_cluster(), tmp_path / "snap")
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\npools:\n  pool: {node_hour: -1}\n")
    run = CliRunner().invoke(
        main, ["whatif", str(snap), "--strategy", "kube-default", "--prices", str(prices)]
    )
    assert run.exit_code == documented_exit("monthly-prices-invalid")  # the same file, one reader
    assert "pools.pool.node_hour: -1 is negative" in run.output
    assert "Traceback" not in run.output


def _row(name: str, peak: float, core_pct: float, cost: float | None = None) -> SearchRow:
    """A search row with no violations, waits or unplaced pods and ``core_pct`` of both
    core-hours and GiB-hours released."""
    return SearchRow(
        name, "searched", {}, peak, peak, 0, 0, 0, 0.0, {},
        core_hours_released=core_pct, gib_hours_released=core_pct,
        core_hours_released_pct=core_pct, gib_hours_released_pct=core_pct, cost_released=cost,
    )  # fmt: skip


def test_search_ranks_by_capacity_then_money() -> None:
    observed = _row("observed", 100, 0.0, 0.0)
    rows = [
        _row("shift", 90, 0.5, 1.0),  # 10 % fewer nodes, 0.5 % released: a pool-mix shift
        _row("packs", 97, 6.0, 40.0),
        _row("frees-more", 98, 8.0, 30.0),
    ]
    best, sentence = recommend(observed, [*rows[:1], *rows[1:]])
    assert best is not None and best.name == "packs"  # priced: the most money released
    assert rows[0].pool_mix and not rows[0].recommended
    assert "shift peaks at 10 fewer nodes, but releases only 0.5 % of core-hours" in sentence
    unpriced = [_row(r.name, r.peak_nodes, r.core_hours_released_pct) for r in rows]
    best, _ = recommend(_row("observed", 100, 0.0), unpriced)
    assert best is not None and best.name == "frees-more"  # unpriced: the largest share
    assert math.isclose(best.released, 8.0)


def test_a_share_that_rounds_to_zero_has_no_minus_sign() -> None:
    # the demo's monthly headline read "right-size only -29 core-hours (-0.0 %)"
    from analyzer.report.format import number
    from analyzer.whatif.capacity import pct_text

    assert pct_text(-0.004) == "0.0 %" and pct_text(-0.06) == "-0.1 %"
    assert (
        number(-0.04, 1) == "0.0"
        and number(-0.06, 1) == "-0.1"
        and number(-1234.5, 1) == "-1,234.5"
    )

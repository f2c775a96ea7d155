"""The report's charts of counts (nodes, pods, violations) label whole numbers only on their
value axis: "8.5 nodes" is no count a platform engineer can read."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

import analyzer.report.search_chart as search_chart
import analyzer.report.whatif as whatif_report
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.search import SearchResult
from analyzer.whatif.search_grid import SearchGrid
from analyzer.whatif.search_rule import SearchRow


def _yticks(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, draw: Callable[[], Any]
) -> list[float]:
    """The y-axis ticks (inside the plotted range) of the figure ``draw`` makes, caught as
    ``module`` encodes it."""
    drawn: dict[str, Any] = {}
    encode = module.encode_png

    def keep(fig: Any) -> str:
        drawn["fig"] = fig
        return str(encode(fig))

    monkeypatch.setattr(module, "encode_png", keep)
    draw()
    ax = drawn["fig"].axes[0]
    low, high = ax.get_ylim()
    return [t for t in ax.get_yticks() if low <= t <= high]


def _lines(values: list[float], *, counts: bool) -> Callable[[], Any]:
    times = pd.date_range("2026-11-01", periods=len(values), freq="10min", tz="UTC")
    return lambda: whatif_report.time_lines(
        {"observed": (times, values)}, title="Nodes over time", ylabel="nodes", counts=counts
    )


def test_a_count_chart_ticks_whole_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # the autoscaled row's node count between 8 and 11 (the chart that showed 8.5, 9.5 ...)
    values = [8.0, 9.0, 8.0, 10.0, 11.0, 9.0, 8.0, 9.0]
    ticks = _yticks(monkeypatch, whatif_report, _lines(values, counts=True))
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks
    # the same data without ``counts`` (a share or a mean) keeps matplotlib's half steps: the
    # check above is not met by chance
    plain = _yticks(monkeypatch, whatif_report, _lines(values, counts=False))
    assert not all(float(t).is_integer() for t in plain)


def _row(name: str, released: float, violations: float, **flags: bool) -> SearchRow:
    return SearchRow(name, "searched", {}, 10, 10, violations, 0, 0, 0.0, {},
                     core_hours_released=released, gib_hours_released=released,
                     core_hours_released_pct=released, gib_hours_released_pct=released,
                     **flags)  # fmt: skip


def test_the_search_front_ticks_whole_violations(monkeypatch: pytest.MonkeyPatch) -> None:
    # threshold violations of 14-17 across the configurations (the demo's search has 14 and 18)
    rows = [_row("observed", 0, 15), _row("a", 30, 14, on_front=True), _row("b", 10, 17),
            _row("c", 45, 16, recommended=True)]  # fmt: skip
    result = SearchResult(
        source="s", start="", end="", grid=SearchGrid(), seeds=1, thresholds=ThresholdConfig(),
        rows=rows, recommended="c", sentence="",
    )  # fmt: skip
    ticks = _yticks(monkeypatch, search_chart, lambda: search_chart.front_chart(result))
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks

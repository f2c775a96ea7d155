"""The what-if page's charts of counts (nodes, pods) label whole numbers only on their value axis:
"8.5 nodes" is no count a platform engineer can read."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import analyzer.report.whatif as whatif_report


def _yticks(monkeypatch: pytest.MonkeyPatch, values: list[float], *, counts: bool) -> list[float]:
    """The y-axis ticks ``time_lines`` draws for one line of ``values`` (inside the plotted
    range)."""
    drawn: dict[str, Any] = {}
    encode = whatif_report.encode_png

    def keep(fig: Any) -> str:
        drawn["fig"] = fig
        return str(encode(fig))

    monkeypatch.setattr(whatif_report, "encode_png", keep)
    times = pd.date_range("2026-11-01", periods=len(values), freq="10min", tz="UTC")
    whatif_report.time_lines(
        {"observed": (times, values)}, title="Nodes over time", ylabel="nodes", counts=counts
    )
    ax = drawn["fig"].axes[0]
    low, high = ax.get_ylim()
    return [t for t in ax.get_yticks() if low <= t <= high]


def test_a_count_chart_ticks_whole_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    # the autoscaled row's node count between 8 and 11 (the chart that showed 8.5, 9.5 ...)
    values = [8.0, 9.0, 8.0, 10.0, 11.0, 9.0, 8.0, 9.0]
    ticks = _yticks(monkeypatch, values, counts=True)
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks
    # the same data without ``counts`` (a share or a mean) keeps matplotlib's half steps: the
    # check above is not met by chance
    assert not all(float(t).is_integer() for t in _yticks(monkeypatch, values, counts=False))


def test_the_search_front_ticks_whole_violations(monkeypatch: pytest.MonkeyPatch) -> None:
    # threshold violations of 14-17 across the configurations (the demo's search has 14 and 18)
    import analyzer.report.search_chart as search_chart
    from analyzer.usage.thresholds import ThresholdConfig
    from analyzer.whatif.search import SearchResult
    from analyzer.whatif.search_grid import SearchGrid
    from analyzer.whatif.search_rule import SearchRow

    def row(name: str, released: float, violations: float, **flags: bool) -> SearchRow:
        return SearchRow(name, "searched", {}, 10, 10, violations, 0, 0, 0.0, {},
                         core_hours_released=released, gib_hours_released=released,
                         core_hours_released_pct=released, gib_hours_released_pct=released,
                         **flags)  # fmt: skip

    drawn: dict[str, Any] = {}
    encode = search_chart.encode_png

    def keep(fig: Any) -> str:
        drawn["fig"] = fig
        return str(encode(fig))

    monkeypatch.setattr(search_chart, "encode_png", keep)
    rows = [row("observed", 0, 15), row("a", 30, 14, on_front=True), row("b", 10, 17),
            row("c", 45, 16, recommended=True)]  # fmt: skip
    search_chart.front_chart(SearchResult(
        source="s", start="", end="", grid=SearchGrid(), seeds=1, thresholds=ThresholdConfig(),
        rows=rows, recommended="c", sentence="",
    ))  # fmt: skip
    ax = drawn["fig"].axes[0]
    low, high = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if low <= t <= high]
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks

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

"""The search page's chart: capacity released vs threshold violations, one point per
configuration, the Pareto front and the recommendation marked (a PNG data URI).

Its margins are fixed and sized from its labels (``chart_layout``), not matplotlib's
constrained layout, which measures every artist twice before drawing.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from analyzer.report.chart_layout import (
    EDGE,
    LINE,
    TICK,
    Margins,
    figure_title,
    fitted_size,
    legend_width,
    peak_ticks_width,
    place_axes,
)
from analyzer.report.charts import STYLE, Chart, encode_png
from analyzer.whatif.search import SearchResult


def priced_currency(result: SearchResult) -> str | None:
    """The currency when every row has a money figure (``--prices`` priced every pool)."""
    priced = all(r.cost_released is not None for r in result.rows)
    return result.prices["currency"] if result.prices and priced else None


_FRONT_LEGEND = ["configuration", "Pareto front", "observed", "recommended"]
_FRONT_TITLE = "Capacity released vs violations (more released, fewer violations: better)"


def _front_xlabel(result: SearchResult) -> str:
    currency = priced_currency(result)
    under = "" if result.autoscaler == "none" else f" under {result.autoscaler}"
    if currency:
        return f"money released{under}, {currency}"
    return f"capacity released{under}, % of observed (mean of core-hours and GiB-hours)"


def _front_rect(fig: Figure, result: SearchResult) -> tuple[float, float, float, float]:
    """The front chart's plot area: fixed margins sized from its labels (``chart_layout``),
    not constrained layout; the title across the figure, the legend to the right."""
    size = float(STYLE["font.size"])
    top = figure_title(fig, _FRONT_TITLE, float(STYLE["axes.titlesize"]))
    rows = [*result.rows, result.observed]
    peak = max((abs(v) for r in rows for v in (r.violations,) if v == v), default=0.0)
    left = EDGE + size * LINE + 4 + peak_ticks_width(peak * 1.05, size) + TICK
    right = EDGE + 0.02 * 300 + legend_width(_FRONT_LEGEND, 9)  # anchored 2 % of the axes out
    bottom = EDGE + 2 * size * LINE + TICK + 4
    return place_axes(fig, Margins(left, right, bottom, top))


def _front_xlabel_size(fig: Figure, ax: Any, result: SearchResult) -> float:
    """The x label's font size: shrunk so that the label, centred under the plot, stays
    inside the figure (the longest names an autoscaler)."""
    width = float(fig.get_size_inches()[0]) * 72.0
    x0, _, w, _ = ax.get_position().bounds
    centre = (x0 + w / 2) * width
    room = 2 * min(centre, width - centre) - 2 * EDGE
    return fitted_size(_front_xlabel(result), float(STYLE["font.size"]), room)


def front_chart(result: SearchResult) -> Chart:
    """Capacity released vs violations: one point per configuration, front and recommendation
    marked (money released when priced, else the mean of the core-hour and GiB-hour shares)."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.6))
        ax = fig.add_axes(_front_rect(fig, result))
        # under an autoscaler the rows it replayed (Karpenter: the finalists), on one scale
        rows = [r for r in result.rows[1:] if result.autoscaler == "none" or r.autoscaled]
        other = [r for r in rows if not r.on_front]
        front = sorted((r for r in rows if r.on_front), key=lambda r: r.released)
        ax.scatter(
            [r.released for r in other],
            [r.violations for r in other],
            s=22,
            color="#9aa5b1",
            label="configuration",
        )
        ax.scatter(
            [r.released for r in front],
            [r.violations for r in front],
            s=34,
            color="#00798c",
            marker="D",
            label="Pareto front",
        )
        observed = result.observed
        ax.scatter(
            [observed.released],
            [observed.violations],
            s=60,
            color="#d1495b",
            marker="x",
            label="observed",
        )
        best = result.best()
        if best is not None:
            ax.scatter(
                [best.released],
                [best.violations],
                s=140,
                facecolors="none",
                edgecolors="#2e7d32",
                linewidths=2,
                label="recommended",
            )
        ax.set_xlabel(_front_xlabel(result), fontsize=_front_xlabel_size(fig, ax, result))
        ax.set_ylabel("threshold violations")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: whole ticks
        # beside the plot, never over a point
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        alt = (
            f"Capacity released vs violations for {len(rows)} configurations; observed "
            f"releases 0 by definition and has {observed.violations:.0f} violations"
        )
        return Chart(title="Capacity released vs violations", alt=alt, data_uri=encode_png(fig))

"""Charts of the monthly review: per pool, the daily history, the forecast with its 80 % and 95 %
bands, the capacity lines and the level shifts found, CPU and memory side by side (PNG data URIs,
like every page)."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyzer.monthly.forecast import Forecast
from analyzer.monthly.series import SERIES
from analyzer.report.chart_layout import (
    EDGE,
    LINE,
    TICK,
    Margins,
    fitted_size,
    peak_ticks_width,
    place_axes,
    rotated_height,
    text_width,
)
from analyzer.report.charts import (
    READABLE,
    RESOURCE_COLORS,
    TITLE_LIMIT,
    Chart,
    encode_png,
    short_label,
)

_USED_COLOR = "#30638e"
_REQUESTED_COLOR = RESOURCE_COLORS["cpu"]


def _peak(rows: pd.DataFrame, forecasts: dict[str, Forecast]) -> float:
    """The largest value either panel's axis may reach: the history's and the bands' tops."""
    values = rows.select_dtypes("number").to_numpy(float).ravel().tolist()
    values += [p.hi95 for f in forecasts.values() for p in f.points]
    return max((abs(v) for v in values if np.isfinite(v)), default=0.0)


def _panel_rects(fig: Figure, peak: float) -> list[tuple[float, float, float, float]]:
    """The two panels' plot areas: each with room on its left for its value ticks and unit,
    the rotated dates below, the panel's title above (``fit_labels`` shortens a long one)."""
    size = float(READABLE["ytick.labelsize"])
    side = float(READABLE["axes.labelsize"]) * LINE + 4 + peak_ticks_width(peak * 1.1, size) + TICK
    half_tick = text_width(["2026-11-07"], 8) * 0.87 / 2
    bottom = EDGE + rotated_height(["2026-11-07"], 8, 30) + TICK
    top = EDGE + float(READABLE["axes.titlesize"]) * LINE + 6.0
    width = float(fig.get_size_inches()[0]) * 72.0
    half = Margins(EDGE + side, EDGE + half_tick, bottom, top)
    # each panel a half-width figure of its own, so both get the same margins
    left, low, w, h = place_axes(Figure(figsize=(width / 144.0, fig.get_size_inches()[1])), half)
    return [(left / 2, low, w / 2, h), (0.5 + left / 2, low, w / 2, h)]


def forecast_chart(
    pool: str, rows: pd.DataFrame, forecasts: dict[str, Forecast], thresholds: dict[str, int]
) -> Chart:
    """Two panels (CPU cores, memory GiB) for one pool."""
    with mpl.rc_context(READABLE):
        # Fixed margins sized from the labels (chart_layout): constrained layout measured every
        # tick label and cost more than drawing
        fig = Figure(figsize=(11.0, 3.6))
        # Any: matplotlib's stubs refuse the datetime64 x values drawn below (axvline)
        axes: list[Any] = [fig.add_axes(rect) for rect in _panel_rects(fig, _peak(rows, forecasts))]
        days = pd.to_datetime(rows["day"]).to_numpy()
        for ax, resource, unit in zip(axes, ("cpu", "memory"), ("cores", "GiB"), strict=True):
            for spec in (s for s in SERIES if s.resource == resource):
                color = _REQUESTED_COLOR if spec.kind == "requested" else _USED_COLOR
                label = "requested (daily peak)" if spec.kind == "requested" else "used (daily p95)"
                ax.plot(days, rows[spec.column].to_numpy(float), color=color, lw=1.3, label=label)
                f = forecasts[spec.name]
                for n, shift in enumerate(f.level_shifts):  # where the fitted history starts
                    ax.axvline(np.datetime64(shift.day), color=color, lw=1.0, ls="-.", alpha=0.7,
                               label=f"level shift ({spec.kind})" if n == 0 else None)  # fmt: skip
                if f.points:
                    x = np.array([np.datetime64(p.day) for p in f.points])
                    ax.fill_between(x, [p.lo95 for p in f.points], [p.hi95 for p in f.points],
                                    color=color, alpha=0.12, lw=0)  # fmt: skip
                    ax.fill_between(x, [p.lo80 for p in f.points], [p.hi80 for p in f.points],
                                    color=color, alpha=0.22, lw=0)  # fmt: skip
                    ax.plot(x, [p.mean for p in f.points], color=color, lw=1.2, ls="--")
                    last = rows.iloc[-1]
                    alloc = float(last[f"allocatable_{resource}"])
                    if spec.kind == "requested":
                        cap = alloc - float(last[f"largest_{resource}"])
                        name = "allocatable − largest node (N+1)"
                    else:
                        cap = alloc * thresholds[resource] / 100.0
                        name = f"{thresholds[resource]} % of allocatable"
                    ax.plot(x, np.full(len(x), cap), color=color, lw=1.0, ls=":", label=name)
            # a long pool name: shortened (as fit_labels would) and its font shrunk to the panel
            title = short_label(f"{pool}: {'CPU' if resource == 'cpu' else 'memory'}", TITLE_LIMIT)
            room = ax.get_position().width * float(fig.get_size_inches()[0]) * 72.0
            ax.set_title(
                title, fontsize=fitted_size(title, float(READABLE["axes.titlesize"]), room)
            )
            ax.set_ylabel(unit)
            ax.set_ylim(bottom=0)
            ax.tick_params(axis="x", labelrotation=30, labelsize=8)
            ax.legend(fontsize=8, loc="upper left")
        return Chart(
            title=f"{pool}: history and forecast",
            alt=f"{pool}: daily requested peak and used p95 with the forecast's 80 % and 95 % "
            "bands (dashed: mean forecast; dotted: the capacity lines; dash-dot: level shifts "
            "found, the forecast fitted after the last)",
            data_uri=encode_png(fig),
        )

"""Fixed chart margins sized from the labels' own widths, instead of matplotlib's constrained layout.

Constrained layout measures every artist of a figure twice (two passes of ``get_tightbbox``)
before drawing it: a third of a nightly chart's CPU. The nightly charts know every label they
draw before drawing (tick labels, legend entries, the title), so their margins are computed once
from those strings' widths, measured with the Agg renderer's font metrics (no drawing), in points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties

EDGE = 6.0  # points of blank paper around everything
TICK = 8.0  # a tick (3.5) and its label's pad (3.5), plus a point of slack
LINE = 1.25  # a text line's height, in font sizes


def text_width(texts: Iterable[str], size: float) -> float:
    """The widest of ``texts`` at font ``size`` (points), as the Agg renderer would draw it."""
    # 72 dpi: one pixel is one point (matplotlib's renderer is untyped)
    renderer: Any = RendererAgg(1, 1, 72)  # type: ignore[no-untyped-call]
    prop = FontProperties(size=size)
    widths = [renderer.get_text_width_height_descent(t, prop, ismath=False)[0] for t in texts]
    return float(max(widths, default=0.0))


def rotated_height(texts: Iterable[str], size: float, degrees: float) -> float:
    """The height (points) of the tallest of ``texts`` drawn at ``degrees``."""
    angle = math.radians(degrees)
    return text_width(texts, size) * math.sin(angle) + size * LINE * math.cos(angle)


@dataclass(frozen=True)
class Margins:
    """Space around the plot area, in points."""

    left: float
    right: float
    bottom: float
    top: float


def place_axes(fig: Figure, margins: Margins) -> tuple[float, float, float, float]:
    """The plot area's rectangle (figure fractions) inside ``margins``; an area of at least a
    fifth of the figure each way, so a margin estimate can never collapse the plot."""
    width, height = (float(v) * 72.0 for v in fig.get_size_inches())
    left = min(margins.left / width, 0.6)
    bottom = min(margins.bottom / height, 0.6)
    right = max(1.0 - margins.right / width, left + 0.2)
    top = max(1.0 - margins.top / height, bottom + 0.2)
    return (left, bottom, right - left, top - bottom)


def legend_width(entries: Iterable[str], size: float, title: str = "") -> float:
    """The width (points) of a frameless legend of ``entries`` (one column) at font ``size``:
    the handle (2 font sizes), its pad (0.8) and the text, plus the border pads."""
    widest = max(text_width(entries, size) + 2.8 * size, text_width([title], size) if title else 0)
    return widest + 1.2 * size


def figure_title(fig: Figure, text: str, size: float = 12.0) -> float:
    """``text`` as the figure's title, centred at the top, its font shrunk so that it fits the
    figure's width; returns the points it takes from the top."""
    width = float(fig.get_size_inches()[0]) * 72.0 - 2 * EDGE
    measured = text_width([text], size)
    if measured > width:
        size = size * width / measured
    height = float(fig.get_size_inches()[1]) * 72.0
    fig.suptitle(text, x=0.5, y=1.0 - EDGE / height, va="top", fontsize=size)
    return EDGE + size * LINE + 4.0


def value_ticks_width(size: float) -> float:
    """The width (points) of numeric tick labels of a 0–1000 axis (``100``, ``1000``, ``-20``)."""
    return text_width(["1000", "-100"], size)


# the widest label matplotlib's automatic date axis writes (hourly ticks over a few days)
DATE_TICK = "2026-11-07 00:00"


def peak_ticks_width(peak: float, size: float) -> float:
    """The width (points) of the numeric tick labels of an axis reaching ``peak`` (either sign):
    its integer digits with a minus sign and one decimal (``-1200.5``), never less than
    ``value_ticks_width``; matplotlib writes scientific notation only from 10⁶ on."""
    digits = f"-{abs(peak):.0f}.5" if math.isfinite(peak) else "-100.5"
    return max(text_width([digits], size), value_ticks_width(size))


def fitted_size(text: str, size: float, room: float) -> float:
    """``size`` shrunk so that ``text`` is at most ``room`` points wide."""
    measured = text_width([text], size)
    return size * room / measured if measured > room else size

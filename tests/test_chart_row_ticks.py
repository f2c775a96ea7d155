"""The heatmap's and the breach timeline's row labels (``report/chart_ticks.py``) look exactly like
matplotlib's own y ticks.

``row_ticks`` draws one marker line and plain texts instead of matplotlib's ``Tick`` objects
(cheaper at many rows, branch nightcharts). The claim is "the same picture": the same figure is
drawn once with matplotlib's ``set_yticks(..., labels=...)`` and once with ``row_ticks`` and the
two PNGs must be equal pixel for pixel, for a top-down image grid (the heatmap) and for bars on
an inverted y axis (the timeline), with long, short and escaped names.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from analyzer.report.chart_ticks import row_ticks
from analyzer.report.charts import READABLE, encode_png, short_label

NAMES = [short_label(n) for n in ["W" * 60 + "-0", "node-1\r", "pool general (mean)", "g"]]


def _png(draw: Callable[[Any], None], ticks: Callable[[Any], None]) -> np.ndarray:
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(7.0, 2.5))
        ax = fig.add_axes((0.45, 0.15, 0.5, 0.8))
        draw(ax)
        ticks(ax)
        uri = encode_png(fig)
    png = base64.b64decode(uri.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def _matplotlib_ticks(ax: Any) -> None:
    ax.set_yticks(range(len(NAMES)), labels=NAMES, fontsize=9)


def _ours(ax: Any) -> None:
    row_ticks(ax, NAMES, fontsize=9)


def _grid(ax: Any) -> None:
    ax.imshow(np.arange(len(NAMES) * 6.0).reshape(len(NAMES), 6), aspect="auto")


def _bars(ax: Any) -> None:
    ax.barh([0.0, 2.0], [3.0, 5.0], left=[1.0, 0.5], height=0.5)
    ax.set_ylim(len(NAMES) - 0.5, -0.5)


def test_row_labels_are_drawn_at_the_pixels_of_matplotlibs_own_ticks() -> None:
    for draw in (_grid, _bars):
        reference, ours = _png(draw, _matplotlib_ticks), _png(draw, _ours)
        assert reference.shape == ours.shape
        # the labels are drawn at all (not a blank margin on both sides)
        assert (reference[:, : reference.shape[1] // 3, :3] < 128).any()
        assert np.array_equal(reference, ours), draw.__name__


def test_no_rows_draw_no_labels() -> None:
    blank = _png(_grid, lambda ax: ax.set_yticks([]))
    assert np.array_equal(blank, _png(_grid, lambda ax: row_ticks(ax, [], fontsize=9)))

"""Category labels on a chart's y axis drawn cheaply: one row label per node or pool.

matplotlib's ``Tick`` objects are five artists each, built and styled one by one and measured
again at every draw; at 30-200 rows they were a large part of a heatmap's CPU (branch
nightcharts, docs/benchmarks.md). ``row_ticks`` draws the same marks and labels at the same
pixels with one marker line and plain texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.markers import TICKLEFT, TICKRIGHT


def row_ticks(ax: Any, labels: Sequence[str], *, fontsize: float) -> None:
    """One y tick and label per row (row ``i`` at ``y = i``), drawn as matplotlib's ticks look
    (the ``ytick.*`` style: marks out of the left spine, labels right-aligned a pad away)
    but without its ``Tick`` objects.

    Why: a ``Tick`` is five artists built and styled one by one and measured again at every
    draw; at 34-200 rows they cost a quarter to a third of a heatmap's CPU. Here the marks are
    one line of markers and the labels plain texts, at the same places (the axis's own
    transforms), so the picture is the same, pixel for pixel (tests/test_chart_row_ticks.py).
    The labels are ``ax.texts``, so ``fit_labels`` still checks them.
    """
    ax.set_yticks([])
    if not labels:
        return
    rc = mpl.rcParams
    color = rc["ytick.color"]
    size, direction = float(rc["ytick.major.size"]), rc["ytick.direction"]
    marker: Any = {"out": TICKLEFT, "in": TICKRIGHT, "inout": "_"}[direction]
    rows = np.arange(len(labels), dtype=float)
    marks = Line2D(np.zeros(len(labels)), rows, transform=ax.get_yaxis_transform("tick1"),
                   color=color, linestyle="none", marker=marker, markeredgecolor=color,
                   markersize=size, markeredgewidth=rc["ytick.major.width"],
                   zorder=ax.yaxis.get_zorder(), clip_on=False)  # fmt: skip
    if rc["ytick.left"]:
        ax.add_artist(marks)
    # the label's offset from the spine: the tick's pad plus the part of the mark outside
    outside = {"out": 1.0, "in": 0.0, "inout": 0.5}[direction] * size
    transform, va, ha = ax.get_yaxis_text1_transform(float(rc["ytick.major.pad"]) + outside)
    labelcolor = rc["ytick.labelcolor"]
    if labelcolor == "inherit":
        labelcolor = color
    for row, label in zip(rows, labels, strict=True):
        ax.text(0, row, label, transform=transform, va=va, ha=ha, fontsize=fontsize,
                color=labelcolor, zorder=ax.yaxis.get_zorder(), clip_on=False)  # fmt: skip

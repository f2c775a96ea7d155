"""Report charts: matplotlib (Agg, no display) rendered to PNG data URIs embedded in the HTML.

Embedding keeps the report one self-contained file that opens offline (no CDN, no JavaScript
bundle). Figures are built with ``matplotlib.figure.Figure`` directly, not pyplot, so no global
figure state leaks between renders. Sizes and DPI are chosen so a 5,000-node report stays well
under the 5 MB budget: callers pass already-bucketed data (top-N rows plus pool means), never one
row per node for big clusters. Names from the cluster are drawn with mathtext off, so a node
called ``$x$`` is shown literally.
"""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analyzer.core.text import escaped
from analyzer.report.chart_layout import (
    EDGE,
    LINE,
    TICK,
    Margins,
    figure_title,
    legend_width,
    place_axes,
    rotated_height,
    text_width,
    value_ticks_width,
)
from analyzer.report.chart_ticks import row_ticks

_DPI = 80
# Report chart style; other report modules draw inside ``mpl.rc_context(STYLE)`` too.
STYLE: Any = {
    "text.parse_math": False,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "analyzer",
}
# The nightly charts: text readable at the size the page shows them (~1:1 at 80 dpi).
READABLE: Any = {
    **STYLE,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
}
RESOURCE_COLORS = {"cpu": "#d1495b", "memory": "#00798c", "nvidia.com/gpu": "#edae49"}


@dataclass(frozen=True)
class Chart:
    """One embedded chart: a title for the heading, alt text, and the PNG as a data URI."""

    title: str
    alt: str
    data_uri: str


def short_label(text: str, limit: int = 40) -> str:
    """A tick label of at most ``limit`` characters (``…`` in the middle): a 253-character node
    name would squeeze the plot to nothing (and matplotlib warn on stderr, which cron mails).
    Non-printable characters are shown escaped (``core/text.py``): a ``\\r`` in a pool name has
    no glyph either. The tables and report.json keep the full name."""
    text = escaped(text)
    return (
        text if len(text) <= limit else f"{text[: limit // 2 - 1]}…{text[-(limit - limit // 2) :]}"
    )


TITLE_LIMIT = 100  # titles, axis labels and free text: a sentence, not a 10,000-character name
LABEL_LIMIT = 40  # tick labels and legend entries (``short_label``'s default)


def fit_labels(fig: Figure) -> None:
    """Shorten every long text of ``fig`` (``short_label``): tick labels, legend entries,
    titles, axis labels, free text. Any chart can carry a name from the cluster (a pool, a
    node, a workload) in any of them, and one that is too long collapses the axes to nothing
    (matplotlib then warns on stderr, which cron mails). Done here, where every chart is
    encoded, so no chart can miss it; the tables and report.json keep the full names.
    """
    texts: list[Any] = [getattr(fig, "_suptitle", None), *fig.texts]
    entries: list[Any] = []  # legend entries sit beside the plot: as short as a tick label
    for legend in fig.legends:
        entries.extend([legend.get_title(), *legend.get_texts()])
    for ax in fig.axes:
        # the centre, left and right titles (matplotlib keeps the side ones private)
        sides = [getattr(ax, f"_{side}_title", None) for side in ("left", "right")]
        texts.extend([ax.title, *sides, ax.xaxis.label, ax.yaxis.label])
        texts.extend(ax.texts)
        own = ax.get_legend()
        if own is not None:
            entries.extend([own.get_title(), *own.get_texts()])
        for axis in (ax.xaxis, ax.yaxis):
            _shorten_ticks(axis)
    for limit, group in ((TITLE_LIMIT, texts), (LABEL_LIMIT, entries)):
        for text in group:
            if text is None:
                continue
            value = text.get_text()
            if len(value) > limit or not value.isprintable():
                text.set_text(short_label(value, limit))


def _shorten_ticks(axis: Any) -> None:
    """Tick labels given as names, shortened as they are drawn: fixed (``set_xticks(...,
    labels=...)`` makes a ``FuncFormatter`` or ``FixedFormatter``) or categorical; numeric
    formatters keep their state (offsets) and are left alone."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    formatter = axis.get_major_formatter()
    if getattr(formatter, "_analyzer_short", False):
        return  # already wrapped (a figure encoded twice)
    if isinstance(formatter, FixedFormatter | StrCategoryFormatter | FuncFormatter):
        short = FuncFormatter(lambda x, pos: short_label(formatter(x, pos)))
        short._analyzer_short = True  # type: ignore[attr-defined]
        axis.set_major_formatter(short)


def encode_png(fig: Figure) -> str:
    """The figure as a PNG data URI (no timestamp metadata, so output is reproducible), its
    long labels shortened first (``fit_labels``)."""
    buffer = io.BytesIO()
    fit_labels(fig)
    FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        # a name in a script the bundled font lacks (CJK, emoji) is drawn as boxes; the tables
        # and report.json keep it whole, so stderr (cron's mail) need not say so per glyph
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def heatmap(
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    alt: str,
    xlabel: str = "",
    colorbar_label: str = "% of allocatable",
) -> Chart:
    """Rows × columns of percentages (0–100+, NaN = no data) as a colour grid."""
    rows = max(len(row_labels), 1)
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(11.0, 1.4 + 0.2 * rows))
        labels = [short_label(r) for r in row_labels]
        top = figure_title(fig, short_label(title, TITLE_LIMIT))
        bottom = EDGE + 10 * LINE + TICK + (11 * LINE + 4 if xlabel else 0)
        # the colour bar: a gap, the bar (14 pt), its ticks and its label (11 pt, rotated)
        bar = 12.0 + 14.0 + TICK + text_width(["100"], 10) + 4 + 11 * LINE + EDGE
        rect = place_axes(fig, Margins(EDGE + text_width(labels, 9) + TICK, bar, bottom, top))
        ax = fig.add_axes(rect)
        width_in = float(fig.get_size_inches()[0])
        cax = fig.add_axes(
            (rect[0] + rect[2] + 12 / (72 * width_in), rect[1] + 0.1 * rect[3],
             14 / (72 * width_in), 0.8 * rect[3])
        )  # fmt: skip
        cmap = mpl.colormaps["YlOrRd"].with_extremes(bad="#dddddd")
        image = ax.imshow(
            np.ma.masked_invalid(values.astype(float)),
            aspect="auto",
            cmap=cmap,
            vmin=0,
            vmax=100,
            interpolation="nearest",
        )
        row_ticks(ax, labels, fontsize=9)
        step = max(1, len(col_labels) // 12)
        ticks = list(range(0, len(col_labels), step))
        ax.set_xticks(ticks, labels=[col_labels[i] for i in ticks])
        if xlabel:
            ax.set_xlabel(xlabel)
        fig.colorbar(image, cax=cax, label=colorbar_label)
        return Chart(title=title, alt=alt, data_uri=encode_png(fig))


def breach_timeline(
    breaches: pd.DataFrame,
    nodes: Sequence[str],
    *,
    start: pd.Timestamp,
    end: pd.Timestamp,
    title: str,
) -> Chart:
    """Per-node horizontal bars for each breach interval (``node, resource, start, end``)."""
    rows = max(len(nodes), 1)
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(11.0, 1.2 + 0.22 * rows))
        labels = [short_label(n) for n in nodes]
        top = figure_title(fig, short_label(title, TITLE_LIMIT))
        bottom = EDGE + 10 * LINE + TICK + 11 * LINE + 4
        kinds = sorted(set(breaches["resource"])) if len(breaches) else []
        right = EDGE + 8 + legend_width([f"{r} over threshold" for r in kinds], 10)
        left = EDGE + text_width(labels, 9) + TICK
        ax = fig.add_axes(place_axes(fig, Margins(left, right, bottom, top)))
        index = {name: i for i, name in enumerate(nodes)}
        shown = breaches[breaches["node"].isin(index)] if len(breaches) else breaches
        resources = sorted(set(shown["resource"])) if len(shown) else []
        height = 0.8 / max(len(resources), 1)
        for offset, resource in enumerate(resources):
            # One bar container per resource (not one artist per breach): fast for many breaches.
            part = shown[shown["resource"] == resource]
            left = ((part["start"] - start).dt.total_seconds() / 3600).clip(lower=0.0)
            width = ((part["end"] - start).dt.total_seconds() / 3600 - left).clip(lower=0.05)
            positions = part["node"].map(index).to_numpy(dtype=float)
            ax.barh(
                positions - 0.4 + offset * height + height / 2,
                width.to_numpy(),
                left=left.to_numpy(),
                height=height,
                color=RESOURCE_COLORS.get(resource, "#6a4c93"),
                label=f"{resource} over threshold",
            )
        ax.set_ylim(len(nodes) - 0.5, -0.5)
        row_ticks(ax, labels, fontsize=9)
        ax.set_xlim(0, max((end - start).total_seconds() / 3600, 1))
        ax.set_xlabel(f"hours since {start:%Y-%m-%d %H:%M} UTC")
        _legend_outside(ax, len(resources))
        return Chart(
            title=title, alt=f"{title}: breach intervals per node", data_uri=encode_png(fig)
        )


def scatter(
    frame: pd.DataFrame, *, x: str, y: str, group: str, title: str, xlabel: str, ylabel: str
) -> Chart:
    """One dot per row (e.g. per node), coloured by ``group`` (e.g. pool), with a y = x line."""
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(9.0, 5.0))
        groups = sorted(frame[group].fillna("").astype(str).unique())
        top = figure_title(fig, short_label(title, TITLE_LIMIT))
        names = [short_label(g or "(none)") for g in groups]
        right = EDGE + 8 + legend_width(names, 10, "pool") if groups else EDGE + 12
        left = EDGE + 11 * LINE + 4 + value_ticks_width(10) + TICK
        bottom = EDGE + 10 * LINE + TICK + 11 * LINE + 4
        ax = fig.add_axes(place_axes(fig, Margins(left, right, bottom, top)))
        palette = mpl.colormaps["tab10"]
        for i, name in enumerate(groups):
            part = frame[frame[group].fillna("").astype(str) == name]
            ax.scatter(
                part[x], part[y], s=9, alpha=0.7, color=palette(i % 10), label=name or "(none)"
            )
        top = float(np.nanmax([frame[x].max(), frame[y].max(), 100.0])) if len(frame) else 100.0
        ax.plot([0, top], [0, top], color="#888888", linewidth=0.8, linestyle="--")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if groups:
            ax.legend(markerscale=1.5, title="pool", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), frameon=False)  # fmt: skip
        return Chart(
            title=title, alt=f"{title}: {ylabel} against {xlabel}", data_uri=encode_png(fig)
        )


def _legend_outside(ax: Any, count: int) -> None:
    """The legend to the right of the plot, never over the data."""
    if count:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def lines(
    x: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
    xlabel: str = "",
    ylim: tuple[float, float] | None = None,
    end_labels: int = 0,
) -> Chart:
    """A few named series over a shared x axis (fragmentation over the day, trends over days).

    The legend sits outside the plot. ``ylim`` fixes the axis (e.g. 0–100 for shares, so a flat
    series is not blown up into a band around it). ``end_labels``: with more series than that,
    each line is also named at its right end, so a reader can tell the lines apart.
    """
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(11.0, 4.2))
        xs = list(x)
        step = max(1, len(xs) // 12)
        shown = [xs[i] for i in range(0, len(xs), step)]
        named = bool(end_labels and len(series) > end_labels)
        columns = _legend_columns(fig, list(series))
        ax = fig.add_axes(_lines_rect(fig, title, shown, list(series), xlabel, named, columns))
        ends: list[tuple[float, int, str, Any]] = []
        for name, values in series.items():
            (line,) = ax.plot(xs, list(values), marker="o", markersize=3, label=name)
            last = _last_finite(values)
            if last is not None:
                ends.append((last[1], last[0], name, line.get_color()))
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if xlabel:
            ax.set_xlabel(xlabel)
        if named:
            _label_line_ends(ax, ends)
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_xticks(range(0, len(xs), step), labels=shown)
        if series:  # below the plot, so long series names never cover the data
            height = float(fig.get_size_inches()[1]) * 72.0
            fig.legend(loc="lower center", bbox_to_anchor=(0.5, EDGE / height),
                       ncols=columns, frameon=False)  # fmt: skip
        return Chart(title=title, alt=f"{title} ({', '.join(series)})", data_uri=encode_png(fig))


def _legend_columns(fig: Figure, names: list[str]) -> int:
    """Two legend columns under the plot when two of the widest entries fit the figure's width,
    else one (two 40-character names side by side can be wider than the figure)."""
    entry = legend_width([short_label(n) for n in names], 10)
    room = float(fig.get_size_inches()[0]) * 72.0 - 2 * EDGE
    return max(1, min(len(names), 2 if 2 * entry <= room else 1))


def _lines_rect(
    fig: Figure,
    title: str,
    ticks: list[str],
    names: list[str],
    xlabel: str,
    named: bool,
    columns: int,
) -> tuple[float, float, float, float]:
    """The plot area of ``lines``: the title above; below it the x tick labels (at 30°), the
    axis label and the legend (two columns); the line-end names (``named``) to the right."""
    top = figure_title(fig, short_label(title, TITLE_LIMIT))
    rows = -(-len(names) // columns)
    legend = rows * 17.0 + 10.0 if names else 0.0
    # the line-end names are free text (``fit_labels`` shortens them at TITLE_LIMIT)
    ends = [short_label(n, TITLE_LIMIT) for n in names]
    bottom = EDGE + legend + (11 * LINE + 4 if xlabel else 0) + rotated_height(ticks, 10, 30) + TICK
    half_tick = text_width(ticks[-1:], 10) * 0.87 / 2  # a rotated label overhangs its tick
    right = EDGE + max(text_width(ends, 9) + 8 if named else 12.0, half_tick)
    left = EDGE + 11 * LINE + 4 + value_ticks_width(10) + TICK
    left = max(left, EDGE + text_width(ticks[:1], 10) * 0.87 / 2)
    return place_axes(fig, Margins(left, right, bottom, top))


def _label_line_ends(ax: Any, ends: list[tuple[float, int, str, Any]]) -> None:
    """Name each line at its last point, nudged apart vertically so no two names overlap."""
    low, high = ax.get_ylim()
    gap = (high - low) * 0.05
    placed: list[float] = []
    for y, _x, _name, _color in sorted(ends):
        placed.append(max(y, placed[-1] + gap) if placed else y)
    # names pushed above the axis move down together: the margins (fixed, not constrained
    # layout) leave no room above the plot for them
    over = max(placed[-1] - high, 0.0) if placed else 0.0
    for (y, x, name, color), spot in zip(sorted(ends), placed, strict=True):
        spot -= over
        ax.annotate(name, (x, y), xytext=(x + 0.4, spot), textcoords="data", fontsize=9,
                    color=color, va="center", annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": color, "lw": 0.6})  # fmt: skip


def _last_finite(values: Sequence[float]) -> tuple[int, float] | None:
    for i in range(len(values) - 1, -1, -1):
        v = float(values[i])
        if v == v:
            return i, v
    return None


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
    ylim: tuple[float, float] | None = None,
) -> Chart:
    """Bars per group (e.g. per pool), one bar per series (e.g. avg, p50 … p99), values printed."""
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(7.0, 4.0))
        top = figure_title(fig, short_label(title, TITLE_LIMIT))
        names = [short_label(g) for g in groups]
        left = EDGE + 11 * LINE + 4 + value_ticks_width(10) + TICK
        right = EDGE + 8 + legend_width(list(series), 10)
        # a long first or last group name overhangs the axes by up to half its width
        left = max(left, EDGE + text_width(names[:1], 10) / 2)
        right = max(right, EDGE + text_width(names[-1:], 10) / 2)
        ax = fig.add_axes(place_axes(fig, Margins(left, right, EDGE + 10 * LINE + TICK, top)))
        width = 0.8 / max(len(series), 1)
        palette = mpl.colormaps["Blues"]
        for k, (name, values) in enumerate(series.items()):
            positions = np.arange(len(groups)) - 0.4 + width * (k + 0.5)
            shade = palette(0.35 + 0.6 * k / max(len(series) - 1, 1))
            bars = ax.bar(positions, list(values), width=width, label=name, color=shade)
            ax.bar_label(bars, fmt="%.0f", fontsize=8, padding=1)
        ax.set_xticks(range(len(groups)), labels=list(groups))
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
        _legend_outside(ax, len(series))
        return Chart(title=title, alt=f"{title} ({', '.join(series)})", data_uri=encode_png(fig))

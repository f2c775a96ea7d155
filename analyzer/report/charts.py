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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

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
    The tables and report.json keep the full name."""
    text = str(text)
    return (
        text if len(text) <= limit else f"{text[: limit // 2 - 1]}…{text[-(limit - limit // 2) :]}"
    )


def encode_png(fig: Figure) -> str:
    """The figure as a PNG data URI (no timestamp metadata, so output is reproducible)."""
    buffer = io.BytesIO()
    FigureCanvasAgg(fig)
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def heatmap(
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    alt: str,
) -> Chart:
    """Rows × columns of percentages (0–100+, NaN = no data) as a colour grid."""
    rows = max(len(row_labels), 1)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(9.5, 1.0 + 0.17 * rows), layout="constrained")
        ax = fig.add_subplot()
        cmap = mpl.colormaps["YlOrRd"].with_extremes(bad="#dddddd")
        image = ax.imshow(
            np.ma.masked_invalid(values.astype(float)),
            aspect="auto",
            cmap=cmap,
            vmin=0,
            vmax=100,
            interpolation="nearest",
        )
        ax.set_yticks(
            range(len(row_labels)), labels=[short_label(r) for r in row_labels], fontsize=7
        )
        step = max(1, len(col_labels) // 12)
        ticks = list(range(0, len(col_labels), step))
        ax.set_xticks(ticks, labels=[col_labels[i] for i in ticks], fontsize=7)
        ax.set_title(title)
        fig.colorbar(image, ax=ax, label="% of allocatable", shrink=0.8)
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
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(9.5, 1.0 + 0.2 * rows), layout="constrained")
        ax = fig.add_subplot()
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
                label=resource,
            )
        ax.set_yticks(range(len(nodes)), labels=[short_label(n) for n in nodes], fontsize=7)
        ax.set_ylim(len(nodes) - 0.5, -0.5)
        ax.set_xlim(0, max((end - start).total_seconds() / 3600, 1))
        ax.set_xlabel(f"hours since {start:%Y-%m-%d %H:%M} UTC")
        ax.set_title(title)
        if resources:
            ax.legend(loc="upper right", fontsize=7)
        return Chart(
            title=title, alt=f"{title}: breach intervals per node", data_uri=encode_png(fig)
        )


def scatter(
    frame: pd.DataFrame, *, x: str, y: str, group: str, title: str, xlabel: str, ylabel: str
) -> Chart:
    """One dot per row (e.g. per node), coloured by ``group`` (e.g. pool), with a y = x line."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 4.2), layout="constrained")
        ax = fig.add_subplot()
        groups = sorted(frame[group].fillna("").astype(str).unique())
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
        ax.set_title(title)
        if groups:
            ax.legend(fontsize=7, markerscale=1.5)
        return Chart(
            title=title, alt=f"{title}: {ylabel} against {xlabel}", data_uri=encode_png(fig)
        )


def lines(
    x: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
    xlabel: str = "",
) -> Chart:
    """A few named series over a shared x axis (fragmentation over the day, trends over days)."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.2), layout="constrained")
        ax = fig.add_subplot()
        for name, values in series.items():
            ax.plot(list(x), list(values), marker="o", markersize=3, label=name)
        ax.set_ylabel(ylabel)
        if xlabel:
            ax.set_xlabel(xlabel)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if series:
            ax.legend(fontsize=7)
        return Chart(title=title, alt=f"{title} ({', '.join(series)})", data_uri=encode_png(fig))

"""The monthly page's "headroom per pod shape" section: a line per shape over the trend window
(the fewest copies that fit on each day) and a table for the reviewed month, from
``report.json``'s ``headroom`` (``monthly/headroom_trend.py``). Names go through
``core.text.one_line``; the sentence is built from the table's own rows."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from analyzer.core.text import one_line
from analyzer.report import format as fmt
from analyzer.report.charts import READABLE, Chart, encode_png, short_label
from analyzer.report.views import Column, TableView

NAME = "headroom_shapes"
REASON_SHOWN = 400


def headroom_frame(payload: dict[str, Any]) -> pd.DataFrame:
    """The month's rows, names and reasons made safe to show."""
    shapes = payload.get("headroom", {}).get("shapes", [])
    frame = pd.DataFrame(
        shapes,
        columns=["shape", "source", "days", "copies_last_day", "last_day", "copies_min",
                 "min_day", "reason_min", "previous_min"],
    )  # fmt: skip
    frame["shape"] = [one_line(v) for v in frame["shape"]]
    frame["reason_min"] = [one_line(v, REASON_SHOWN) for v in frame["reason_min"]]
    frame["previous_min"] = frame["previous_min"].astype("Float64")
    return frame


def headroom_table(payload: dict[str, Any]) -> TableView:
    """One row per shape counted in the month."""
    return TableView(
        NAME,
        f"Headroom per pod shape, {payload['month']}: more copies that fit by the scheduler's "
        "filters",
        [
            Column("shape", "Shape"), Column("source", "From"),
            Column("copies_last_day", "On the last day", "int"), Column("last_day", "Last day"),
            Column("copies_min", "Fewest in the month", "int"), Column("min_day", "On"),
            Column("previous_min", "Fewest the month before", "int"),
            Column("reason_min", "Why the next copy failed then"),
        ],
        headroom_frame(payload),
        limit=None,
        note="from the nightly runs' daily series (history/headroom/)",
    )  # fmt: skip


def headroom_sentence(payload: dict[str, Any]) -> str:
    """The first shape's month in words (or why there is nothing to show)."""
    frame = headroom_frame(payload)
    if frame.empty:
        return (
            "No headroom per pod shape in the history for this month (the nightly runs record it "
            "from this version on; history backfill adds it for re-made days)."
        )
    row = frame.iloc[0]
    text = (
        f"{row['shape']}: {fmt.count(row['copies_last_day'])} more "
        f"{'copy' if int(row['copies_last_day']) == 1 else 'copies'} fitted on "
        f"{row['last_day']}; the fewest in the month was {fmt.count(row['copies_min'])} on "
        f"{row['min_day']}"
    )
    if not pd.isna(row["previous_min"]):
        text += f" (the month before: {fmt.count(int(row['previous_min']))})"
    more = f" {len(frame) - 1} more shape(s) in the table." if len(frame) > 1 else ""
    return text + "." + more


def headroom_chart(payload: dict[str, Any]) -> Chart | None:
    """A line per shape: the fewest copies that fit each day of the trend window."""
    days = pd.DataFrame(payload.get("headroom", {}).get("days", []))
    if days.empty:
        return None
    with mpl.rc_context(READABLE):
        fig = Figure(figsize=(11.0, 3.2))
        fig.subplots_adjust(left=0.07, right=0.99, top=0.9, bottom=0.22)
        ax = fig.subplots()
        for shape, group in days.groupby("shape", sort=True):
            group = group.sort_values("day")
            x = pd.to_datetime(group["day"]).to_numpy()
            ax.plot(x, group["copies_min"].to_numpy(float), marker=".", lw=1.3,
                    label=short_label(one_line(shape)))  # fmt: skip
        ax.set_ylabel("copies (fewest of the day)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: whole ticks
        ax.set_ylim(bottom=0)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.legend(fontsize=8, loc="best")
        return Chart(
            title="Headroom per pod shape",
            alt="per pod shape, the fewest more copies that fitted at any hour of each day",
            data_uri=encode_png(fig),
        )

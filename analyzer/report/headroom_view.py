"""The nightly page's "headroom per pod shape" table and sentence (``nightly/headroom.py``).

One row per shape: copies that fit at the day's last point ("now") and at its tightest point,
each with the reason the next copy fails (cluster-capacity's FailReason summary). The sentence
names the first shape's figures from the same frame the table shows, so the two cannot disagree.
Shape names (the config's) and reasons (taint keys, label names from the data) go through
``core.text.one_line``.
"""

from __future__ import annotations

import pandas as pd

from analyzer.core.text import one_line
from analyzer.nightly.headroom import ShapeHeadroom
from analyzer.report import format as fmt
from analyzer.report.views import Column, TableView

NAME = "shape_headroom"
REASON_SHOWN = 400  # a reason lists several filter reasons with taint keys: longer than a name


def _at(value: pd.Timestamp, end: pd.Timestamp) -> str:
    stamp = pd.Timestamp(value)
    return "24:00" if stamp == end else f"{stamp:%H:%M}"


def headroom_frame(headroom: ShapeHeadroom) -> pd.DataFrame:
    """The shapes' rows with names and reasons made safe to show on one line."""
    frame = headroom.shapes.copy()
    frame["shape"] = [one_line(v) for v in frame["shape"]]
    for column in ("reason_now", "reason_min"):
        frame[column] = [one_line(v, REASON_SHOWN) for v in frame[column]]
    return frame.reset_index(drop=True)


def headroom_table(headroom: ShapeHeadroom) -> TableView:
    """The page's table (every shape; the hourly rows go to JSON and CSV only)."""
    return TableView(
        NAME,
        f"Headroom per pod shape: more copies that fit by the scheduler's filters "
        f"({headroom.strategy})",
        [
            Column("shape", "Shape"), Column("source", "From"),
            Column("copies_now", "Copies that fit now", "int"),
            Column("reason_now", "Why the next copy fails now"),
            Column("copies_min", "At the tightest hour", "int"),
            Column("min_at", "Tightest hour (UTC)", "time"),
            Column("reason_min", "Why the next copy fails then"),
        ],
        headroom_frame(headroom),
        limit=None,
        note="copies bound one at a time on the day's observed placement; "
        "reason = nodes refused per filter reason",
    )  # fmt: skip


def hourly_table(headroom: ShapeHeadroom) -> TableView:
    """Every point of the day per shape (CSV and JSON; the page shows the summary)."""
    frame = headroom.hourly.copy()
    frame["shape"] = [one_line(v) for v in frame["shape"]]
    frame["reason"] = [one_line(v, REASON_SHOWN) for v in frame["reason"]]
    return TableView(
        "shape_headroom_hourly",
        "Headroom per pod shape, hour by hour",
        [
            Column("time", "Time (UTC)", "time"), Column("shape", "Shape"),
            Column("copies", "Copies that fit", "int"), Column("nodes", "Nodes", "int"),
            Column("limited", "Stopped at the limit", "bool"), Column("reason", "Next copy fails"),
        ],
        frame,
        limit=0,
    )  # fmt: skip


def shape_headroom_sentence(headroom: ShapeHeadroom, end: pd.Timestamp) -> str:
    """One sentence from the table's first row (or why there is no table)."""
    frame = headroom_frame(headroom)
    if frame.empty:
        why = "; ".join(headroom.notes) or "no shape to count"
        return f"Headroom per pod shape: not counted ({why})."
    row = frame.iloc[0]
    copies = "copy" if int(row["copies_now"]) == 1 else "copies"
    fit = "fits" if int(row["copies_now"]) == 1 else "fit"
    now = (
        f"{fmt.count(row['copies_now'])} more {copies} of {row['shape']} {fit} at "
        f"{_at(row['now_at'], end)} UTC"
    )
    if int(row["copies_min"]) < int(row["copies_now"]):
        tight = (
            f"; the tightest hour was {_at(row['min_at'], end)} with "
            f"{fmt.count(row['copies_min'])}, the next copy then failing on "
            f"{row['reason_min']}"
        )
    else:
        tight = f", the fewest of the day; the next copy fails on {row['reason_now']}"
    more = f" ({len(frame) - 1} more shape(s) in the table)" if len(frame) > 1 else ""
    return f"Headroom by the scheduler's filters: {now}{tight}{more}."

"""Typed views shared by every report: table columns and cells, summary cards, JSON values.

A ``TableView`` holds all rows (for CSV and JSON) and renders the first ``limit`` of them in HTML
(cells pre-formatted here, escaped by the template); numbers carry their raw value in ``data-v``
so the inline script sorts numerically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.report import format as fmt

HTML_ROW_LIMIT = 100


@dataclass(frozen=True)
class Column:
    """A table column: the frame column, its header, and how to show it."""

    key: str
    label: str
    kind: str = "text"  # text | int | num | pct | time | bool | duration (seconds, in words)
    digits: int = 1
    # ``num``: a positive value too small for ``digits`` reads "< 0.1" (at 1 digit), not "0.0"
    # (a row saying a reason held nodes "0.0 node-hours" is true but reads as none)
    tiny: bool = False


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str  # data-v attribute: the raw number, so sorting is numeric
    numeric: bool


@dataclass
class TableView:
    """A table: all rows in ``frame`` (CSV, JSON); the first ``limit`` rows in the HTML."""

    name: str
    title: str
    columns: list[Column]
    frame: pd.DataFrame
    limit: int | None = HTML_ROW_LIMIT
    note: str = ""
    hot: str | None = None  # bool column: highlight the row
    in_json: bool = True  # False: CSV only (e.g. raw hourly series a chart already summarises)
    # the CSV its rows are in when not ``name``.csv (a view of some columns of another table)
    csv: str = ""

    def __post_init__(self) -> None:
        # a table with no rows built from an empty list has no columns either (``pd.DataFrame([])``,
        # e.g. a back-test with no day in common): it is the empty table with its columns, so its
        # CSV keeps its header and its JSON is []. A table with rows must have every column.
        keys = [c.key for c in self.columns]
        if self.frame.empty and not set(keys) <= set(self.frame.columns):
            self.frame = pd.DataFrame(columns=keys)

    @property
    def total_rows(self) -> int:
        return len(self.frame)

    @property
    def shown(self) -> int:
        return len(self.frame) if self.limit is None else min(self.limit, len(self.frame))

    def rows(self) -> list[tuple[bool, list[Cell]]]:
        """The HTML rows: (highlighted, cells)."""
        out = []
        for _, row in self.frame.head(self.shown).iterrows():
            hot = bool(row[self.hot]) if self.hot else False
            out.append((hot, [_cell(row[c.key], c) for c in self.columns]))
        return out

    def csv_frame(self) -> pd.DataFrame:
        """All rows with the shown columns (CSV headers are the column keys; times RFC 3339)."""
        frame = self.frame[[c.key for c in self.columns]].copy()
        for column in self.columns:
            if column.kind == "time" and len(frame):
                stamps = pd.to_datetime(frame[column.key], utc=True)
                # Format each distinct time once (hourly tables repeat 24 values many times).
                unique = pd.Series(stamps.dropna().unique())
                text = dict(zip(unique, unique.dt.strftime("%Y-%m-%dT%H:%M:%SZ"), strict=True))
                frame[column.key] = stamps.map(text).fillna("")
        return frame

    def records(self) -> list[dict[str, Any]]:
        """All rows as JSON-ready dicts."""
        keys = [c.key for c in self.columns]
        return [
            {k: json_value(v) for k, v in zip(keys, row, strict=True)}
            for row in self.frame[keys].itertuples(index=False)
        ]


def json_value(value: Any) -> Any:
    """A JSON-ready scalar: NaN/NA → None, numpy → Python, times → RFC 3339."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, pd.Timedelta):
        return value.total_seconds()
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    return value if isinstance(value, int | str) else str(value)


def json_tree(value: Any) -> Any:
    """``value`` made strict JSON all the way down: dict keys as strings, scalars by
    ``json_value`` (NaN/NA → null, numpy → Python, times → RFC 3339)."""
    if isinstance(value, dict):
        return {str(k): json_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_tree(v) for v in value]
    return json_value(value)


def _cell(value: Any, column: Column) -> Cell:
    raw = json_value(value)
    if raw is None:
        return Cell("–", "", column.kind != "text")
    if column.kind == "time":
        return Cell(
            pd.Timestamp(value).strftime("%Y-%m-%d %H:%M"), str(pd.Timestamp(value).value), False
        )
    if column.kind == "bool":
        return Cell("yes" if raw else "no", "1" if raw else "0", False)
    if column.kind == "duration":
        return Cell(fmt.duration(raw), repr(float(raw)), True)
    if column.kind in ("int", "num", "pct"):
        number = float(raw)
        digits = 0 if column.kind == "int" else column.digits
        # the pages' one number convention: a value that rounds to zero shows no sign ("-0.0")
        text = fmt.number(number, digits) + (" %" if column.kind == "pct" else "")
        if column.tiny and 0 < number < 0.5 * 10**-digits:
            text = f"< {fmt.number(10**-digits, digits)}"
        return Cell(text, repr(number), True)
    return Cell(str(raw), "", False)


@dataclass(frozen=True)
class Card:
    """A summary card: value, previous run's value, and which direction is worse.

    ``kind``: ``num`` (``digits`` decimals and ``unit``), ``count`` (an integer), ``pct`` (a
    share in %, whose change is in percentage points), ``duration`` (seconds, in words).
    ``higher_is_worse`` None: a change is neither good nor bad (shown grey).
    """

    key: str
    label: str
    value: float | None
    unit: str = ""
    digits: int = 1
    previous: float | None = None
    higher_is_worse: bool | None = True
    state: str = ""  # "" | good | warn | bad
    kind: str = "num"

    @property
    def delta(self) -> float | None:
        if self.value is None or self.previous is None:
            return None
        return self.value - self.previous

    @property
    def trend(self) -> str:
        """``worse``/``better``/``neutral``/"" (no change or nothing to compare) for colouring."""
        delta = self.delta
        if delta is None or abs(delta) < 10**-self.digits / 2:
            return ""
        if self.higher_is_worse is None:
            return "neutral"
        return "worse" if (delta > 0) == self.higher_is_worse else "better"

    @property
    def delta_unit(self) -> str:
        """The change's unit: percentage points for shares, else the value's unit."""
        return "pp" if self.kind == "pct" else self.unit

    @property
    def value_text(self) -> str:
        """The value as the page shows it (unit included, except for plain counts)."""
        if self.kind == "duration":
            return fmt.duration(self.value, days=False)
        if self.kind == "count":
            return fmt.count(self.value)
        text = fmt.number(self.value, self.digits)
        return text if text == fmt.MISSING or not self.unit else f"{text} {self.unit}"

    @property
    def delta_text(self) -> str:
        """The change against the previous run with its unit ("" without a previous run)."""
        if self.kind == "duration":
            return fmt.signed_duration(self.delta, days=False)
        digits = 0 if self.kind == "count" else self.digits
        return fmt.signed(self.delta, digits, self.delta_unit)

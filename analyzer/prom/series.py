"""A query result series, shared by the HTTP client and the response parser."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LabelKey = tuple[tuple[str, str], ...]


@dataclass(slots=True)  # no per-object __dict__: a long range's summaries are many small series
class Series:
    """One result series: its labels and samples (unix seconds, float values).

    ``key`` is the label set as sorted ``(name, value)`` pairs when the parser already has it
    (``series_key`` computes it otherwise).
    """

    labels: dict[str, str]
    timestamps: np.ndarray
    values: np.ndarray
    key: LabelKey | None = None


def series_key(series: Series) -> LabelKey:
    """The series' label set as a hashable, order-independent key."""
    return series.key if series.key is not None else tuple(sorted(series.labels.items()))


# label JSON of a series as the server sent it → (labels, key), from one response to the next
LabelCache = dict[bytes, tuple[dict[str, str], LabelKey]]

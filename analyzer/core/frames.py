"""pandas helpers every stage shares: time columns as UTC, result frames as JSON records."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def utc(column: pd.Series) -> pd.Series:
    """A time column as ``datetime64[ns, UTC]`` (an all-NaT column may load tz-naive)."""
    return pd.to_datetime(column, utc=True).astype("datetime64[ns, UTC]")


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready records of a result frame: times RFC 3339, NaN/NA → None, numpy → Python."""
    out = []
    for row in frame.to_dict(orient="records"):
        record: dict[str, Any] = {}
        for key, value in row.items():
            if isinstance(value, pd.Timestamp):
                record[key] = value.isoformat().replace("+00:00", "Z")
            elif value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                record[key] = None
            elif isinstance(value, np.generic):
                record[key] = value.item()
            else:
                record[key] = value
        out.append(record)
    return out

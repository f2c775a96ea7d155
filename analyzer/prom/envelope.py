"""The Prometheus HTTP API's JSON envelope (``{"status", "data", "error", "errorType",
"warnings"}``): its results as numpy-backed ``Series`` and its error fields as one line's parts.
Read by ``analyzer.prom.client``; the text fast path for large matrices is
``analyzer.prom.matrix_text``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from analyzer.prom.series import Series

# Server messages that mean one request asked for too much (Prometheus' 11,000-point limit and
# sample limit; VictoriaMetrics' -search.maxPointsPerTimeseries / -search.maxSamplesPerQuery).
TOO_BIG = re.compile(
    r"too many (points|samples)|maximum resolution|maxPointsPerTimeseries|maxSamplesPer"
    r"|would load too many samples",
    re.IGNORECASE,
)


def json_or_none(content: bytes) -> Any:
    """The JSON of ``content``, or None where it is none (a proxy's HTML error page)."""
    try:
        return json.loads(content)
    except ValueError:
        return None


def error_fields(body: dict[str, Any], status: int) -> tuple[str, str]:
    """(``, errorType`` or ``""``, the first line of ``error``) of a Prometheus error envelope.

    VictoriaMetrics puts the HTTP status into ``errorType`` (``"422"``): not said twice.
    """
    error_type = str(body.get("errorType") or "")
    shown = f", {error_type}" if error_type and error_type != str(status) else ""
    text = str(body.get("error") or "")
    return shown, (text.splitlines()[0] if text else "no error text")


def size_hint(error: str) -> str:
    """A fix for errors that mean one request asked for too many points or samples."""
    if TOO_BIG.search(error):
        return (
            "; each request asked for too many points: lower --max-points-per-request "
            "(--chunk-points; points of a series per request, raw samples included)"
        )
    return ""


def to_floats(strings: list[str]) -> np.ndarray:
    """Prometheus sends values as strings (``"NaN"``, ``"+Inf"`` included); numpy parses them all."""
    return np.array(strings, dtype=np.float64)


def parse_matrix(result: list[dict[str, Any]]) -> list[Series]:
    """``data.result`` of a matrix into ``Series`` with numpy arrays."""
    out: list[Series] = []
    for item in result:
        points = item.get("values") or []
        timestamps = np.fromiter((p[0] for p in points), dtype=np.float64, count=len(points))
        values = to_floats([p[1] for p in points])
        out.append(Series(dict(item.get("metric", {})), timestamps, values))
    return out


def parse_vector(result: list[dict[str, Any]]) -> list[Series]:
    """``data.result`` of a vector into one-sample ``Series``."""
    out: list[Series] = []
    for item in result:
        ts, value = item["value"]
        out.append(Series(dict(item.get("metric", {})), np.array([float(ts)]), to_floats([value])))
    return out


def is_series(data: Any) -> bool:
    """True for the fast path's series (a JSON ``data`` that is a list is a shape error)."""
    return isinstance(data, list) and all(isinstance(item, Series) for item in data)

"""The query parameters a Thanos Querier reads, and which of them a request carries.

Thanos speaks Prometheus's ``/api/v1/*`` API and reads three more parameters
(thanos-io/thanos ``docs/components/query.md``; research/prometheus.md §3.5):

- ``partial_response``: with ``true`` an unavailable StoreAPI still gives HTTP 200, with the gap
  only in ``warnings``. Its documented default is contradictory (the querier flag defaults to
  true, the page calls ``abort`` the default), so it is always sent. analyzer sends ``false``
  unless ``--thanos-partial-response``: a percentile over half the stores is a wrong number that
  looks right. When allowed, the warnings land in ``meta.json`` and on the terminal as before.
- ``dedup``: merge the replicas of an HA Prometheus pair (replica labels as the querier is
  configured). Sent ``true`` unless ``--thanos-no-dedup``: without it every sample counts twice.
- ``max_source_resolution``: the coarsest downsampled block Thanos may read (``0s`` = raw only,
  ``5m``, ``1h``). Percentiles and maxima need raw samples at the step analyzer reads, so
  ``auto`` (the default) allows a downsampled level only when the request's step is at least five
  of its points: ``5m`` from a 25-minute step, ``1h`` from a 5-hour step, raw otherwise (the
  querier's own auto-downsampling rule, step / 5). Instant queries (window functions over ``[span]``)
  read raw. ``--thanos-max-source-resolution 0s|5m|1h`` sends that value on every request.

What was sent is recorded per run (``sent``) so that the snapshot's ``meta.json`` says at which
resolution the data was read.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from analyzer.core.errors import InputError

AUTO = "auto"
RESOLUTIONS = ("0s", "5m", "1h")  # Thanos' downsampling levels, raw first
_LEVEL_SECONDS = {"0s": 0, "5m": 300, "1h": 3600}
# The querier's auto-downsampling reads a level whose points are at most a fifth of the step.
_POINTS_PER_STEP = 5
QUERY_PATHS = ("/api/v1/query", "/api/v1/query_range")


def auto_resolution(step_seconds: float | None) -> str:
    """The coarsest level with at least five of its points in one step; raw for instant queries."""
    if step_seconds is None:
        return "0s"
    chosen = "0s"
    for level in RESOLUTIONS:
        if step_seconds >= _POINTS_PER_STEP * _LEVEL_SECONDS[level]:
            chosen = level
    return chosen


@dataclass(eq=False)  # holds what a run sent: compared and hashed by identity
class ThanosParams:
    """The Thanos parameters of a run and the resolutions its requests were sent with."""

    partial_response: bool = False
    dedup: bool = True
    max_source_resolution: str = AUTO
    sent: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_source_resolution not in (AUTO, *RESOLUTIONS):
            raise InputError(
                f"--thanos-max-source-resolution: {self.max_source_resolution!r} is not one of "
                f"{AUTO}, {', '.join(RESOLUTIONS)}; give 0s to read raw samples only"
            )

    def params_for(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` plus the Thanos parameters, for the query endpoints; others unchanged."""
        if path not in QUERY_PATHS:
            return params
        if self.max_source_resolution == AUTO:
            step = params.get("step")
            resolution = auto_resolution(float(step) if step is not None else None)
        else:
            resolution = self.max_source_resolution
        with self._lock:
            self.sent.add(resolution)
        return {
            **params,
            "partial_response": "true" if self.partial_response else "false",
            "dedup": "true" if self.dedup else "false",
            "max_source_resolution": resolution,
        }

    def to_meta(self) -> dict[str, Any]:
        """``meta.json``'s ``extra["thanos"]``: what was asked and the resolutions actually sent."""
        with self._lock:
            sent = sorted(self.sent, key=RESOLUTIONS.index)
        return {
            "partial_response": self.partial_response,
            "dedup": self.dedup,
            "max_source_resolution": self.max_source_resolution,
            "resolutions_sent": sent,
        }

    def sentence(self) -> str:
        """One line for the terminal: what the querier was asked for."""
        meta = self.to_meta()
        levels = ", ".join(meta["resolutions_sent"]) or "none (no query sent)"
        raw = meta["resolutions_sent"] == ["0s"]
        return (
            f"Thanos: partial_response={str(self.partial_response).lower()}, "
            f"dedup={str(self.dedup).lower()}, max_source_resolution sent: {levels}"
            + (" (raw samples only)" if raw else " (downsampled blocks allowed where shown)")
        )

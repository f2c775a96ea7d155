"""A long range of the synthetic cluster generated a few days at a time (bounded memory).

``day_chunks(spec, first, last, step=3600, chunk_days=7)`` yields, oldest first, the UTC days of
each chunk and the cluster generated for them: ``spec`` with its ``start``, ``days`` and ``step``
replaced and its growth anchored where ``spec`` anchors it, so every chunk is the same cluster
(nodes, workloads, growth curves, per-day noise) at another time, and consecutive chunks continue
one another (``SyntheticSpec`` states how the random streams are split for that). Memory is that
of one chunk: ``chunk_days`` × the cluster × ``86400 / step`` samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

from analyzer.core.errors import InputError
from analyzer.sources.placement import Placer
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import SyntheticCluster, generate


def chunk_specs(
    spec: SyntheticSpec, first: date, last: date, *, step: int = 3600, chunk_days: int = 7
) -> list[tuple[list[date], SyntheticSpec]]:
    """The chunks covering the days ``first``..``last`` (both included): days and spec of each."""
    if last < first:
        raise InputError(f"history: the last day {last} comes before the first {first}")
    if chunk_days < 1:
        raise InputError(f"history: chunk_days {chunk_days} must be at least 1")
    if 86400 % step:
        raise InputError(f"history: the step {step}s must divide a day (86400 s)")
    anchor = spec.growth_anchor or spec.start
    chunks = []
    day = first
    while day <= last:
        days = [day + timedelta(days=k) for k in range(chunk_days) if day + timedelta(k) <= last]
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        chunk = replace(spec, start=start, days=len(days), step=step, growth_anchor=anchor)
        chunks.append((days, chunk))
        day = days[-1] + timedelta(days=1)
    return chunks


def day_chunks(
    spec: SyntheticSpec,
    first: date,
    last: date,
    *,
    step: int = 3600,
    chunk_days: int = 7,
    place: Placer | None = None,
) -> Iterator[tuple[list[date], SyntheticCluster]]:
    """Generate the chunks of :func:`chunk_specs` one at a time, oldest first."""
    for days, chunk in chunk_specs(spec, first, last, step=step, chunk_days=chunk_days):
        yield days, generate(chunk, place=place)

"""The nightly page's answers to its three questions, short on the first screen.

Which nodes ran hot, how fragmented the free capacity is, whether the data was complete: one
short answer each for the page's first screen (a number with its unit and its change), and the
fragmentation answer in full for its section further down (``fragmentation_detail``). Resources
whose FGD share says nothing about the cluster — almost no pod requests them, or most of the
share comes from shapes that request none — are one line in the short answer, not explained
at length (``docs/nightly.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analyzer.nightly.free_capacity import DEFINED_PCT
from analyzer.nightly.run import NightlyResult
from analyzer.report import format as fmt
from analyzer.report.views import Card


def _resource_name(resource: str) -> str:
    return {"cpu": "CPU", "memory": "memory"}.get(resource, resource)


def fragmentation_sentence(free: pd.DataFrame) -> str:
    """Every resource with capacity, from the table's own numbers (``free_table``).

    The FGD share of each, then stranded amounts, then why any share above 0 is what it is
    (a GPU share of 100 % most often means no common shape requests GPUs at all).
    """
    if free.empty:
        return "No free capacity could be measured (no node was seen during the day)."
    shares, stranded, reasons = [], [], []
    for row in free.itertuples(index=False):
        name = _resource_name(str(row.resource))
        if fmt.number_or_none(row.frag_pct) is None:
            shares.append(f"{name} no data (nothing free)")
            continue
        shares.append(f"{name} {fmt.pct(row.frag_pct)} of {fmt.number(row.free)} {row.unit} free")
        if fmt.number_or_none(row.stranded) is not None:  # no stranded rule: not measured
            stranded.append(f"{fmt.number(row.stranded)} {row.unit} of {name}")
        if row.frag_pct > 0.05:
            reasons.append(f"{name} at {fmt.pct(row.frag_pct)}: {row.reason}.")
    text = (
        "Share of free capacity the common pod shapes cannot use (FGD, mean over the day): "
        + ", ".join(shares)
        + "."
    )
    if stranded:
        text += " Stranded: " + ", ".join(stranded) + "."
    return " ".join([text, *reasons])


def _aside(row: Any) -> str | None:
    """The one-line note of a resource whose FGD share is not the cluster's state (None: it is).

    CPU and memory are always answered in full. Another resource is an aside when under
    ``DEFINED_PCT`` % of the common shapes' pods request it (its FGD is undefined for the data), or
    when shapes that request none of it make up most of its share (ephemeral-storage with no
    request in most shapes)."""
    if str(row.resource) in ("cpu", "memory") or fmt.number_or_none(row.frag_pct) is None:
        return None
    name = _resource_name(str(row.resource))
    asking = fmt.number_or_none(row.asking_pct)
    if asking is not None and asking < DEFINED_PCT:
        return f"{name} (under {DEFINED_PCT:.0f} % of common-shape pods request it)"
    if asking is not None and (100.0 - asking) > row.frag_pct / 2:
        return f"{name} {fmt.pct(row.frag_pct)} (most shapes request none)"
    return None


def fragmentation_answer(free: pd.DataFrame, cards: Sequence[Card] = ()) -> str:
    """The first screen's answer: FGD of the resources it means something for, with the CPU
    card's change, the stranded amounts and one line for the rest (details further down:
    :func:`fragmentation_sentence`)."""
    if free.empty:
        return "No free capacity could be measured (no node was seen during the day)."
    shares, stranded, asides = [], [], []
    change = {c.key: c for c in cards}.get("fragmentation_pct")
    for row in free.itertuples(index=False):
        name = _resource_name(str(row.resource))
        aside = _aside(row)
        if aside is not None:
            asides.append(aside)
            continue
        if fmt.number_or_none(row.frag_pct) is None:
            shares.append(f"{name} no data (nothing free)")
            continue
        delta = (
            f" ({change.delta_text} vs the previous run)"
            if row.resource == "cpu" and change is not None and change.delta is not None
            else ""
        )
        shares.append(
            f"{name} {fmt.pct(row.frag_pct)} of {fmt.number(row.free)} {row.unit} free{delta}"
        )
        if (fmt.number_or_none(row.stranded) or 0) > 0:  # 0 stranded is not news
            stranded.append(f"{fmt.number(row.stranded)} {row.unit} of {name}")
    text = "Unusable by common pod shapes (FGD): " + ", ".join(shares) + "."
    if stranded:
        text += " Stranded: " + ", ".join(stranded) + "."
    if asides:
        text += " Not meaningful here: " + ", ".join(asides) + "."
    return text


def headroom_sentence(result: NightlyResult, short: bool = False) -> str:
    """How many more pods of the most common shape fit, at the last instant that has data
    (``short``: without the shape's requests and why that instant, for the first screen)."""
    head = result.headroom
    if head.table.empty:
        return "Headroom: no pod shapes to count."
    first = head.table.iloc[0]
    if head.at is None or pd.isna(first["fit"]):
        return "Headroom: no data (no node was seen at any point of the day)."
    at = head.at
    when = "24:00 UTC" if at == result.end else f"{at:%H:%M} UTC"
    if short:
        return f"Headroom at {when}: {fmt.count(first['fit'])} more pods of the most common shape."
    last = " (end of the day)" if at == result.end else " (the last instant with data)"
    return (
        f"Headroom at {when}{last}: {fmt.count(first['fit'])} more pods of the most common "
        f"shape ({first['label']})."
    )


def build_answers(
    result: NightlyResult, free: pd.DataFrame, cards: Sequence[Card] = ()
) -> dict[str, str]:
    """One short answer each — which nodes ran hot, how fragmented, was the data complete — and
    ``fragmentation_detail``, the fragmentation answer in full for its section."""
    s = result.summary
    per_node = result.violations.per_node
    limits = ", ".join(f"{r} {v} %" for r, v in result.settings.thresholds.usage.items() if v)
    over = {c.key: c for c in cards}.get("nodes_with_breaches")
    change = (
        f" ({over.delta_text} vs the previous run)"
        if over is not None and over.delta is not None
        else ""
    )
    if s.breaches:
        top = ", ".join(
            f"{row.node} ({fmt.duration(row.breach_minutes * 60)}, peak "
            f"{fmt.pct(row.worst_pct, 0)} {row.worst_resource})"
            for row in per_node[per_node["breaches"] > 0].head(3).itertuples(index=False)
        )
        hot = (
            f"{fmt.count(s.nodes_with_breaches)} of {fmt.count(s.nodes)} nodes went over their "
            f"thresholds (cluster: {limits}) for {fmt.duration(s.breach_node_seconds, days=False)} "
            f"of node-time in {fmt.count(s.breaches)} breach{'' if s.breaches == 1 else 'es'}"
            f"{change}. Hottest: {top}."
        )
    else:
        hot = f"No node went over its thresholds (cluster: {limits}){change}."
    frag = fragmentation_answer(free, cards) + " " + headroom_sentence(result, short=True)
    detail = fragmentation_sentence(free) + " " + headroom_sentence(result)
    q = result.quality
    data = (
        f"{'Yes' if not q.partial else 'No'}: {fmt.pct(q.coverage * 100, 2)} of the expected "
        f"usage samples are present; {fmt.count(q.incomplete_nodes)} node(s) below "
        f"{fmt.pct(result.settings.min_coverage * 100, 0)}; {len(q.warnings)} source warning(s)."
    )
    return {"hot": hot, "fragmentation": frag, "data": data, "fragmentation_detail": detail}

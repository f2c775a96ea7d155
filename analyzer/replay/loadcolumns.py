"""LoadAwareScheduling for every node at once, one numpy pass per pod shape (the replay's
``LoadRows`` calls it when a new NodeMetric report made every row stale, or many rows changed).

Per (non-)prod variant the node side is kept as resource-major arrays, built whole once per
epoch with the plugin's own rules as columns and patched on the rows touched since (from the rows'
``_terms``): margins — the pod fails on node i where its estimate ``>= margin`` (``NO_MARGIN``:
unchecked, ``REFUSED``: the node refuses every pod) — and room ``capacity − base`` (``NO_SCORE``:
the score is 0). A shape then costs a few comparisons and one integer formula per resource over
contiguous columns. ``tests/test_replay_loadaware.py`` checks the result against the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.state import PodDemand

# ``rows`` below is the ``analyzer.replay.loadrows.LoadRows`` (typed ``Any``: that module
# imports this one)
LoadRows = Any

PASS, REFUSE, CHECK = 0, 1, 2  # the filter's verdict on a node before looking at the pod
NO_MARGIN = 1 << 62  # a margin no estimate reaches: the resource is not checked
REFUSED = -NO_MARGIN  # a margin every estimate reaches: the node refuses every (non-DaemonSet) pod
NO_SCORE = -NO_MARGIN  # room (capacity − base) that leaves no score for any estimate
# the replay's "infeasible" total (``analyzer.replay.scoring``)
LOWEST = int(np.iinfo(np.int64).min)
# node i's side for one pod variant: (PASS/REFUSE/CHECK, (resource, margin) pairs for CHECK,
# room per resource = capacity − base, or None when the score is 0)
Terms = tuple[int, list[tuple[int, int]], list[int] | None]


@dataclass(frozen=True)
class LoadShape:
    """The pod side of the plugin for one replay shape."""

    demand: PodDemand
    vector: tuple[int, ...]  # the incoming pod's estimate, in the plugin's resource order
    prod: bool
    daemonset: bool


def parts(rows: LoadRows, shape: LoadShape) -> tuple[BoolArray | None, Int64Array | None]:
    """(refused by the filter, weight × score) of every node; None: nowhere / 0 everywhere.

    Per resource k the filter fails where ``estimate_k >= margin_k`` and the score's part is
    ``(room_k − estimate_k) × 100 // capacity_k``, 0 where that is negative (used > capacity;
    ``NO_SCORE``: capacity 0, or no fresh metric): the plugin's ``(cap − used) × 100 // cap``,
    0 if used > cap, in the same integers, one contiguous column at a time."""
    margins, room = _arrays(rows, shape.prod)
    vector = shape.vector
    fails: BoolArray | None = None
    if rows.filter is not None and not shape.daemonset:
        for k, estimate in enumerate(vector):
            column = margins[k] <= estimate
            fails = column if fails is None else np.logical_or(fails, column, out=fails)
    if not rows.scoring:
        return fails, None
    weights, dominant = rows.weights, rows.args.dominant_weight
    numerator: Int64Array | None = None
    low: Int64Array | None = None
    for k, estimate in enumerate(vector):
        part = room[k] - estimate
        np.maximum(part, 0, out=part)
        part *= 100
        part //= rows.capacity_safe[k]
        if dominant > 0:
            low = part.copy() if low is None else np.minimum(low, part, out=low)
        if weights[k] != 1:
            part *= weights[k]
        numerator = part if numerator is None else np.add(numerator, part, out=numerator)
    assert numerator is not None
    if low is not None:
        low *= dominant
        numerator += low
    numerator //= rows.weight_sum
    if rows.weight != 1:
        numerator *= rows.weight
    return fails, numerator


def _arrays(rows: LoadRows, prod: bool) -> tuple[Int64Array, Int64Array]:
    """Per resource and node for a (non-)prod pod: the margins (the pod fails where its
    estimate ``>= margin``; ``NO_MARGIN`` where unchecked, ``REFUSED`` where the node refuses
    outright) and the room capacity − base (``NO_SCORE`` where the score is 0). Built whole
    once per epoch, then patched on the rows gone stale since."""
    variant = prod and rows.prod_matters
    arrays: tuple[Int64Array, Int64Array] | None = rows.arrays.get(variant)
    if arrays is None:
        arrays = rows.arrays[variant] = _build(rows, prod)
        rows.dirty[variant] = set()
        return arrays
    margins, room = arrays
    terms = rows.terms[1 if variant else 0]
    stale = list(rows.dirty[variant])
    if stale:
        fills, rooms = [], []
        checks: list[tuple[int, int, int]] = []  # (resource, row, margin)
        for at, i in enumerate(stale):
            known = terms[i]
            if known is None:
                known = terms[i] = rows._terms(i, prod)
            mode, pairs, rest = known
            fills.append(REFUSED if mode == REFUSE else NO_MARGIN)
            rooms.append(rest if rest is not None else [NO_SCORE] * rows.width)
            if mode == CHECK:
                checks += [(k, at, margin) for k, margin in pairs]
        block = np.repeat(np.array(fills, dtype=np.int64)[np.newaxis, :], rows.width, axis=0)
        for k, at, margin in checks:
            block[k, at] = margin
        margins[:, stale] = block
        room[:, stale] = np.array(rooms, dtype=np.int64).T
    rows.dirty[variant] = set()
    return arrays


def _build(rows: LoadRows, prod: bool) -> tuple[Int64Array, Int64Array]:
    """``_arrays`` for every node at once (the plugin's ``_threshold_sets``, ``_estimated``
    and expiry rules as whole columns; ``_terms`` is the same for one row)."""
    plugin, load, args = rows.plugin, rows.load, rows.args
    profiles = plugin._profiles(rows.state)
    prod_rows = profiles.prod_set & prod
    agg_rows = ~prod_rows & profiles.aggregated_set
    thresholds = np.where(
        prod_rows[:, np.newaxis],
        profiles.prod,
        np.where(agg_rows[:, np.newaxis], profiles.aggregated, profiles.usage),
    )
    active = thresholds.any(axis=1) & load.has_metric
    expired = active & args.filter_expired & rows.expired
    refuse = expired & (args.enable_when_expired is False)
    check = active & ~expired & load.metric_present
    normal = load.node_usage + load.node_delta
    base = normal
    if agg_rows.any():
        agg = plugin._aggregated_base(load, profiles.aggregated_groups, normal)
        base = np.where(agg_rows[:, np.newaxis], agg, base)
    if prod_rows.any():
        base = np.where(prod_rows[:, np.newaxis], load.prod_usage + load.prod_delta, base)
    cutoffs = np.where(
        prod_rows[:, np.newaxis],
        _cutoff_table(rows, 1),
        np.where(agg_rows[:, np.newaxis], _cutoff_table(rows, 2), _cutoff_table(rows, 0)),
    )
    checked = check[:, np.newaxis] & (cutoffs != NO_MARGIN)
    margins = np.where(checked, cutoffs - base, NO_MARGIN).astype(np.int64)
    score_prod = args.score_according_prod and prod
    if score_prod:
        score_base = load.prod_usage + load.prod_delta
    elif rows.score_agg:
        score_base = plugin._aggregated_base(load, {rows.score_key: None}, normal)
    else:
        score_base = normal
    usable = load.has_metric & load.metric_present & ~rows.expired
    capacity = profiles.allocatable
    scored = usable[:, np.newaxis] & (capacity > 0)  # capacity 0 scores 0 whatever the base
    room = np.where(scored, capacity - score_base, NO_SCORE)
    margins[refuse] = REFUSED
    return (
        np.ascontiguousarray(margins.T, dtype=np.int64),
        np.ascontiguousarray(room.T, dtype=np.int64),
    )


def _cutoff_table(rows: LoadRows, table: int) -> Int64Array:
    """Threshold set ``table``'s fail cutoffs of every node (``NO_MARGIN``: unchecked)."""
    known: Int64Array | None = rows.cutoff_tables.get(table)
    if known is None:
        known = np.full((rows.state.node_count, rows.width), NO_MARGIN, dtype=np.int64)
        for i in range(rows.state.node_count):
            for k, cut in rows._cutoffs(table, i):
                known[i, k] = cut
        rows.cutoff_tables[table] = known
    return known

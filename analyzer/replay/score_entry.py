"""One pod shape's cached node totals in the replay's score caches (``analyzer.replay.scoring``)
and how a node is chosen from them: the highest feasible total, ties uniform via the seeded
generator (``framework.select``'s rule), over the nodes the scheduler finds (``choose_sampled``)
or with the static scores normalised over the feasible nodes of the moment (``choose_static``);
``track_best`` keeps the best total and its ties as rows change.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from analyzer.replay.loadcolumns import LoadShape
from analyzer.replay.node_tree import NodeSampler
from analyzer.replay.score_plan import Plan
from analyzer.replay.tree_mirror import TreeMirror
from analyzer.replay.zone_bests import ZoneBests
from analyzer.scheduling.arith import BoolArray, Int64Array

LOWEST = np.iinfo(np.int64).min


@dataclass
class Entry:
    plan: Plan
    demand_checked: Int64Array
    masked: Int64Array  # total where feasible, LOWEST elsewhere (see ``pending``)
    position: int  # how far into the change log the rows are up to date (-1: none computed)
    pair: tuple[int, ...] | None = None  # constants of the inlined cpu/memory form, if it applies
    best: int | None = None  # highest feasible total, kept up to date by small refreshes
    ties: list[int] = field(default_factory=list)  # nodes at ``best``, ascending
    pending: dict[int, int] = field(default_factory=dict)  # row values not yet in ``masked``
    # load-aware profiles: ``masked`` = resource part + load-aware part; the resource part alone
    # (LOWEST where infeasible) is kept in ``res`` so a NodeMetric report recomputes only its half
    load: LoadShape | None = None
    res: Int64Array | None = None
    res_pending: dict[int, int] = field(default_factory=dict)
    load_position: int = 0  # how far into ``LoadRows.log`` the load-aware part is up to date
    load_epoch: int = -1  # the ``LoadRows.epoch`` it was computed in (-1: never)
    spread: ZoneBests | None = None  # per-zone bests, built for default-spread pods only
    epoch: int = 0  # the ``ScoreCache.epoch`` of node taints/cordons its static part was built in
    mirror: TreeMirror | None = None  # ``masked`` in node list order, for the sampled choice

    def rewritten(self) -> None:
        """``masked`` was rewritten in bulk: its kept bests are unknown."""
        self.best = None
        self.spread = None
        if self.mirror is not None:
            self.mirror.invalidate()

    def flush(self) -> None:
        """Write the small refreshes' values into ``masked`` (before reading it as a whole)."""
        if self.pending:
            self.masked[list(self.pending)] = list(self.pending.values())
            self.pending.clear()
        if self.res_pending:
            assert self.res is not None
            self.res[list(self.res_pending)] = list(self.res_pending.values())
            self.res_pending.clear()


def choose_sampled(entry: Entry, rng: np.random.Generator, sampler: NodeSampler) -> int | None:
    """The plain choice over the nodes the scheduler finds (``NodeSampler.rows``): the highest
    cached total among them, ties uniform in ascending row order."""
    mirror = entry.mirror
    if mirror is None:
        mirror = entry.mirror = TreeMirror(entry.masked, LOWEST)
    if mirror.version != sampler.version:  # (``sampler.active`` re-read a changed list)
        entry.flush()  # the mirror is rebuilt from ``masked``
    ties = sampler.choose(mirror)
    if not ties:
        return None  # fits nowhere: upstream processed every node, the index stays
    if len(ties) == 1:
        return ties[0]
    return ties[int(rng.integers(len(ties)))]


def choose_static(
    entry: Entry,
    rng: np.random.Generator,
    fixed: Int64Array | None = None,
    sample: Callable[[BoolArray], BoolArray] | None = None,
) -> int | None:
    """Selection with static score plugins normalised over the feasible nodes of this moment,
    plus the ``fixed`` scores (ImageLocality: no normalisation) when given.

    A normalised score depends on the raw score and on the max raw score over the feasible nodes
    only, so the weighted sum is kept per tuple of maxima; infeasible nodes stay far below any
    feasible one (LOWEST plus at most a few hundred).
    """
    entry.flush()
    feasible = entry.masked != LOWEST
    if not feasible.any():
        return None
    if sample is not None:  # normalised over the nodes found only, as upstream's NormalizeScore
        feasible = sample(feasible)
    plan = entry.plan
    total = entry.masked
    if plan.static:
        peaks = tuple(int(raw[feasible].max()) for _, _, raw in plan.static)
        extra = plan.static_sums.get(peaks)
        if extra is None:
            extra = np.zeros(len(feasible), dtype=np.int64)
            for (plugin, weight, raw), peak in zip(plan.static, peaks, strict=True):
                extra += weight * plugin.normalize(raw, raw <= peak)  # its max over these is peak
            plan.static_sums[peaks] = extra
        total = total + extra
    if fixed is not None:
        total = total + fixed
    if sample is not None:
        candidates = np.flatnonzero(feasible)
        values = total[candidates]
        ties = candidates[values == values.max()]
    else:
        ties = np.flatnonzero(total == total.max())
    if len(ties) == 1:
        return int(ties[0])
    return int(ties[int(rng.integers(len(ties)))])


def track_best(entry: Entry, rows: list[int], values: list[int]) -> None:
    """Update the best total and its (ascending) tie list after ``rows`` got ``values``.

    Equivalent to recomputing ``flatnonzero(masked == masked.max())``; when the tie list empties
    the best is unknown again and ``choose`` recomputes it from the whole array. The entry's
    per-zone bests (default spreading) follow the same rows.
    """
    if entry.spread is not None:
        entry.spread.update(rows, values)
    if entry.mirror is not None:
        entry.mirror.write(rows, values)
    best = entry.best
    if best is None:
        return
    ties = entry.ties
    for node, value in zip(rows, values, strict=True):
        at = bisect.bisect_left(ties, node)
        present = at < len(ties) and ties[at] == node
        if value > best:
            best, ties = value, [node]
        elif value == best:
            if not present:
                ties.insert(at, node)
        elif present:
            del ties[at]
    if not ties or best == LOWEST:
        entry.best, entry.ties = None, []
    else:
        entry.best, entry.ties = best, ties

"""PodTopologySpread's System default constraints in a replay, without ``Profile.evaluate``.

With the snapshot's ReplicaSets / StatefulSets / Services, nearly every replicated pod gets the
System default constraints (hostname maxSkew 3 + zone maxSkew 5, both ScheduleAnyway, selector
from ``helper.DefaultSelector``). For a pod whose *only* topology work is those defaults (no own
constraints, no pod (anti-)affinity terms, no placed pod's terms matching it — ``TopologyCheck``
decides), PodTopologySpread never filters, and its score is a function of few numbers:

- per node, the selector group's matching pods ``cnt`` (sparse: at most the group's replicas
  are non-zero), kept incrementally here per group (namespace, selector) from the pod index's
  binds and unbinds (``count``, a ``PodIndex`` listener);
- per zone, the group's count over the nodes the pod's node affinity admits
  (``nodeAffinityPolicy: Honor``; taints are Ignored for the defaults), kept per zone as well;
- the feasible nodes: ``|F|`` (hostname weight ``ln(|F| + 2)``) and the zones they register
  (zone weight ``ln(Z + 2)``, only registered zones count).

So every node without a matching pod scores a raw ``round(2 + C_zone · w_z + 4)`` that depends on
its zone alone, and only the group's occupied nodes need their own arithmetic. ``totals`` adds
the profile's weight × the normalised score (``100 · (max + min − s) / max``, Go int64 division,
all 100 when max is 0) to the cache's resource totals with one gather per zone value and patches
the occupied nodes — the same totals and tie set as ``TopologyCheck.choose`` (equivalence:
``tests/test_replay_default_spread.py``). The replay does not build them: the highest total is an
occupied node's or, in some zone, the best resource total among the zone's free feasible nodes
plus the zone's bonus, so ``choose`` with the score-cache entry (``kept_ties``) reads the entry's
per-zone bests (``zone_bests``) and draws among the same ascending ties exactly as
``Profile.select`` does, in O(zones + occupied nodes) (``tests/test_replay_zone_bests.py``).
Cases it does not cover (a node without the hostname label, a zone label with the empty value,
static score plugins whose raw score varies) return ``UNHANDLED`` and the pod goes through
``TopologyCheck.choose``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from analyzer.replay.zone_bests import Kept, ZoneBests, nth
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.label_selectors import LabelSelector
from analyzer.scheduling.plugins.helper.node_constraints import affinity_mask
from analyzer.scheduling.plugins.podtopologyspread import (
    HOSTNAME,
    MAX_NODE_SCORE,
    SYSTEM_DEFAULTS,
    ZONE,
)
from analyzer.scheduling.pod_index import domains
from analyzer.scheduling.state import ClusterState, PodDemand

LOWEST = np.iinfo(np.int64).min
_HOST_SKEW = SYSTEM_DEFAULTS[0].max_skew - 1  # 2: hostname maxSkew 3
_ZONE_SKEW = SYSTEM_DEFAULTS[1].max_skew - 1  # 4: zone maxSkew 5
UNHANDLED = -1
ZONE_MASKS = 16  # up to this many zone values, per-zone node masks (else a bincount per pod)  # ``choose``: this case is not covered here, use ``TopologyCheck.choose``
_LabelKey = tuple[str, frozenset[tuple[str, str]]]  # (namespace, labels) of placed pods


@dataclass
class _Group:
    """One (namespace, selector): its matching live pods per node (sparse) and per zone slot."""

    nodes: dict[int, int] = field(default_factory=dict)
    zones: list[int] = field(default_factory=list)  # per zone slot


class DefaultSpread:
    """Per-selector counts kept on bind/unbind and the exact System-default score per pod."""

    def __init__(self, state: ClusterState, weight: int) -> None:
        self.state = state
        self.weight = weight
        zone = domains(state, ZONE)
        host = domains(state, HOSTNAME)
        self.handled = bool((host.ids >= 0).all()) and "" not in zone.values
        self.width = len(zone.values) + 1  # the last slot: nodes without the zone label
        self.slot = np.where(zone.ids < 0, len(zone.values), zone.ids).astype(np.int64)
        self.slot_list: list[int] = self.slot.tolist()
        self.zone_masks: list[BoolArray | None] | None = None
        if self.width <= ZONE_MASKS:
            self.zone_masks = [(m if m.any() else None)
                               for m in (self.slot == z for z in range(self.width))]  # fmt: skip
        self.labelled = np.ones(self.width, dtype=bool)
        self.labelled[-1] = False  # nodes without the label: no zone contribution
        self.labelled_list: list[bool] = self.labelled.tolist()
        self._groups: dict[tuple[str, LabelSelector], _Group] = {}
        self._by_id: dict[tuple[str, int], tuple[LabelSelector, _Group]] = {}
        self._label_nodes: dict[_LabelKey, dict[int, int]] = {}  # live pods per label group
        self._targets: dict[_LabelKey, list[_Group]] = {}
        # matching without the cross product (tens of thousands of ReplicaSets): selectors by
        # the (namespace, key, value) pairs of their first ``In`` requirement (``_anchor``),
        # label groups by each of their pairs
        self._selectors_at: dict[tuple[str, str, str], list[tuple[LabelSelector, _Group]]] = {}
        self._loose: dict[str, list[tuple[LabelSelector, _Group]]] = {}  # no In requirement
        self._labels_at: dict[tuple[str, str, str], list[_LabelKey]] = {}
        self._labels_in: dict[str, list[_LabelKey]] = {}
        # id(pod.constraints) -> (constraints, the nodes its node affinity admits or None for
        # every node); the constraints object is kept so its id stays unique
        self._admitted: dict[int, tuple[object, BoolArray | None]] = {}
        index = state.pod_index
        if index is not None:  # the pods bound so far, then each bind / unbind as it happens
            for key, per_node in index.live_groups():
                for node, live in per_node.items():
                    self.count(node, key, live)
            index.listeners.append(self.count)

    # ------------------------------------------------------------------ counts

    def count(self, node: int, key: _LabelKey, step: int) -> None:
        """``step`` live pods of label group ``key`` (namespace, labels) bound to ``node``
        (negative: removed); ``PodIndex`` calls this on every bind / unbind."""
        per_node = self._label_nodes.get(key)
        if per_node is None:
            per_node = self._new_label_group(key)
        left = per_node.get(node, 0) + step
        if left:
            per_node[node] = left
        else:
            per_node.pop(node, None)
        slot = self.slot_list[node]
        for group in self._targets[key]:
            nodes = group.nodes
            left = nodes.get(node, 0) + step
            if left:
                nodes[node] = left
            else:
                nodes.pop(node, None)
            group.zones[slot] += step

    def group(self, namespace: str, selector: LabelSelector) -> _Group:
        """The counts of ``selector`` in ``namespace`` (built from the label groups once)."""
        held = self._by_id.get((namespace, id(selector)))  # callers reuse selector objects
        if held is not None and held[0] is selector:
            return held[1]
        found = self._groups.get((namespace, selector))
        if found is None:
            found = self._new_group(namespace, selector)
        self._by_id[(namespace, id(selector))] = (selector, found)
        return found

    def _new_group(self, namespace: str, selector: LabelSelector) -> _Group:
        group = _Group(zones=[0] * self.width)
        self._groups[(namespace, selector)] = group
        if selector.empty or selector.nothing:  # countPodsMatchSelector: 0 (nil: none match)
            return group
        anchor = _anchor(selector)
        if anchor is None:
            self._loose.setdefault(namespace, []).append((selector, group))
            candidates = self._labels_in.get(namespace, [])
        else:
            key, values = anchor
            candidates = []
            for value in values:
                self._selectors_at.setdefault((namespace, key, value), []).append((selector, group))
                candidates += self._labels_at.get((namespace, key, value), [])
        for label_key in candidates:
            if selector.matches(dict(label_key[1])):
                self._targets[label_key].append(group)
                for node, live in self._label_nodes[label_key].items():
                    group.nodes[node] = group.nodes.get(node, 0) + live
                    group.zones[self.slot_list[node]] += live
        return group

    def _new_label_group(self, key: _LabelKey) -> dict[int, int]:
        """Register the label group ``key`` and find the kept selectors it feeds."""
        namespace, pairs = key
        labels = dict(pairs)
        per_node: dict[int, int] = {}
        self._label_nodes[key] = per_node
        self._labels_in.setdefault(namespace, []).append(key)
        targets = []
        for name, value in pairs:
            self._labels_at.setdefault((namespace, name, value), []).append(key)
            for selector, group in self._selectors_at.get((namespace, name, value), ()):
                if selector.matches(labels):
                    targets.append(group)
        for selector, group in self._loose.get(namespace, ()):
            if selector.matches(labels):
                targets.append(group)
        self._targets[key] = targets
        return per_node

    # ------------------------------------------------------------------ choice

    def choose(
        self,
        masked: Int64Array,
        state: ClusterState,
        pod: PodDemand,
        selector: LabelSelector,
        rng: np.random.Generator,
        kept: Kept | None = None,
    ) -> int | None:
        """``select`` over the resource totals ``masked`` (``LOWEST``: infeasible) plus the
        weighted System-default score of ``pod`` (selector ``selector``); ``UNHANDLED`` when
        this case is left to ``TopologyCheck.choose``. ``kept``: the score-cache entry whose
        flushed ``masked`` this is — its per-zone bests (``zone_bests``) replace the passes
        over every node; without it, ``totals`` (the reference)."""
        if not self.handled:
            return UNHANDLED
        if kept is not None:
            return self._choose_kept(kept, masked, state, pod, selector, rng)
        total = self.totals(masked, state, pod, selector)
        if total is None:
            return None
        best = total.max()
        ties = np.flatnonzero(total == best)
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[int(rng.integers(len(ties)))])

    def _choose_kept(
        self,
        kept: Kept,
        masked: Int64Array,
        state: ClusterState,
        pod: PodDemand,
        selector: LabelSelector,
        rng: np.random.Generator,
    ) -> int | None:
        """``choose`` from the entry's per-zone bests: the same maximum, the same ascending tie
        list and the same draw as ``flatnonzero(totals == totals.max())``."""
        found = self.kept_ties(kept, masked, state, pod, selector)
        if found is None:
            return None
        parts, minus = found
        count = sum(len(p) for p in parts) - len(minus)
        if count == 1:
            return nth(parts, minus, 0)
        return nth(parts, minus, int(rng.integers(count)))

    def kept_ties(
        self, kept: Kept, masked: Int64Array, state: ClusterState, pod: PodDemand,
        selector: LabelSelector,
    ) -> tuple[list[list[int]], list[int]] | None:  # fmt: skip
        """The nodes at the highest total, as disjoint ascending lists minus the ascending
        ``minus`` (``zone_bests.nth`` reads them in order), from the entry ``kept``'s per-zone
        bests (built on first use): O(zones + occupied nodes) unless a zone's best nodes are
        all occupied. None: no node is feasible. ``masked``: ``kept``'s, flushed."""
        zones = kept.spread
        if zones is None:
            zones = kept.spread = ZoneBests(masked, self.slot_list, self._members())
        scored = self._score(zones.count, masked, state, pod, selector)
        if scored is None:
            return None
        bonus, occupied, taken = scored
        best = LOWEST
        parts: list[list[int]] = []
        minus: list[int] = []
        for slot, (n, mine) in enumerate(zip(zones.count, taken, strict=True)):
            if n <= len(mine):  # no feasible node of this slot is free of the group's pods
                continue
            top, ties, inside = zones.best_without(slot, masked, mine, kept)
            value = top + bonus[slot]
            if value > best:
                best, parts, minus = value, [ties], inside
            elif value == best:
                parts.append(ties)
                minus = sorted(minus + inside) if inside else minus
        if occupied:  # the group's nodes: their own totals
            higher = max(occupied.values())
            if higher > best:
                best, parts, minus = higher, [], []
            if higher == best:
                parts.append(sorted(node for node, total in occupied.items() if total == best))
        return parts, minus

    def _members(self) -> list[Int64Array | None]:
        """The nodes of each zone slot (None for the only slot: every node)."""
        if self.width == 1:
            return [None]
        order = np.argsort(self.slot, kind="stable")
        bounds = np.searchsorted(self.slot[order], np.arange(self.width + 1))
        return [order[bounds[z] : bounds[z + 1]] for z in range(self.width)]

    def totals(
        self, masked: Int64Array, state: ClusterState, pod: PodDemand, selector: LabelSelector
    ) -> Int64Array | None:
        """``masked`` + weight × the normalised System-default score on the feasible nodes
        (infeasible ones stay far below; None: no node is feasible). Needs ``handled``.
        The reference of ``choose``'s kept path: one pass over every node."""
        feasible = masked != LOWEST
        if self.zone_masks is not None:  # a few zones: one AND and count per zone
            per_zone = [0 if m is None else int(np.count_nonzero(feasible & m))
                        for m in self.zone_masks]  # fmt: skip
        else:
            per_zone = np.bincount(self.slot[feasible], minlength=self.width).tolist()
        scored = self._score(per_zone, masked, state, pod, selector)
        if scored is None:
            return None
        bonus, fix, _taken = scored
        if len(set(bonus)) == 1:  # one zone value (or none labelled): no gather
            total = masked + bonus[0]
        else:
            total = np.array(bonus, dtype=np.int64).take(self.slot)
            total += masked  # infeasible nodes stay far below any feasible one
        if fix:
            total[list(fix)] = list(fix.values())
        return total

    def _score(
        self,
        per_zone: list[int],
        masked: Int64Array,
        state: ClusterState,
        pod: PodDemand,
        selector: LabelSelector,
    ) -> tuple[list[int], dict[int, int], list[list[int]]] | None:
        """From the feasible-node count per zone slot: weight × the normalised score of a
        feasible node without a matching pod, per slot; the total (``masked`` + weight × its
        score) of each feasible node holding matching pods; those nodes per slot.
        None: no node is feasible. (Plain loops: this runs once per spread pod.)"""
        size = sum(per_zone)
        if size == 0:
            return None
        group = self.group(pod.namespace, selector)
        w_host = math.log(size + 2)
        w_zone = math.log(len(per_zone) - per_zone.count(0) + 2)  # registered domains
        held = self._admitted.get(id(pod.constraints))  # demands share constraints objects
        if held is None or held[0] is not pod.constraints:
            mask = affinity_mask(state, pod)
            held = self._admitted[id(pod.constraints)] = (
                pod.constraints,
                None if mask.all() else mask,
            )
        admitted = held[1]
        if admitted is None:
            zone_counts = group.zones
        else:  # only pods on nodes the pod's node affinity admits count (Honor)
            zone_counts = [0] * self.width
            for node, cnt in group.nodes.items():
                if admitted[node]:
                    zone_counts[self.slot_list[node]] += cnt
        # float64 sums in upstream's order: hostname contribution (``_host``: 2.0 for a node
        # without matching pods), then zone; only domains registered by a feasible node
        # receive counts; nodes without the zone label get no zone part (None)
        zone_part: list[float | None] = []
        empty_raw: list[int] = []
        for c, n, labelled in zip(zone_counts, per_zone, self.labelled_list, strict=True):
            if labelled:
                z = float(c if n else 0) * w_zone + _ZONE_SKEW
                zone_part.append(z)
                empty_raw.append(_round(2.0 + z))
            else:
                zone_part.append(None)
                empty_raw.append(_HOST_SKEW)
        # the group's feasible nodes: their raw scores and resource totals, and per slot
        nodes: list[int] = []
        raws: list[int] = []
        bases: list[int] = []
        taken: list[list[int]] = [[] for _ in per_zone]
        if group.nodes:
            item, slots = masked.item, self.slot_list
            for node, cnt in group.nodes.items():
                base = item(node)
                if base != LOWEST:
                    slot = slots[node]
                    part = zone_part[slot]
                    raw = 0.0 + (float(cnt) * w_host + _HOST_SKEW)  # ``_host``, inlined
                    if part is not None:
                        raw = raw + part
                    whole = int(raw)  # ``_round``, inlined (raw > 0)
                    nodes.append(node)
                    raws.append(whole + 1 if raw - whole >= 0.5 else whole)
                    bases.append(base)
                    taken[slot].append(node)
        every = raws + [r for r, n, mine in zip(empty_raw, per_zone, taken, strict=True)
                        if n > len(mine)]  # fmt: skip
        high, low = max(max(every), 0), min(every)
        weight, top = self.weight, MAX_NODE_SCORE
        if high == 0:  # every score is 100
            fix = {node: base + weight * top for node, base in zip(nodes, bases, strict=True)}
            return [weight * top] * self.width, fix, taken
        bonus = [weight * (top * (high + low - r) // high) for r in empty_raw]
        fix = {node: base + weight * (top * (high + low - r) // high)
               for node, r, base in zip(nodes, raws, bases, strict=True)}  # fmt: skip
        return bonus, fix, taken


def _anchor(selector: LabelSelector) -> tuple[str, tuple[str, ...]] | None:
    """The key and values of the selector's first ``In`` requirement: a pod it matches carries
    one of those (key, value) pairs (None: no ``In`` requirement)."""
    for requirement in selector.requirements:
        if requirement.operator == "In":
            return requirement.key, tuple(requirement.values)
    return None


def _round(value: float) -> int:
    """Go ``math.Round`` of a non-negative float (``arith.go_round`` without numpy scalars:
    ``value − trunc(value)`` is exact)."""
    whole = math.trunc(value)
    return whole + 1 if value - whole >= 0.5 else whole


def _host(cnt: int, weight: float) -> float:
    """The hostname constraint's float64 contribution (``0 + cnt · w + maxSkew − 1``)."""
    return 0.0 + (float(cnt) * weight + _HOST_SKEW)

"""percentageOfNodesToScore: how many feasible nodes kube-scheduler looks for, and its node order.

Upstream (``pkg/scheduler/schedule_one.go``, unchanged from 1.29 to 1.36 in what is modelled here):

- ``numFeasibleNodesToFind(profilePercentage, n)``: below ``MIN_FEASIBLE_NODES_TO_FIND`` (100)
  nodes every node; else the profile's ``percentageOfNodesToScore`` when set, otherwise the
  global one (``KubeSchedulerConfiguration.percentageOfNodesToScore``, default 0); 0 means
  adaptive, ``50 - n / 125`` (integer division) but at least ``MIN_FEASIBLE_NODES_PERCENTAGE``
  (5); the count is ``n * percentage / 100`` (integer), at least 100. All int32 arithmetic;
  nothing here comes near its range.
- ``findNodesThatPassFilters`` filters ``nodes[(nextStartNodeIndex + i) % n]`` and stops once
  that many nodes passed; ``findNodesThatFitPod`` then moves ``nextStartNodeIndex`` forward by
  the nodes processed (feasible found + infeasible examined), modulo the node count.
- The node list is the cache's node tree (``pkg/scheduler/backend/cache/node_tree.go``): zones in
  the order their first node was added, visited round robin; inside a zone, nodes in the order
  they were added; a removed node leaves its zone's list (order kept), an emptied zone leaves the
  zone list. The zone key is ``GetZoneKey`` (``k8s.io/component-helpers/node/topology``): region
  and zone from ``topology.kubernetes.io/{region,zone}``, else the ``failure-domain.beta``
  labels; both empty gives the zone ``""``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5
ADAPTIVE = 0  # DefaultPercentageOfNodesToScore: the adaptive formula
ZONE_LABEL, REGION_LABEL = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"

Int64Array = np.ndarray[Any, np.dtype[np.int64]]


def num_feasible_nodes_to_find(
    nodes: int, profile_percentage: int | None = None, global_percentage: int = ADAPTIVE
) -> int:
    """How many feasible nodes the scheduler stops at among ``nodes`` (upstream's
    ``numFeasibleNodesToFind``); the profile's value wins over the global one when set."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    percentage = global_percentage if profile_percentage is None else profile_percentage
    if percentage == ADAPTIVE:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def parse_percentage(raw: Any, where: str) -> int | None:
    """A ``percentageOfNodesToScore`` field (None when absent); validated as upstream (0..100)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"{where}: {preview(raw)} is not an integer (use 0..100; 0 = adaptive)")
    if not 0 <= raw <= 100:
        raise InputError(
            f"{where}: Invalid value: {raw}: not in valid range [0-100] (0 = adaptive, 100 = all)"
        )
    return raw


def zone_key(labels: Mapping[str, str]) -> str:
    """Upstream's ``GetZoneKey``: region and zone joined (``""`` when the node has neither)."""
    zone = labels.get(ZONE_LABEL, labels.get(BETA_ZONE_LABEL, ""))
    region = labels.get(REGION_LABEL, labels.get(BETA_REGION_LABEL, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def round_robin(zones: Sequence[Sequence[int]]) -> list[int]:
    """The node tree's ``list()``: the first node of each zone, then the second of each, ..."""
    return round_robin_array(zones).tolist()  # type: ignore[no-any-return]


def round_robin_array(zones: Sequence[Sequence[int]]) -> Int64Array:
    """``round_robin`` as an array: the nodes sorted by (place in their zone, zone), one sort
    instead of a Python step per node (the replay rebuilds the list at every join and leave)."""
    lengths = [len(z) for z in zones]
    total = sum(lengths)
    if not total:
        return np.zeros(0, dtype=np.int64)
    nodes = np.fromiter(itertools.chain.from_iterable(zones), dtype=np.int64, count=total)
    zone = np.repeat(np.arange(len(zones), dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths  # where each zone begins in ``nodes``
    depth = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
    return nodes[np.lexsort((zone, depth))]


def found_nodes(
    feasible_in_order: np.ndarray[Any, np.dtype[np.bool_]], start: int, wanted: int
) -> tuple[Int64Array, int]:
    """Positions (in tree order) of the first ``wanted`` feasible nodes from ``start`` on,
    wrapping round, and how many nodes were processed to find them (all when fewer exist).

    One cumulative sum instead of a per-node loop: the count of feasible nodes before each
    position tells where the ``wanted``-th one from ``start`` sits.
    """
    n = len(feasible_in_order)
    counts = np.cumsum(feasible_in_order, dtype=np.int64)
    total = int(counts[-1]) if n else 0
    before = int(counts[start - 1]) if start > 0 else 0
    positions = np.flatnonzero(feasible_in_order)
    if total <= wanted:  # every node examined; all feasible ones kept
        head = positions[positions >= start]
        return np.concatenate([head, positions[positions < start]]), n
    tail = total - before  # feasible nodes at positions >= start
    if tail >= wanted:
        first = before  # index into ``positions`` of the first feasible at/after start
        chosen = positions[first : first + wanted]
        return chosen, int(chosen[-1]) - start + 1
    chosen = np.concatenate([positions[before:], positions[: wanted - tail]])
    return chosen, n - start + int(chosen[-1]) + 1


def initial_order(
    names: Sequence[str], labels: Sequence[Mapping[str, str]], present: Sequence[bool]
) -> list[int]:
    """The node list of a scheduler that has just started over the ``present`` nodes: its
    initial LIST (by name) added one by one to the node tree, then ``list()``."""
    zones: dict[str, list[int]] = {}
    rows = sorted((i for i, here in enumerate(present) if here), key=lambda i: (names[i], i))
    for i in rows:
        zones.setdefault(zone_key(labels[i]), []).append(i)
    return round_robin(list(zones.values()))

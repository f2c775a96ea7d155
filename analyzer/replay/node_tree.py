"""kube-scheduler's node tree and rotating start index, over a replay's present nodes.

The scheduler looks for only ``numFeasibleNodesToFind`` feasible nodes per pod
(``analyzer.scheduling.node_sampling``), walking its node list from ``nextStartNodeIndex``. The
list is the cache's node tree: zones round robin, inside a zone the order nodes were added. The
order a real cache added nodes is not in the data; it is inferred here: the nodes present when the
replay starts in name order (the informer's initial LIST returns them sorted by name), then every
node that joins appended when it joins (the engine joins them in ``first_seen`` order). A node that
leaves leaves its zone's list, as upstream's ``removeNode``.

``NodeSampler.found`` takes a feasibility mask over the state's rows and returns the mask of the
nodes the scheduler would have found, advancing the start index by the nodes it processed; with
fewer than 100 present nodes (or ``percentageOfNodesToScore: 100``) it is the identity and never
called by the score cache (``active``).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analyzer.replay.tree_mirror import TreeMirror
from analyzer.scheduling.node_sampling import (
    found_nodes,
    num_feasible_nodes_to_find,
    round_robin_array,
    zone_key,
)

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


class NodeTree:
    """Zones (in the order their first node came) and their nodes (in the order they came)."""

    def __init__(self, labels: Sequence[Mapping[str, str]]) -> None:
        self.keys = [zone_key(node_labels) for node_labels in labels]
        self.zones: dict[str, list[int]] = {}  # insertion-ordered, as upstream's ``zones``
        self.members: set[int] = set()
        self._order: Int64Array | None = None
        self._doubled: Int64Array | None = None
        self.version = 0  # changes of the node list so far
        self.moved: list[int] = []  # the row of each change (``version`` long)

    def add(self, node: int) -> None:
        """Upstream's ``addNode``: append to its zone (a new zone goes last)."""
        if node in self.members:
            return
        self.members.add(node)
        self.zones.setdefault(self.keys[node], []).append(node)
        self._order = self._doubled = None
        self.version += 1
        self.moved.append(node)

    def remove(self, node: int) -> None:
        """Upstream's ``removeNode``: out of its zone's list; an emptied zone is dropped."""
        if node not in self.members:
            return
        self.members.discard(node)
        key = self.keys[node]
        zone = self.zones[key]
        zone.remove(node)
        if not zone:
            del self.zones[key]
        self._order = self._doubled = None
        self.version += 1
        self.moved.append(node)

    def order(self) -> Int64Array:
        """The node list (``nodeTree.list()``) as state rows; rebuilt only after a change."""
        if self._order is None:
            self._order = round_robin_array(list(self.zones.values()))
        return self._order

    def doubled(self) -> Int64Array:
        """``order`` twice in a row: a window from any start index is one slice."""
        if self._doubled is None:
            order = self.order()
            self._doubled = np.concatenate([order, order])
        return self._doubled


class NodeSampler:
    """``numFeasibleNodesToFind`` + ``nextStartNodeIndex`` over a ``NodeTree`` of present nodes."""

    def __init__(
        self, percentage: int, labels: Sequence[Mapping[str, str]], names: Sequence[str]
    ) -> None:
        self.percentage = percentage
        self.tree = NodeTree(labels)
        self.names = names
        self.start = 0  # nextStartNodeIndex
        self.rows_count = len(names)
        # the node list as of ``version``: its length, its rows twice (a window from any start
        # index is one slice), each row's position in it (-1: not present), numFeasibleNodesToFind
        self.version = -1
        self.size = 0
        self.doubled: Int64Array = np.zeros(0, dtype=np.int64)
        self.position: list[int] = []
        self._wanted = 0
        self._refresh()

    def begin(self, active: BoolArray) -> None:
        """The nodes present at the start, added in name order (the initial LIST)."""
        present = np.flatnonzero(active).tolist()
        for node in sorted(present, key=lambda row: (self.names[row], row)):
            self.tree.add(node)
        self._refresh()

    def membership(self, node: int, present: bool) -> None:
        """Node ``node`` joined (appended to its zone) or left (removed); the node list is
        re-read at its next use (cluster-autoscaler adds and removes several at one instant)."""
        if present:
            self.tree.add(node)
        else:
            self.tree.remove(node)

    def _refresh(self) -> None:
        """Re-read the node list after a change, at its first use after it (``wanted``,
        ``active``, ``rows`` through ``wanted``, ``choose``)."""
        tree = self.tree
        if tree.version == self.version:
            return
        self.version = tree.version
        order = tree.order()
        self.size = len(order)
        self.doubled = tree.doubled()
        position = np.full(self.rows_count, -1, dtype=np.int64)
        position[order] = np.arange(len(order), dtype=np.int64)
        self.position = position.tolist()
        self._wanted = num_feasible_nodes_to_find(len(tree.members), self.percentage)

    @property
    def wanted(self) -> int:
        """numFeasibleNodesToFind for the present node count."""
        self._refresh()
        return self._wanted

    @property
    def active(self) -> bool:
        """True when the scheduler would stop before examining every present node."""
        return self.wanted < len(self.tree.members)

    def rows(self, feasible: BoolArray) -> Int64Array:
        """The state rows (ascending) of the nodes found among ``feasible`` (a mask over state
        rows); advances the start index by the nodes processed."""
        order = self.tree.order()
        n = len(order)
        start = self.start % n if n else 0  # the list shrank since: upstream's modulo on use
        positions, processed = found_nodes(feasible[order], start, self.wanted)
        if n:
            self.start = (start + processed) % n
        return np.sort(order[positions])

    def choose(self, mirror: TreeMirror) -> list[int]:
        """The hot path's choice set: the rows (ascending) holding the highest total among the
        nodes the scheduler finds; advances the start index by the nodes processed. Empty when
        no node is feasible. ``mirror`` holds the totals in this node list's order
        (``tree_mirror``): the nodes processed are one bisection of its feasible positions
        (the ``wanted``-th from the start index), the window's highest total comes from its
        listed top rows. O(log n) per choice instead of a read of the window."""
        self._refresh()
        if mirror.version != self.version:
            if mirror.version >= 0:  # only nodes joined or left since it was built
                moved = self.tree.moved[mirror.version : self.version]
                mirror.relist(self.version, self.position, self.doubled, moved)
            else:
                mirror.rebuild(self.version, self.position, self.doubled)
        n = self.size
        feasible = mirror.feasible
        count = len(feasible)
        if count == 0:
            return []  # fits nowhere: every node processed, the index stays
        start = self.start % n
        wanted = self.wanted
        if count <= wanted:
            processed = n  # fewer feasible than wanted: every node processed, the index stays
        else:
            last = bisect.bisect_left(feasible, start) + wanted - 1
            if last < count:
                processed = feasible[last] - start + 1
            else:  # wraps round the end of the list
                processed = n - start + feasible[last - count] + 1
        self.start = (start + processed) % n
        return mirror.highest(start, processed)

    def found(self, feasible: BoolArray) -> BoolArray:
        """``rows`` as a mask over state rows."""
        mask = np.zeros(len(feasible), dtype=bool)
        mask[self.rows(feasible)] = True
        return mask

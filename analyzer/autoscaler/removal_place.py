"""Where ``RemovalSimulator`` (``analyzer.autoscaler.removal``) places a pod it moves: the node
its scheduling hint names if that node's filters pass (``HintingSimulator``'s
``tryScheduleUsingHints``), else the first node from the round-robin start whose filters pass
(``SchedulerPluginRunner.RunFiltersUntilPassingNode``). The filters are the profile's
(``Profile.filters``); the static ones (labels, taints, cordons) are kept per constraints object
by a caller that holds the state across passes, and NodeResourcesFit may be asked node by node
along the walk (``first_fit``), the same node as the full mask's first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal_state import NEAR, STATIC_FILTERS, first_fit_from, first_fitting
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState, PodDemand

# a pod's ``Placement._record``: its ``_quick`` mask (a memoryview) and compared columns, its
# non-zero requests as (column, request), whether it has host ports, and the mask itself
Record = tuple[memoryview, list[tuple[int, int]], list[tuple[int, int]], bool, np.ndarray]


class Placement:
    """A removal simulator's placement of one pod (module docstring); the simulator sets the
    attributes below."""

    profile: Profile
    now: float
    state: ClusterState
    position: dict[str, int]
    schedulable: np.ndarray
    last_index: int
    static: dict[tuple[Any, ...], Any] | None
    walks: list[tuple[int, int]] | None
    skip: frozenset[str]
    first_fit: bool
    # by demand id (with the demand) and by shape (``_fit_columns``; no demand)
    columns: dict[Any, tuple[PodDemand | None, list[tuple[int, int]] | None]]
    demand_of: dict[int, PodDemand]
    # a light simulator's caller may keep ``hinted.Views`` of the state's arrays here (flat
    # memoryviews: Python ints read and written without ``ndarray.item``'s per-call cost); the
    # placements and binds of pods with a ``_record`` then go through them (``simulate``)
    views: Any = None

    def _mask(self, demand: PodDemand, allowed: np.ndarray) -> tuple[np.ndarray, Any]:
        """The nodes ``allowed`` whose filters pass for ``demand``, but NodeResourcesFit when
        ``first_fit`` (returned apart, to be asked node by node)."""
        found = self._static_only(demand)
        if found is not None:  # every filter it would run is a kept static one
            return allowed & self.schedulable & found[0], found[1]
        feasible = allowed & self.schedulable
        fit = None
        for plugin in self.profile.filters:
            name = getattr(plugin, "name", "")
            if name == "NodeResourcesFit" and self.first_fit and hasattr(plugin, "fits_on"):
                fit = plugin  # asked below of the walk's first nodes only
                continue
            if name == "NodePorts" and not demand.host_ports:
                continue  # a pod without host ports conflicts with no port anywhere
            if name in self.skip:
                continue
            if self.static is not None and name in STATIC_FILTERS:
                key = (name, id(demand.constraints))
                mask = self.static.get(key)
                if mask is None:
                    mask = self.static[key] = plugin.filter(self.state, demand, self.now).feasible
            else:
                mask = plugin.filter(self.state, demand, self.now).feasible
            feasible &= mask
        return feasible, fit

    def _hinted(self, hint: str, demand: PodDemand, allowed: np.ndarray) -> int | None:
        """``tryScheduleUsingHints``: the node ``hint`` names if it exists, is acceptable
        (``allowed``, not cordoned) and its filters pass; ``last_index`` does not move."""
        index = self.position.get(hint)
        if index is None or not (allowed[index] and self.schedulable[index]):
            return None  # gone or not a destination now: search
        if self.walks is not None:
            self.walks.append((index, 1))  # what the check read
        found = self._static_only(demand)
        if found is None:  # some filter reads more than the node's labels, taints and cordon
            one = np.zeros(len(allowed), dtype=bool)
            one[index] = True
            feasible, fit = self._mask(demand, one)
            if not feasible[index]:
                return None
        else:
            mask, fit = found
            if not mask.item(index):
                return None
        if fit is not None and not self._has_room(index, self._fit_columns(fit, demand)):
            return None
        return index

    def _quick(self, demand: PodDemand) -> tuple[np.ndarray, list[tuple[int, int]] | None] | None:
        """Where every filter ``_mask`` runs for ``demand`` is a kept static mask and
        NodeResourcesFit is asked apart (``_static_only`` with the plugin): that mask and the
        plugin's compared columns, what ``_hinted_in`` and ``_place_in`` read; else None. For a
        simulator with kept static masks and ``first_fit`` only."""
        assert self.static is not None and self.first_fit
        key = ("*", id(demand.constraints), bool(demand.host_ports))  # ``_static_only``'s
        found = self.static.get(key)
        if found is None:
            if self._static_only(demand) is None:
                return None
            found = self.static[key]
        mask, fit = found[0], found[1]
        if mask is None or fit is None:
            return None
        columns = self.columns.get(id(demand))  # ``_fit_columns`` read in place
        return mask, columns[1] if columns is not None else self._fit_columns(fit, demand)

    def _record(self, demand: PodDemand) -> Record | None:
        """``_quick``'s answer for ``demand`` with what a light bind adds (``Record``), or None
        where ``_quick`` has none; kept in ``static`` (under the key ``("records",)``) per
        demand object (with it, so its id is not reused) and per constraints object and
        requests shape: ``_quick`` reads the kept static masks and the compared columns, both
        fixed while they are kept, and the requests, fixed with the demand."""
        assert self.static is not None
        kept: dict[Any, tuple[Any, Record | None]]
        kept = self.static.setdefault(("records",), {})
        found = kept.get(id(demand))
        if found is None:
            # a demand not seen yet takes the record of an earlier one with the same constraints
            # object and host-ports flag (``_quick``'s static mask) and requests shape (its
            # compared columns, ``_fit_columns``, and its non-zero requests)
            requests = demand.requests
            shape = (
                id(demand.constraints),
                bool(demand.host_ports),
                requests.dtype.str,
                requests.tobytes(),
                tuple(k for k, v in demand.request_map.items() if v > 0),
            )
            same = kept.get(shape)
            if same is None:
                quick = self._quick(demand)
                record: Record | None = None
                if quick is not None and quick[1] is not None:
                    mask, columns = quick[0], quick[1]
                    adds = [(j, r) for j, r in enumerate(requests.tolist()) if r]
                    record = (mask.data, columns, adds, bool(demand.host_ports), mask)
                # with the constraints object, so its id is not reused while the entry lives
                same = kept[shape] = (demand.constraints, record)
            found = kept[id(demand)] = (demand, same[1])
        return found[1]

    def _hinted_views(
        self, index: int | None, ok: memoryview, record: Record, views: tuple[memoryview, ...]
    ) -> bool:
        """``_hinted_in`` on ``views`` (``hinted.Views.of``) for a pod with a ``_record`` whose
        hinted node is ``index`` (None: no such node); ``ok``: the simulation's allowed nodes
        that are not cordoned, a memoryview. Whether the pod goes there."""
        if index is None or not ok[index]:
            return False  # gone or not a destination now: search
        if self.walks is not None:
            self.walks.append((index, 1))  # what the check read
        mask, columns = record[0], record[1]
        if not mask[index]:
            return False
        count, most, alloc, used = views[1], views[2], views[3], views[4]
        if count[index] >= most[index]:
            return False
        at = index * self.state.requested.shape[1]
        for j, r in columns:  # a loop, not ``all`` over a generator: this is the hot path
            if alloc[at + j] - used[at + j] < r:
                break
        else:
            return True
        return False

    def _place_views(
        self, base: np.ndarray, ok: memoryview, record: Record, views: tuple[memoryview, ...]
    ) -> int | None:
        """``_place_in`` on ``views`` for a pod with a ``_record`` (``ok``: ``base`` as a
        memoryview): the same walk, its first ``NEAR`` nodes read through the memoryviews."""
        start, count = self.last_index, len(base)
        mask, columns = record[0], record[1]
        width = self.state.requested.shape[1]
        pods, most, alloc, used = views[1], views[2], views[3], views[4]
        i: int | None = None
        for n in range(start, min(start + NEAR, count)):
            if ok[n] and mask[n] and pods[n] < most[n]:
                at = n * width
                for j, r in columns:
                    if alloc[at + j] - used[at + j] < r:
                        break
                else:
                    i = n
                    break
        else:  # none of the near nodes: ``first_fit_from``'s walk (the near ones again)
            i = first_fit_from(self.state, columns, base, record[4], start)
        if i is None:
            return None
        self.last_index = (i + 1) % count
        if self.walks is not None:
            self.walks.append((start, (i - start) % count + 1))
        return i

    def _hinted_in(self, hint: str, base: np.ndarray, quick: tuple[np.ndarray, Any]) -> int | None:
        """``_hinted`` for a pod with a ``_quick`` answer; ``base``: the simulation's allowed
        nodes that are not cordoned (``allowed & schedulable``). NodeResourcesFit's check on
        the one node is ``_has_room``'s."""
        index = self.position.get(hint)
        if index is None or not base.item(index):
            return None  # gone or not a destination now: search
        if self.walks is not None:
            self.walks.append((index, 1))  # what the check read
        mask, columns = quick
        if columns is None or not mask.item(index):
            return None
        state = self.state
        if state.pod_count.item(index) >= state.allowed_pods.item(index):
            return None
        free, held = state.allocatable.item, state.requested.item
        for j, r in columns:
            if free(index, j) - held(index, j) < r:
                return None
        return index

    def _place_in(self, base: np.ndarray, quick: tuple[np.ndarray, Any]) -> int | None:
        """``_place`` for a pod with a ``_quick`` answer (``base`` as ``_hinted_in``'s): the
        first node from ``last_index`` on that both masks allow and NodeResourcesFit accepts,
        asked node by node from the start (``first_fit_from``) without the full mask."""
        start = self.last_index
        i = first_fit_from(self.state, quick[1], base, quick[0], start)
        if i is None:
            return None
        self.last_index = (i + 1) % len(base)
        if self.walks is not None:
            self.walks.append((start, (i - start) % len(base) + 1))
        return i

    def _has_room(
        self, node: int, columns: Any, pods: int = 0, requests: np.ndarray | None = None
    ) -> bool:
        """NodeResourcesFit's check on ``node`` alone: a pod slot and each of ``columns``'
        (resource column, request) free, with ``pods`` more pods holding ``requests`` already
        counted there. ``columns`` None: this check cannot tell (the caller searches)."""
        if columns is None:
            return False
        state = self.state
        if state.pod_count.item(node) + pods >= state.allowed_pods.item(node):
            return False
        alloc, used = state.allocatable, state.requested
        for j, r in columns:
            held = 0 if requests is None else requests[j]
            if alloc.item(node, j) - used.item(node, j) - held < r:
                return False
        return True

    def fits_as_hinted(
        self, moved: Sequence[CAPod], targets: Sequence[int], allowed: np.ndarray
    ) -> bool:
        """Whether ``simulate`` would now put each of ``moved`` (in order) on its ``targets``
        node through its hint (the hints being those names): each target a destination, its
        static filters passing and NodeResourcesFit's check passing with the earlier pods of
        ``moved`` bound. False also where that cannot be told this way (then simulate)."""
        added: dict[int, Any] = {}  # target -> (pods, requests) of this list already there
        for pod, t in zip(moved, targets, strict=True):
            if not (allowed[t] and self.schedulable[t]):
                return False
            demand = self.demand_of[id(pod)]
            found = self._static_only(demand)
            if found is None or found[1] is None or not found[0].item(t):
                return False
            before = added.get(t)
            pods, held = (0, None) if before is None else before
            if not self._has_room(t, self._fit_columns(found[1], demand), pods, held):
                return False
            if before is None:
                added[t] = (1, demand.requests.copy())
            else:
                added[t] = (before[0] + 1, before[1] + demand.requests)
        return True

    def _static_only(self, demand: PodDemand) -> tuple[np.ndarray, Any] | None:
        """Where every filter ``_mask`` runs for ``demand`` is a kept static mask (and
        NodeResourcesFit is asked apart): their conjunction and NodeResourcesFit, kept with the
        static masks; else None."""
        if self.static is None or not self.first_fit:
            return None
        key = ("*", id(demand.constraints), bool(demand.host_ports))
        found = self.static.get(key)
        if found is not None:  # (None, ...): some filter is not a kept static one
            return None if found[0] is None else (found[0], found[1])
        mask = np.ones(self.state.node_count, dtype=bool)
        fit = None
        for plugin in self.profile.filters:
            name = getattr(plugin, "name", "")
            if name == "NodeResourcesFit" and hasattr(plugin, "fits_on"):
                fit = plugin
            elif (name == "NodePorts" and not demand.host_ports) or name in self.skip:
                continue
            elif name in STATIC_FILTERS:
                part = self.static.get((name, id(demand.constraints)))
                if part is None:
                    part = self.static[(name, id(demand.constraints))] = plugin.filter(
                        self.state, demand, self.now
                    ).feasible
                mask &= part
            else:  # kept as such too (asked again at every placement otherwise)
                self.static[key] = (None, None, demand.constraints)
                return None
        # kept with the constraints object, so its id is not reused while the entry lives
        self.static[key] = (mask, fit, demand.constraints)
        return mask, fit

    def _place(self, demand: PodDemand, allowed: np.ndarray) -> int | None:
        """The first node from ``last_index`` on whose filters pass (round-robin)."""
        feasible, fit = self._mask(demand, allowed)
        count = self.state.node_count
        start = self.last_index
        if fit is not None:
            i = self._first_fit(fit, demand, feasible, start)
            if i is None:
                return None
            step = (i - start) % count
            self.last_index = (i + 1) % count
            if self.walks is not None:
                self.walks.append((start, step + 1))
            return i
        # the first feasible node from ``start`` on, wrapping round
        ahead = np.flatnonzero(feasible[start:])
        if len(ahead):
            step = int(ahead[0])
        else:
            behind = np.flatnonzero(feasible[:start])
            if not len(behind):
                return None
            step = count - start + int(behind[0])
        i = (start + step) % count
        self.last_index = (i + 1) % count
        if self.walks is not None:
            self.walks.append((start, step + 1))
        return i

    def _first_fit(
        self, fit: Any, demand: PodDemand, feasible: np.ndarray, start: int
    ) -> int | None:
        """``first_fitting`` for ``demand`` from ``start``: the node ``_place``'s full mask
        would give."""
        return first_fitting(
            self.state, fit, demand, self._fit_columns(fit, demand), feasible, start
        )

    def _fit_columns(self, fit: Any, demand: PodDemand) -> list[tuple[int, int]] | None:
        """``fit.compared`` for ``demand``, kept per demand object (``columns``). A demand not
        seen yet takes the answer of an earlier one of the same shape: ``compared`` reads the
        pod's requests on the axis and the resources it requests off the axis, nothing else
        of it (the shape's entry, under a tuple key, holds no demand: a list shared, read
        only)."""
        found = self.columns.get(id(demand))
        if found is None:  # the demand is kept with its answer, so its id is not reused
            requests = demand.requests
            shape = (
                "shape",
                requests.dtype.str,
                requests.tobytes(),
                tuple(k for k, v in demand.request_map.items() if v > 0),
            )
            same = self.columns.get(shape)
            if same is None:
                same = self.columns[shape] = (None, fit.compared(self.state, demand))
            found = self.columns[id(demand)] = (demand, same[1])
        return found[1]

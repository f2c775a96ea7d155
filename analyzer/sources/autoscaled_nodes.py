"""The generator's cluster-autoscaler: nodes join and leave the generated data by CA's rules
(``SyntheticSpec.autoscaled``; ``analyzer generate --autoscaled``; issue 25 item 4).

Written apart from the replay's (``analyzer.replay.autoscale_loop``, which runs on the scheduling
core): here a node's room is its allocatable less its requests (cpu, memory, pods), nothing else,
so that replaying the data under the replay's CA compares two implementations of the same rules,
with CA's default flags:

- the loop runs every 10 s from the start of the range (``--scan-interval``); with frequent loops
  (``--frequent-loops-enabled``, CA's default from 1.35, the data's kubelet version's:
  ``frequent``) it also runs at once, at the same instant after the scheduler's pass, when its
  run there ordered a scale-up or deleted a node, or a pod that arrived then found no node and
  still waits (``loop/trigger.go`` ``LoopTrigger.Wait``, as the replay's
  ``analyzer.replay.autoscale_settle.trigger`` reads it); the timer restarts from such a run,
  and the smallest interval between runs seen so far is ``unneededNodesLimit``'s (below);
- **scale-up**: the pods pending after the scheduler's last pass, less those that fit on a
  present node or on a node being provisioned (first fit), each packed first-fit decreasing (by
  cpu + memory share) onto new nodes of the pool's shape, at most ``maxSize`` nodes in all; the
  new nodes are Ready 120 s later (the replay's ``provisioning-delay``); a run whose oldest pod
  to help was created less than 2 s ago orders nothing and deletes nothing
  (``allPodsAreNew``);
- **scale-down**: a present node whose cpu and memory requests are both at most half its
  allocatable (CA 1.35+: a node at the threshold is underutilised) is a candidate unless its pool is at ``minSize``; candidates, empty ones first,
  then the nodes unneeded after the last run, then in node order, are drained in a simulation:
  each pod onto the node the previous run's simulation put it on if that node is still present,
  not the candidate nor removed in this run and has room (CA's scheduling hints,
  ``analyzer.scheduling.sim_hints``, shared with the replay's CA), else the first other present
  node with room, round-robin from where the previous search of this run stopped, from the
  first node at each run (a hinted placement does not move it: the replay's reading of
  upstream's ``lastIndex``, docs/autoscaling.md row "round-robin start"); a pod without a
  controller blocks, as does one of kube-system up to CA 1.32 and,
  from 1.33 (the data's kubelet version), one of kube-system created 3600 s ago or less
  (``--blocking-system-pod-distruption-timeout``; the generated cluster has no
  PodDisruptionBudgets where it is autoscaled); a drained node's moves
  stay for the next candidate. A node found not removable is skipped for 300 s
  (``--unremovable-node-recheck-timeout``: not simulated again before then, whatever its
  utilisation); a run stops simulating once it found ``min(U + 20, 10 * floor(600 / I) + 10)``
  removable nodes (U: unneeded after the last run; I: 600 s at the first run, then the smallest
  interval between two runs so far, 10 s or less, 1 ns for two runs at one instant:
  ``unneededNodesLimit`` with parallelism 10, ``Planner.minUpdateInterval``). A node removable
  for more than 600 s (``--scale-down-unneeded-time``) is deleted, not within 600 s of a scale-up
  (``--scale-down-delay-after-add``), at most 10 nodes and 1 drained node per run less the
  deletions still in progress (a drained node's for 30 s; an empty node's for another run at the
  instant it was deleted: ``--max-scale-down-parallelism``, ``--max-drain-parallelism``,
  ``CropNodes``), never below ``minSize``;
- a deleted node's pods are evicted: they end then and their controller makes a new pod at once
  (pending from the eviction); the node runs on for their 30 s grace period.

The cluster is one pool (one node group) with no DaemonSets: the replay's new nodes carry none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.scheduling.sim_hints import Hints

SCAN = 10
UNNEEDED = 600
DELAY_AFTER_ADD = 600
PROVISIONING = 120
SYSTEM_TIMEOUT = 3600  # ``--blocking-system-pod-distruption-timeout`` (CA 1.33+), seconds
NEW_POD_BUFFER = 2  # ``unschedulablePodTimeBuffer`` (the generated cluster has no GPUs)
THRESHOLD = 0.5
GRACE = 30
MAX_EMPTY = 10  # max-scale-down-parallelism
MAX_DRAINED = 1
RECHECK = 300  # unremovable-node-recheck-timeout
TINY = 1e-9  # seconds: two runs at one instant are apart by a run's duration, taken as 1 ns

IntArray = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class Decision:
    """One run of the loop: nodes that became Ready, nodes deleted, pods evicted."""

    joined: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    evicted: list[int] = field(default_factory=list)


class NodeAutoscaler:
    """The generator's CA over ``slots`` node slots of one shape; the first ``initial`` exist at
    ``start`` (unix seconds); a slot is used once (a deleted node's name is not reused)."""

    def __init__(
        self,
        initial: int,
        slots: int,
        min_size: int,
        max_size: int,
        start: int,
        system_timeout: int | None = SYSTEM_TIMEOUT,
        frequent: bool = False,
    ) -> None:
        # a kube-system pod is movable once created longer ago than this (seconds; None: never,
        # CA before 1.33); ``movable`` callers read it
        self.system_timeout = system_timeout
        self.present = np.zeros(slots, dtype=bool)
        self.present[:initial] = True
        self.joined: list[int | None] = [start] * initial + [None] * (slots - initial)
        self.left: list[int | None] = [None] * slots
        self.unused = initial  # the next slot a scale-up takes
        self.min_size, self.max_size = min_size, max_size
        self.provisioning: dict[int, int] = {}  # slot -> Ready at
        self.unneeded: dict[int, int] = {}  # slot -> since
        self.last_add: int | None = None
        self.start = start
        self.next_tick = start + SCAN
        # frequent loops (module docstring): whether the last run ordered nodes or deleted one,
        # when it ran, the smallest interval between two runs (seconds) and the (instant,
        # count) of the empty nodes deleted at the last instant that deleted one
        self.frequent = frequent
        self.productive = False
        self.last_run: int | None = None
        self.shortest: float = min(UNNEEDED, SCAN)
        self.emptied = (-1, 0)
        self.recheck: dict[int, int] = {}  # slot -> skipped until (found not removable)
        self.hints: Hints[int, int] = Hints()  # pod -> the slot a simulation last put it on
        self.runs = 0
        # where the last run's round-robin search stopped (read by tests). Each run's search
        # starts from the first node, as the replay's CA does: upstream's
        # ``SchedulerPluginRunner.lastIndex`` lives as long as the process, but the node list it
        # indexes is rebuilt from a Go map at every loop, so the index carried over names no
        # particular node (docs/autoscaling.md, row "round-robin start"). From 2026-11-30 to
        # 2026-12-02 this search went on from ``cursor`` instead, which the replay does not:
        # the two CAs then parted in 3 of 30 three-day seeds (node-hours 2.2-7.1 % apart).
        self.cursor = 0

    def due(self) -> int:
        """The next instant the loop acts (a run, or a node becoming Ready)."""
        return min(self.next_tick, min(self.provisioning.values(), default=self.next_tick))

    def act(
        self,
        now: int,
        allocatable: IntArray,
        requested: IntArray,
        on_node: Sequence[set[int]],
        pending: Sequence[int],
        need: Callable[[int], IntArray],
        movable: Callable[[int], bool],
        created: Callable[[int], int] | None = None,
    ) -> Decision:
        """Run at ``now``: nodes Ready now join; on the scan grid, scale-up for ``pending`` then
        scale-down. ``need(pod)``: its requests on the columns of ``allocatable`` (cpu, memory,
        pods); ``movable(pod)``: it has a controller and is not in kube-system, or was created
        more than ``system_timeout`` before ``now``; ``created(pod)``:
        its creation (None: the young-pod buffer is not applied)."""
        out = Decision()
        for slot in sorted(s for s, at in self.provisioning.items() if at <= now):
            del self.provisioning[slot]
            self.present[slot] = True
            self.joined[slot] = now
            out.joined.append(slot)
        if now < self.next_tick:
            return out
        self.next_tick, self.last_run = now + SCAN, now
        free = allocatable - requested
        young, self.productive = self._scale_up(
            now, allocatable, free.copy(), pending, need, created
        )
        self._update_unneeded(now, allocatable, requested, free.copy(), on_node, need, movable)
        if young or (self.last_add is not None and now - self.last_add < DELAY_AFTER_ADD):
            return out
        # unneeded strictly longer than the time, as upstream's ``unremovableReason``
        due = [s for s, since in self.unneeded.items() if now - since > UNNEEDED]
        if not due:  # (most runs: the budgets below are not read)
            return out
        size = int(self.present.sum()) + len(self.provisioning)
        # the budgets less the deletions still in progress (``CropNodes``): a drained node runs
        # on until its pods' grace period ends; an empty one goes at once, in progress only for
        # another run at the instant it was deleted (frequent loops)
        drains = sum(1 for t in self.left if t is not None and t > now)
        empties = self.emptied[1] if self.emptied[0] == now else 0
        budget = MAX_EMPTY - empties - drains
        empty = [s for s in due if not on_node[s]][: max(budget, 0)]
        room = min(budget - len(empty), MAX_DRAINED - drains)
        drained = [s for s in due if on_node[s]][: max(room, 0)]
        for slot in empty + drained:
            if size <= self.min_size:
                break
            size -= 1
            self.present[slot] = False
            self.left[slot] = now + (GRACE if on_node[slot] else 0)
            if not on_node[slot]:
                self.emptied = (now, self.emptied[1] + 1 if self.emptied[0] == now else 1)
            del self.unneeded[slot]
            out.deleted.append(slot)
            out.evicted.extend(sorted(on_node[slot]))
        self.productive = self.productive or bool(out.deleted)
        return out

    def settle(self, now: int, unschedulable: bool) -> None:
        """The end of the instant ``now`` (after the scheduler's passes): with frequent loops,
        the loop runs again at once (``due`` is ``now``) when its last run ordered nodes or
        deleted one, or ``unschedulable`` (a pod that arrived now found no node and still
        waits); its timer restarts from that run. Before the range's start it does not run."""
        productive, self.productive = self.productive, False
        if not (self.frequent and (productive or unschedulable)) or now < self.start:
            return
        if self.last_run is not None:  # ``Planner.minUpdateInterval``
            self.shortest = max(min(self.shortest, now - self.last_run), TINY)
        self.next_tick = now

    def _scale_up(
        self,
        now: int,
        allocatable: IntArray,
        free: IntArray,
        pending: Sequence[int],
        need: Callable[[int], IntArray],
        created: Callable[[int], int] | None = None,
    ) -> tuple[bool, bool]:
        """The scale-up of this run: whether the pods to help were all too young for it
        (``allPodsAreNew``: no deletion at this run either), and whether it ordered nodes."""
        present = np.flatnonzero(self.present).tolist()
        upcoming = sorted(self.provisioning)
        shape = allocatable[0]
        rest = []
        helped: list[int] = []  # the pods that fit no node: the pods to help
        for pod in pending:
            row = need(pod)
            # first fit on a present node, then on one being provisioned
            spot = next((n for n in [*present, *upcoming] if bool(np.all(row <= free[n]))), None)
            if spot is not None:
                free[spot] -= row
                continue
            helped.append(pod)
            if bool(np.all(row <= shape)):
                rest.append(row)
        if created is not None and helped and min(map(created, helped)) + NEW_POD_BUFFER > now:
            return True, False
        room = self.max_size - len(present) - len(upcoming)
        if not rest or room <= 0:
            return False, False
        share = [float(r[0]) / shape[0] + float(r[1]) / shape[1] for r in rest]
        order = [rest[i] for i in sorted(range(len(rest)), key=lambda i: -share[i])]
        bins: list[IntArray] = []
        for row in order:
            for b, left in enumerate(bins):
                if bool(np.all(row <= left)):
                    bins[b] = left - row
                    break
            else:
                if len(bins) < room:
                    bins.append(shape - row)
        count = min(len(bins), len(self.present) - self.unused)
        for _ in range(count):
            self.provisioning[self.unused] = now + PROVISIONING
            self.unused += 1
        if count:
            self.last_add = now
        return False, count > 0

    def _update_unneeded(
        self,
        now: int,
        allocatable: IntArray,
        requested: IntArray,
        free: IntArray,
        on_node: Sequence[set[int]],
        need: Callable[[int], IntArray],
        movable: Callable[[int], bool],
    ) -> None:
        present = np.flatnonzero(self.present).tolist()
        size = len(present) + len(self.provisioning)
        found: dict[int, int] = {}
        self.recheck = {n: t for n, t in self.recheck.items() if t > now and self.present[n]}
        self.runs += 1
        interval = UNNEEDED if self.runs == 1 else self.shortest
        limit = min(len(self.unneeded) + 2 * MAX_EMPTY,
                    MAX_EMPTY * int(UNNEEDED / interval) + MAX_EMPTY)  # fmt: skip
        if size > self.min_size:
            util = {n: max(requested[n, 0] / allocatable[n, 0], requested[n, 1] / allocatable[n, 1])
                    for n in present if n not in self.recheck}  # fmt: skip
            # at or under the threshold: cluster-autoscaler 1.35+ (the default version's)
            candidates = [n for n in util if util[n] <= THRESHOLD]
            candidates.sort(key=lambda n: (bool(on_node[n]), n not in self.unneeded, n))
            gone: set[int] = set()
            count = len(self.present)
            cursor = 0  # round-robin over the slots, from the first at each run (``cursor``)
            for node in candidates:
                if len(found) >= limit:
                    break
                pods = sorted(on_node[node])
                if not all(movable(p) for p in pods):
                    self.recheck[node] = now + RECHECK
                    continue
                trial = free.copy()
                moved = True
                for pod in pods:
                    row = need(pod)
                    # the node the pod was last simulated onto first, without moving the cursor
                    hint = self.hints.get(pod)
                    if (hint is not None and self.present[hint] and hint != node
                            and hint not in gone and bool(np.all(row <= trial[hint]))):  # fmt: skip
                        trial[hint] -= row
                        self.hints.set(pod, hint)
                        continue
                    for step in range(count):
                        n = (cursor + step) % count
                        if (self.present[n] and n != node and n not in gone
                                and bool(np.all(row <= trial[n]))):  # fmt: skip
                            trial[n] -= row
                            cursor = (n + 1) % count
                            self.hints.set(pod, n)  # kept even if a later pod finds no place
                            break
                    else:
                        moved = False
                        break
                if moved:
                    free = trial
                    gone.add(node)
                    found[node] = self.unneeded.get(node, now)
                else:
                    self.recheck[node] = now + RECHECK
        self.unneeded = found
        if size > self.min_size:  # (else no search ran)
            self.cursor = cursor
        self.hints.drop_old()  # ``DropOldHints``: once per run

"""Runs of earlier answers placed by hints alone, taken again as one block (issue 25 item 5).

A scale-down pass (``analyzer.replay.autoscale_candidates``) takes an earlier removable answer
whose pods all went to their hinted nodes again when its pods, the budgets and the hints it read
are the same and each hinted node still has room for its pods in turn (``_by_hints_again``). Such
answers come in runs: a pass after a recheck deadline or after the hints changed takes tens of
them one after another (500 nodes x 7 days: 9,000 of ~10,000 in runs of five or more; 5,000 nodes:
88 a pass), each checked and applied on its own.

A run seen in one pass is kept (``Blocks.close``) and, when a later pass reaches its first slot
with the same slots next in its order, it is taken again in one step (``take``) where its checks
pass as one:

- each answer is still the slot's kept one (the same object: an answer is replaced only when its
  slot is simulated again), its pods are those it moved (the same pod objects, in order), the
  budgets are those it read (no PodDisruptionBudget covers the pass's candidates, so each read
  the same disruptions left) and its pods' hints read as it read them (``Hints.same``). The
  answers' pods are distinct and none is moved onto a node of the block (checked when the block's
  plan is made), so no answer's hints nor pods are set or moved by another's;
- the room, in one check of the answers' moves taken in order. The block's plan is made once from
  the answers' own plans (``hinted.plan``, kept with each answer as the one-by-one path keeps it):
  per target its pods of the block, and per compared cell the largest of an answer's need there
  plus what the block's earlier answers add to it. Pod by pod, each answer's check reads its
  targets' room with the block's earlier moves counted; every pod passes exactly when the largest
  need per target and cell and the pod count pass, so the one check is the answers' checks in
  turn. It is made in array steps (``_fits``). No target is a node of the block, so the nodes the
  block's earlier removals take out of the destinations are none of them.

Taken, the block does what its answers taken one by one do: their hints looked and set, their
moves added (one step), each node dropped from the destinations, each answer counted as reused
and added to the pass's context, the round-robin start unmoved (placements by hints do not move
it). A block taken ends the run before it and starts none: the answers after it make their own.
Where a check fails, the pass takes the answers one by one as before and the block is dropped
(the run the pass then makes is kept instead). Measured in docs/benchmarks.md ("cablock").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler import hinted
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.replay.autoscale_reuse import Entry

# False: every answer is taken one by one (tests compare the two)
BLOCKS = True

# a run shorter than this is taken answer by answer (a block's own checks cost about one answer's)
MIN_BLOCK = 3

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any


@dataclass
class Block:
    """A run of answers placed by hints alone, in pass order, and what taking it reads."""

    slots: list[int]
    entries: tuple[Entry, ...]
    # ``hinted.HintedPlan`` of every answer's moves in order (None: not made yet; False: none
    # possible), made from the answers' own plans (``_make``)
    plan: Any = None
    # the plan's checks as arrays (``_fits``): its distinct targets and each one's pods of the
    # block less one; the flat (node, column) cells compared and the free room each needs
    targets: Any = None
    before: Any = None
    cells: Any = None
    needs: Any = None
    looks: list[tuple[str, str | None]] = field(default_factory=list)
    sets: list[tuple[str, str]] = field(default_factory=list)
    where: np.ndarray[Any, Any] | None = None  # the slots, to drop from the destinations at once
    # what it was made of until its plan is made (``_make``): answers and blocks taken before,
    # whose plans it merges (None: its entries)
    parts: list[Any] | None = None


class Blocks:
    """The runs kept by their first slot, and the run the current pass is making: its parts,
    each an answer taken one by one or a block taken at once."""

    def __init__(self) -> None:
        self.at: dict[int, Block] = {}
        self.run: list[Entry | Block] = []
        self.slots: list[int] = []

    def extend(self, slot: int, entry: Entry) -> None:
        """``slot``'s answer, removable and placed by hints alone, was taken again."""
        self.run.append(entry)
        self.slots.append(slot)

    def add(self, block: Block) -> None:
        """``block`` was taken at once: the run goes on through it."""
        self.run.append(block)
        self.slots.extend(block.slots)

    def close(self) -> None:
        """The run ends (an answer of another kind, or the pass's end): kept if long enough,
        unless it is one block kept already (its plan made)."""
        run, slots = self.run, self.slots
        if not run:
            return
        self.run, self.slots = [], []
        if len(slots) < MIN_BLOCK or (len(run) == 1 and isinstance(run[0], Block)):
            return
        entries: list[Entry] = []
        for part in run:
            if isinstance(part, Block):
                entries.extend(part.entries)
            else:
                entries.append(part)
        self.at[slots[0]] = Block(slots, tuple(entries), parts=run)


def _make(simulator: RemovalSimulator, block: Block) -> None:
    """The block's plan from its answers' own (``hinted.plan``, kept with each answer as the
    one-by-one path keeps it), once: per target, its pods of the block and, per compared cell,
    the largest need of an answer there plus the requests the block's earlier answers add to it
    (an answer's own earlier pods are in its need already). ``plan`` False where the block cannot
    be taken at once: a node of the block among its targets, a pod in two answers, an answer
    with no plan."""
    width = simulator.state.requested.shape[1]
    slots = set(block.slots)
    held: dict[int, int] = {}  # flat cell -> what the block's answers so far add to it
    needs: dict[int, int] = {}  # flat cell -> the most free room it must have
    pods: dict[int, int] = {}  # target -> the block's pods on it
    groups: dict[int, list[Any]] = {}
    parts, block.parts = block.parts or block.entries, None
    for part in parts:
        if isinstance(part, Block):  # taken at once before: its plan made and checked
            plan = part.plan
            looks, sets = part.looks, part.sets
        else:
            plan = part.plan
            if plan is None:
                plan = part.plan = hinted.plan(simulator, part.outcome.moved, part.targets) or False
            looks, sets = part.looks, part.sets
        if plan is False or plan.width != width or not slots.isdisjoint(plan.where.tolist()):
            block.plan = False
            return
        for f, need in plan.room:
            need += held.get(f, 0)
            if need > needs.get(f, -1):
                needs[f] = need
        for f, add in zip(plan.cells.tolist(), plan.adds.tolist(), strict=True):
            held[f] = held.get(f, 0) + add
        for (t, _), n in zip(plan.slots, plan.counts.tolist(), strict=True):
            pods[t] = pods.get(t, 0) + n
        for t, group in plan.groups:
            found = groups.get(t)
            if found is None:
                groups[t] = list(group)
            else:
                found.extend(group)
        block.looks.extend(looks)
        block.sets.extend(sets)
    if len({key for key, _ in block.looks}) != len(block.looks):
        block.plan = False
        return
    order = list(pods)
    sums = np.zeros((len(order), width), dtype=np.int64)
    for row, t in enumerate(order):
        for j in range(width):
            sums[row, j] = held.get(t * width + j, 0)
    cells = sorted(held)
    block.plan = hinted.HintedPlan(
        slots=[(t, pods[t] - 1) for t in order],
        room=sorted(needs.items()),
        width=width,
        cells=np.array(cells, dtype=np.int64),
        adds=np.array([held[f] for f in cells], dtype=np.int64),
        where=np.array(order, dtype=np.int64),
        sums=sums,
        counts=np.array([pods[t] for t in order], dtype=np.int64),
        groups=[(t, groups[t]) for t in order],
        gone=frozenset(),
    )
    block.targets = block.plan.where
    block.before = block.plan.counts - 1
    block.cells = np.array(list(needs), dtype=np.int64)
    block.needs = np.array(list(needs.values()), dtype=np.int64)
    block.where = np.array(block.slots, dtype=np.int64)


# a plan with fewer compared cells than this is checked by ``hinted.fits`` (memoryviews, a few
# integer comparisons a cell), a larger one in array steps (about ten calls whatever its size)
ARRAY_CELLS = 48


def _fits(simulator: RemovalSimulator, block: Block, views: hinted.Views | None = None) -> bool:
    """``hinted.fits`` of the block's plan: every target a destination and schedulable with a
    pod slot for its pods of the block, and each compared cell's free room at least its need;
    in array steps for a large plan (``ARRAY_CELLS``)."""
    state = simulator.state
    alloc, used = state.allocatable, state.requested
    if len(block.cells) < ARRAY_CELLS or not (alloc.flags.c_contiguous and used.flags.c_contiguous):
        return hinted.fits(simulator, block.plan, simulator.destinations, views)
    t = block.targets
    if not (simulator.destinations[t].all() and simulator.schedulable[t].all()):
        return False
    if (state.pod_count[t] + block.before >= state.allowed_pods[t]).any():
        return False
    cells = block.cells
    return bool((alloc.reshape(-1)[cells] - used.reshape(-1)[cells] >= block.needs).all())


def take(
    ca: ClusterAutoscaler,
    simulator: RemovalSimulator,
    block: Block,
    order: list[int],
    at: int,
    room: int,
    budget: tuple[int, ...],
    views: hinted.Views | None = None,
) -> bool:
    """Take ``block`` at ``order[at]`` if its checks pass (module docstring); ``room``: how
    many more removable answers the pass may find (``unneededNodesLimit``), ``budget``: the
    budgets now; ``views``: the pass's kept ``hinted.Views``. False (nothing done, the block
    dropped) where a check fails."""
    memo = ca.sims
    slots, entries = block.slots, block.entries
    count = len(slots)
    if count > room or order[at : at + count] != slots:
        return False
    kept, names, same = memo.entries, ca.nodes, ca.hints.same
    lists = []
    for slot, entry in zip(slots, entries, strict=True):
        pods = simulator.pods_on(names[slot].name)
        if (
            kept.get(slot) is not entry
            or entry.pdbs != budget
            or ca.pod_ids(slot, pods) != entry.pods
            or not same(entry.looks)
        ):
            del memo.blocks.at[slots[0]]
            return False
        lists.append(pods)
    if block.plan is None:
        _make(simulator, block)
    if block.plan is False or not _fits(simulator, block, views):
        del memo.blocks.at[slots[0]]
        return False
    # taken: as each answer taken one by one (``simulate_candidates``)
    memo.reused += count
    epoch = memo.epoch
    ca.record.reused_by_hints += count
    ca.record.reused_in_blocks += count
    ca.record.reused_over_epochs += sum(e.epoch != epoch for e in entries)
    memo.used.extend(entries)
    first_look = simulator.looked.setdefault
    for key, hint in block.looks:
        first_look(key, hint)
    ca.hints.set_all(block.sets)
    simulator.apply_plan(block.plan)
    current = simulator.current
    for slot, entry, before in zip(slots, entries, lists, strict=True):
        plan = entry.plan  # its node's list without its moved pods, kept as ``apply`` keeps it
        if plan.left is None or plan.left[0] is not before:
            plan.left = (before, [p for p in before if id(p) not in plan.gone])
        current[names[slot].name] = plan.left[1]
    simulator.destinations[block.where] = False  # ``drop`` of each
    return True

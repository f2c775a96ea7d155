"""Runs of earlier answers placed by hints alone, taken again as one block (issue 25 item 5).

A scale-down pass (``analyzer.replay.autoscale_candidates``) takes an earlier removable answer
whose pods all went to their hinted nodes again when its pods, the budgets and the hints it read
are the same and each hinted node still has room for its pods in turn (``_by_hints_again``). Such
answers come in runs: a pass after a recheck deadline or after the hints changed takes tens of
them one after another (500 nodes x 7 days: 9,000 of ~10,000 in runs of five or more; 5,000 nodes:
88 a pass), each checked and applied on its own.

A run seen in one pass is kept (``Blocks.close``) and, when a later pass reaches its first slot
with the same slots next in its order and the same answers kept for them, it is taken again in one
step (``take``) where its checks pass as one:

- each answer is still the slot's kept one (the same object: an answer is replaced only when its
  slot is simulated again), its pods are those it moved (the same pod objects, in order) and the
  budgets are those it read: no PodDisruptionBudget covers the pass's candidates, so each read
  the same disruptions left;
- the hints of all its pods read as each answer read them (``Hints.same`` over their looks, in
  one call). The answers' pods are distinct and none is moved onto a node of the block (checked
  when the block is made), so no answer's hints nor pods are set or moved by another's;
- the room, in one check of the answers' moves taken in order (``hinted.plan`` of all of them:
  per target, the largest request plus the block's earlier pods' requests there, and its pod
  count). Pod by pod, each answer's check reads its targets' room with the block's earlier moves
  counted; every pod passes exactly when the largest need per target and column passes, so the
  one check is the answers' checks in turn. No target is a node of the block, so the nodes the
  block's earlier removals take out of the destinations are none of them.

Taken, the block does what its answers taken one by one do: their hints looked and set, their
moves added (one step), each node dropped from the destinations, each answer counted as reused
and added to the pass's context, the round-robin start unmoved (placements by hints do not move
it). Where a check fails, the pass takes the answers one by one as before (and the block is
dropped: the run the pass then makes is kept instead).
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
    looks: list[tuple[str, str | None]] = field(default_factory=list)
    sets: list[tuple[str, str]] = field(default_factory=list)
    # ``hinted.plan`` of every answer's moves in order (None: not made yet; False: none possible)
    plan: Any = None
    where: np.ndarray[Any, Any] | None = None  # the slots, to drop from the destinations at once
    # per answer, its node's pods list as last taken and that list without its moved pods
    lefts: list[tuple[list[Any], list[Any]] | None] = field(default_factory=list)


class Blocks:
    """The runs kept by their first slot, and the run the current pass is making."""

    def __init__(self) -> None:
        self.at: dict[int, Block] = {}
        self.run: list[tuple[int, Entry]] = []

    def extend(self, slot: int, entry: Entry) -> None:
        """``slot``'s answer, removable and placed by hints alone, was taken again."""
        self.run.append((slot, entry))

    def close(self) -> None:
        """The run ends (an answer of another kind, or the pass's end): kept if long enough,
        unless the same answers are kept as a block already (its plan made)."""
        run = self.run
        if not run:
            return
        self.run = []
        if len(run) < MIN_BLOCK:
            return
        first = run[0][0]
        kept = self.at.get(first)
        if (
            kept is not None
            and len(kept.entries) == len(run)
            and all(a is b for a, (_, b) in zip(kept.entries, run, strict=True))
        ):
            return
        self.at[first] = Block([s for s, _ in run], tuple(e for _, e in run))


def _make(simulator: RemovalSimulator, block: Block) -> None:
    """The block's looks, sets and plan, once (``plan`` False where it cannot be taken at
    once: a node of the block among its targets, a pod in two answers, or no plan)."""
    moved: list[Any] = []
    targets: list[int] = []
    for entry in block.entries:
        moved.extend(entry.outcome.moved)
        targets.extend(entry.targets)
        block.looks.extend(entry.looks)
        block.sets.extend(entry.sets)
    keys = {key for key, _ in block.looks}
    if len(keys) != len(block.looks) or not set(block.slots).isdisjoint(targets):
        block.plan = False
        return
    block.plan = hinted.plan(simulator, moved, targets) or False
    block.where = np.array(block.slots, dtype=np.int64)
    block.lefts = [None] * len(block.slots)


def take(
    ca: ClusterAutoscaler,
    simulator: RemovalSimulator,
    block: Block,
    order: list[int],
    at: int,
    room: int,
    budget: tuple[int, ...],
    views: hinted.Views | None,
) -> bool:
    """Take ``block`` at ``order[at]`` if its checks pass (module docstring); ``room``: how
    many more removable answers the pass may find (``unneededNodesLimit``), ``budget``: the
    budgets now. False (nothing done, the block dropped) where a check fails."""
    memo = ca.sims
    slots, entries = block.slots, block.entries
    count = len(slots)
    if count > room or order[at : at + count] != slots:
        return False
    if block.plan is None:
        _make(simulator, block)
    if block.plan is False:
        del ca.sims.blocks.at[slots[0]]
        return False
    kept, names = memo.entries, ca.nodes
    lists = []
    for slot, entry in zip(slots, entries, strict=True):
        pods = simulator.pods_on(names[slot].name)
        if (
            kept.get(slot) is not entry
            or entry.pdbs != budget
            or ca.pod_ids(slot, pods) != entry.pods
        ):
            del memo.blocks.at[slots[0]]
            return False
        lists.append(pods)
    if not ca.hints.same(block.looks) or not hinted.fits(
        simulator, block.plan, simulator.destinations, views
    ):
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
    current, lefts = simulator.current, block.lefts
    for j, (slot, entry, before) in enumerate(zip(slots, entries, lists, strict=True)):
        left = lefts[j]
        if left is None or left[0] is not before:
            gone = {id(p) for p in entry.outcome.moved}
            left = lefts[j] = (before, [p for p in before if id(p) not in gone])
        current[names[slot].name] = left[1]
    simulator.destinations[block.where] = False  # ``drop`` of each
    return True

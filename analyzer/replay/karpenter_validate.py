"""A Karpenter disruption command checked again before it runs (``commandValidationDelay``).

Upstream's disruption controller (kubernetes-sigs/karpenter ``pkg/controllers/disruption``)
does not act on a command when it makes it: the method that made it waits 15 s and validates it
(``validation.go``), and the controller's loop does nothing else meanwhile. The candidates are
not yet tainted, so the scheduler may place new pods on them in those 15 s. At the end:

- **emptiness** (``EmptinessValidator``): the candidates still candidates and still empty, each
  within its pool's ``Empty`` budget counted down, run; the others are dropped. None left: the
  command is abandoned (``ChurnValidationError`` / ``BudgetValidationError``).
- **single- and multi-node consolidation** (``ConsolidationValidator``): every candidate must
  still be a candidate (not empty, priced, consolidatable, no do-not-disrupt, no PDB refusing)
  within its pool's ``Underutilized`` budget; then the scheduling simulation is run again
  (``validateCommand``): with no replacement planned, every pod must fit on the nodes that stay;
  with one, the pods left over must need one new node, and every instance type the command
  would launch must still hold them (``instanceTypesAreSubset``). Else the command is abandoned.

An abandoned command's method returns nothing, and the controller goes on with the next method
(emptiness, multi-node, single-node consolidation) at that same run; after a command runs, the
next run follows at once (``RequeueImmediately``); after none, a polling period later. Upstream
also drops a command when a pod was nominated to one of its candidates meanwhile
(``IsNodeNominated``); the replay nominates only nodes it launched, which are no candidates.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from analyzer.autoscaler.karpenter import METHODS, Decision, fitting

# ``k`` is the loop's ``KarpenterAutoscaler`` (typed Any: importing it here would make a circle)
KarpenterAutoscaler = Any


class Pending(NamedTuple):
    """A command made and waiting for its validation at ``due``."""

    decision: Decision
    slots: list[int]  # its candidates' slots, in slot order
    due: int


def validate(k: KarpenterAutoscaler, now: int) -> list[int]:
    """Validate the pending command at ``now``: run it if it holds, else go on with the next
    method. The slots to delete now."""
    pending, k.validating = k.validating, None
    decision = pending.decision
    run = _valid(k, pending, now)
    if run:
        return list(k.execute(decision, run))
    k.record.abandoned += 1
    after = METHODS.index(decision.kind) + 1
    if after < len(METHODS):
        return list(k._disrupt(now, METHODS[after]))
    if k.record.reasons:  # until the next pass, its candidates are chosen no more
        counts = dict(k.record.reasons[-1][1])
        n = len(pending.slots)
        counts["Disrupting"] = counts.get("Disrupting", n) - n
        counts["Consolidatable"] = counts.get("Consolidatable", 0) + n
        k.record.reasons.append((now, {r: c for r, c in counts.items() if c > 0}))
    return []


def _valid(k: KarpenterAutoscaler, pending: Pending, now: int) -> list[int]:
    """The slots of ``pending`` that may run now (module docstring); [] when it is abandoned."""
    decision = pending.decision
    empty = decision.kind == "empty"
    k._look_pending()
    present: list[int] = np.flatnonzero(k.active).tolist()
    blocked = k._pdb_blocked(now, present)
    k._destinations(now, present)
    allowed = k.allowed(now)
    reason = "Empty" if empty else "Underutilized"
    used: dict[str, int] = {}
    valid = []
    for slot in pending.slots:
        if not k.active[slot] or k._held(slot, now, blocked):
            continue
        candidate = k._candidate(slot)
        if candidate.empty != empty or (not empty and candidate.price is None):
            continue  # (emptiness: still empty; consolidation: ``ShouldDisrupt``)
        if used.get(candidate.pool, 0) >= allowed(candidate.pool, reason):
            continue
        used[candidate.pool] = used.get(candidate.pool, 0) + 1
        valid.append(slot)
    if empty:
        return valid
    if len(valid) < len(pending.slots):
        return []
    left = k.resimulate(valid, now)
    if not decision.options:  # no replacement planned: every pod fits on the nodes that stay
        return valid if not left else []
    if not left:  # it would launch nothing now: a better command is likely (upstream's words)
        return []
    pool = int(k.of[valid[0]])
    holding = {id(s) for s in fitting(left, k.launchable_shapes(pool))}
    return valid if all(id(s) in holding for s in decision.options) else []

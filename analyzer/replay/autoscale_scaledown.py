"""cluster-autoscaler's scale-down in the replay's loop (``analyzer.replay.autoscale_loop``).

One pass (``Planner.UpdateClusterState``): every present node through
``analyzer.autoscaler.eligibility`` (utilisation and threshold), the candidates through
``analyzer.autoscaler.removal``'s ``SimulateNodeRemoval`` on the replay's own state (drain rules,
PDBs with the disruptions allowed now, re-placement on the scheduler's filters), empty ones
first, each answer taken again where nothing it read changed (``analyzer.replay.autoscale_reuse``);
a node found unremovable skipped until its recheck deadline, the candidates in upstream's order
and the pass stopped at ``unneededNodesLimit`` (``analyzer.autoscaler.recheck``);
then ``NodesToDelete``: the nodes unneeded for ``scale-down-unneeded-time``, outside
``scale-down-delay-after-add``, within the groups' ``minSize`` and the parallelism budgets
(``analyzer.autoscaler.planner.select``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import CANode
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.eligibility import Rules, check, over_threshold
from analyzer.autoscaler.planner import admit, has_no_pod_to_move, select
from analyzer.autoscaler.recheck import (
    RECENTLY_UNREMOVABLE,
    candidate_order,
    unneeded_limit,
)
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.removal_state import LiveState, Outcome
from analyzer.autoscaler.utilization import GPU_RESOURCE
from analyzer.replay import autoscale_expiry
from analyzer.replay.autoscale_candidates import simulate_candidates
from analyzer.replay.autoscale_screen import ratios as ratios  # (tests read it here)
from analyzer.replay.autoscale_screen import utilization as utilization
from analyzer.replay.autoscale_setup import SECOND
from analyzer.replay.autoscale_stands import candidates_limit, stands, stood
from analyzer.replay.autoscale_steady import (
    BLOCKED,
    NOT_UNDERUTILIZED,
    keeps,
    next_order_same,
    rechecked,
    steady,
    verdict_kind,
)

# a pass with no candidate to simulate (``reuse``) ends without building a simulator; False runs
# it through the simulator as any other (tests compare the two)
SHORTCUT = True
# a pass's judging with at most this many nodes looked at loops over them in Python, above it
# masks every slot (``_judge``): ~60 element reads cost about one numpy step's overhead
FEW_LOOKED = 64

# a pass that would place every pod again where the last pass placed it stands (``repeats``);
# False runs it (tests of the answers such passes keep turn it off)
REPEAT = True

# a pass at the deadline of nodes skipped as recently unremovable, each now over the threshold
# or blocked by a pod again, stands (``autoscale_expiry``); False runs it (tests compare them)
EXPIRY = True

# ``ca`` below is the loop's ``ClusterAutoscaler`` (its state, groups, record and caches); typed
# Any because importing that class here would make an import circle (tests/test_layout.py)
ClusterAutoscaler = Any


def update_unneeded(ca: ClusterAutoscaler, now: int) -> None:
    """``UpdateClusterState``: the unneeded nodes now, keeping when each became unneeded."""
    opts, state = ca.options, ca.state
    # ``unremovable.Nodes.Update``: deadlines past (or of nodes gone) are dropped
    held = ca.recheck.deadlines  # ``update`` replaces the dict if it drops one: kept as it was
    before = len(held)
    expired = ca.recheck.update(now, ca.active.item)  # present: a Python bool per slot
    interval = ca.intervals.step()  # every pass counts, run or standing
    # the candidates limit (``unneeded_limit``), computed where read: a pass that stands reads
    # it only when the limit stopped the last pass (``stands``; -1: not read), as ``settle``
    limit = -1
    # the same nodes skipped as recently unremovable as in the last pass (none expired, or
    # only nodes it skipped as blocked: ``autoscale_steady.rechecked``), or at the deadline of
    # others each now over the threshold or blocked again (``autoscale_expiry``); asked first:
    # a pass that stands had present nodes (``stands``), so the test below is False then
    if ca.reuse:
        if not expired or rechecked(ca, before, now):
            if ca.last_pass[1]:
                limit = candidates_limit(ca, interval)
            if stands(ca, limit):
                stood(ca, now, expired)
                return
        elif EXPIRY:
            limit = candidates_limit(ca, interval)
            if _expiry_stands(ca, held, now, limit):
                return
    if limit < 0:  # (``unneeded_limit`` is never negative)
        limit = candidates_limit(ca, interval)
    # the present nodes not skipped as recently unremovable: every deadline left is of a
    # present node (``recheck.update`` dropped the others)
    deadlines = ca.recheck.deadlines
    count = int(np.count_nonzero(ca.active))
    if ca.cpu is None or ca.mem is None or not count:
        _no_pass(ca, now, {})
        return
    threshold = ca.screen_threshold
    # skipped before any other check (``FilterOutUnremovable``): not judged in this pass
    reasons: dict[str, int] = {}
    if deadlines:
        reasons[RECENTLY_UNREMOVABLE] = len(deadlines)
        count -= len(deadlines)
    if not count:  # every present node skipped as recently unremovable
        ca.last_pass = (limit, False, False)
        _no_pass(ca, now, reasons)
        return
    # a margin over the threshold: the exact check below decides (float sums differ); GPU and
    # scale-down-disabled nodes are judged whatever their ratio. One mask over every slot
    # (``looked``: kept in the pass's summary), the nodes in slot order
    under = ratios(ca) < threshold + 1e-6
    under |= ca.special
    looked = under & ca.active
    if deadlines:
        looked[list(deadlines)] = False
    look = looked.nonzero()[0].tolist()
    reasons["NotUnderutilized"] = count - len(look)
    candidates = _judge(ca, look, reasons, now, looked)
    kept_verdicts = steady(ca, looked) if ca.reuse else None
    # a group already at its minSize can lose no node: its candidates are not simulated and
    # stay destinations (upstream's ``GetScaleDownCandidates`` drops them before the planner)
    sizes = ca.sizes() if candidates else []
    low = {g for g, size in enumerate(sizes) if size <= ca.groups.min_size[g]}
    at_min: list[int] = []
    if len(low) == len(sizes):  # every group (most passes of a cluster at its observed bounds)
        at_min, candidates = candidates, []
    elif low:
        of = ca.groups.of_node
        at_min = [c for c in candidates if of[c] in low]
        candidates = [c for c in candidates if of[c] not in low]
    if at_min:
        reasons["NodeGroupMinSizeReached"] = len(at_min)
    empty = empty_ones(ca, candidates, now)  # of those ordered only: at-min ones are not
    # ``EmptySorting`` then ``PreviousCandidates`` (the last pass's unneeded nodes)
    order = candidate_order(candidates, empty, ca.outcomes)
    if not order and ca.reuse and SHORTCUT:  # nothing to simulate: no simulator (``_end_pass``)
        ca.sims.start_pass()
        ca.record.passes += 1
        ca.hints_stable, ca.hints_repeat, ca.repeat_check = True, False, None  # none looked up
        ca.hints.drop_old()
        _end_pass(ca, now, limit, {}, [], False, [], at_min, reasons, looked, under, False,
                  kept_verdicts)  # fmt: skip
        return
    # the pass reads the pods of its candidates only (a moved pod's target's list is read only
    # if that node is simulated later in the pass: a candidate)
    cluster = ca.cluster(candidates)
    covering = (
        ca.budgets.covering([p for s in candidates for p in ca.on_node[s]]) if ca.budgets else []
    )  # the budgets over the candidates' pods
    if covering:
        node_of = np.array(ca.bound, dtype=np.int64)
        pdbs = PdbTracker(ca.budgets.at(now, node_of, covering, *ca.terminating))
    else:
        pdbs = PdbTracker([])
    destinations = ca.active  # copied by the simulator
    if state.node_unschedulable:  # cordoned nodes take no pods (upstream's runner skips them)
        destinations = destinations & ~np.array(state.node_unschedulable, dtype=bool)
    # without node-state intervals nodes keep their labels, taints and cordons all along
    static = ca.static if ca.inp.snapshot.node_state is None else {}
    live = LiveState(
        state,
        ca.demand_by_id,  # every CA pod made so far (``ca.cluster`` made the candidates')
        destinations,
        static,
        ca.position,
        state.node_names,
    )
    simulator = RemovalSimulator(cluster, ca.profile, opts, now / SECOND, live)
    outcomes, found_unremovable, stopped = simulate_candidates(
        ca, simulator, order, pdbs, covering, reasons, limit
    )
    simulator.restore()
    ca.record.passes += 1
    ca.record.hinted += simulator.hinted
    # a pass on the same state reads the hints this one set: if they differ from those it
    # read, it may answer differently (and is run), unless each pod is placed again where this
    # pass placed it (``repeats``); and it orders its candidates by this pass's unneeded nodes
    # (``PreviousCandidates``): in another order it may answer differently too (and is run);
    # then ``DropOldHints``
    # (the repeat is asked only where a pass could stand for the next: ``repeat_again``)
    stable = simulator.stable()
    orders = (order, candidates, empty, frozenset(ca.outcomes), frozenset(outcomes))
    ca.hints_stable = stable and next_order_same(*orders)
    ca.hints_repeat = False
    ca.repeat_check = (orders, ca.sims.used) if not stable and REPEAT and ca.reuse else None
    if not ca.hints_stable:
        ca.dirty = True
    ca.hints.drop_old()
    # nodes the group's minSize would keep however long they stay unneeded (none of none)
    kept = _kept(ca, outcomes, sizes, cluster)
    _end_pass(ca, now, limit, outcomes, found_unremovable, stopped, kept, at_min, reasons,
            looked, under, bool(covering), kept_verdicts)  # fmt: skip


def _no_pass(ca: ClusterAutoscaler, now: int, reasons: dict[str, int]) -> None:
    """A run with no node to judge (none present, or every one skipped as recently
    unremovable): nothing unneeded, ``reasons`` recorded, the old hints dropped, and no pass
    summary. The last pass's would let a later run stand on it and record its reasons, where a
    run then records these (``stood``; found by bench/ca_differential.py seed 160)."""
    ca.unneeded, ca.outcomes, ca.last_unneeded = {}, {}, 0
    ca.record.reasons.append((now, reasons))
    ca.sims.summary = None
    ca.hints.drop_old()
    ca.hints_stable, ca.hints_repeat, ca.repeat_check = True, False, None  # none looked up


def _kept(
    ca: ClusterAutoscaler, outcomes: dict[int, Outcome], sizes: list[int], cluster: Any
) -> list[str]:
    """The removable nodes of ``outcomes`` their group's minSize keeps (``planner.admit``;
    ``sizes``: each group's size by index, ``ca.sizes()``). None where each of their groups is
    larger than its minSize by at least as many nodes as there are removable ones: taking
    them one by one, each group is still above its minSize at each one's turn."""
    if not outcomes:
        return []
    of_node, min_size, count = ca.groups.of_node, ca.groups.min_size, len(outcomes)
    for slot in outcomes:
        group = of_node[slot]
        if sizes[group] - min_size[group] < count:
            return admit(list(outcomes.values()), cluster)[2]
    return []


def _judge(
    ca: ClusterAutoscaler,
    look: list[int],
    reasons: dict[str, int],
    now: int,
    looked: np.ndarray[Any, Any] | None = None,
) -> list[int]:
    """Each node of ``look`` (slot order) through ``eligibility.check``, its reason counted in
    ``reasons`` (in order of first appearance, as a loop over ``look`` adds them): the
    candidates. A node's verdict is kept and judged again only when its pods changed since
    (``ca.unjudged``, set by ``touch``): no pod of the replay is terminating nor any node being
    deleted, so the verdicts depend on the node's pods only (``now`` reads neither). Given
    ``looked`` (``look`` as a mask over the slots: a whole pass's) and more than FEW_LOOKED
    nodes, the slots to judge again and the candidates are found on masks (``ca.unjudged``,
    ``ca.candidate``), not by a Python loop over ``look``. Which candidates have no pod to move is ``empty_ones``, asked apart:
    most passes order none of them (every group at its minimum), and a candidate's CA pods are
    then never made."""
    if not look:
        return []
    candidate, unjudged = ca.candidate_flags, ca.unjudged_flags  # (bytes: the masks' own)
    if len(look) <= FEW_LOOKED:  # plain loops: cheaper than numpy's steps over every slot
        looked = None
    if looked is None:
        changed = [s for s in look if unjudged[s]]
    else:
        changed = np.flatnonzero(looked & ca.unjudged).tolist()
    if changed:  # some node's pods changed since it was judged
        for slot in changed:
            unjudged[slot] = 0
        opts, seconds = ca.options, now / SECOND
        # a node whose utilisation is its ratio (computed by the caller for every slot) is
        # judged by it: CA's remaining checks are then its threshold (``eligibility.check``)
        plain, ratio, used = ca.ratio_is_utilization, ca.ratio, ca.state.requested
        threshold, most = opts.scale_down_utilization_threshold, 2**53 // 1000
        # GPU nodes judged by their GPU requests (``ReplayView.gpu_by_requests``)
        by_gpu, gpu, allocatable = ca.gpu_by_requests, ca.gpu_column, ca.state.allocatable
        gpu_threshold = opts.scale_down_gpu_utilization_threshold
        special, rises = ca.special, ca.bind_rises
        at = ca.at_threshold  # a node at the threshold is a candidate (CA 1.35+)
        for slot in changed:
            if (
                plain.item(slot)
                and used.item(slot, ca.mem) < most
                and used.item(slot, ca.cpu) < most
            ):
                over = over_threshold(ratio.item(slot), threshold, at)
                reason = NOT_UNDERUTILIZED if over else ""
            elif by_gpu.item(slot) and (gpu is None or used.item(slot, gpu) < most):
                # a GPU node's utilisation as CA computes it (``utilization.calculate``): the
                # requests' millis over the allocatable's (0 where it offers none)
                offered = 0 if gpu is None else allocatable.item(slot, gpu)
                value = (
                    float(used.item(slot, gpu) * 1000) / float(offered * 1000) if offered else 0.0
                )
                reason = NOT_UNDERUTILIZED if over_threshold(value, gpu_threshold, at) else ""
            else:
                ca_node = ca.nodes[slot]
                node = CANode(ca_node.name, _allocatable(ca, slot), ca_node.labels,
                              ca_node.annotations)  # fmt: skip
                pods = ca.pods_of(slot)
                group = ca.member_groups()[0].get(ca_node.name)
                # (the replay's GPU nodes are those offering nvidia.com/gpu: ``ReplayView.gpu``)
                rules = Rules(at_threshold=at, gpu_vendors=(GPU_RESOURCE,))
                reason = check(node, pods, group, opts, seconds, rules).reason
            ca.unfit_reason[slot] = reason
            candidate[slot] = not reason  # (a bool: 0 or 1)
            ca.keeps[slot] = keeps(verdict_kind(reason), special.item(slot), rises)
    if looked is None:
        candidates = [s for s in look if candidate[s]]
    else:
        candidates = np.flatnonzero(looked & ca.candidate).tolist()
    left = len(look) - len(candidates)
    if left:  # the others' reasons, in order of first appearance
        reason_of = ca.unfit_reason
        if looked is None:
            unfit = [reason_of[s] for s in look if not candidate[s]]
        else:
            unfit = [reason_of[s] for s in np.flatnonzero(looked > ca.candidate).tolist()]
        same = unfit.count(NOT_UNDERUTILIZED)
        if same == left:  # the only reason (most passes): ``NotUnderutilized``
            reasons[NOT_UNDERUTILIZED] = reasons.get(NOT_UNDERUTILIZED, 0) + same
        else:
            for reason in dict.fromkeys(unfit):
                if reason:
                    reasons[reason] = reasons.get(reason, 0) + unfit.count(reason)
    return candidates


def empty_ones(ca: ClusterAutoscaler, candidates: list[int], now: int) -> set[int]:
    """Those of ``candidates`` with no pod to move (``has_no_pod_to_move``: ``EmptySorting``
    orders them first), each answer kept with its pods' version (``ca.emptied_at``) as
    ``_judge`` keeps its verdicts."""
    if not candidates:
        return set()
    version, at, no_pod = ca.version, ca.emptied_at, ca.no_pod_to_move
    verdicts = ca.verdicts if ca.reuse else None  # the plain path judges each pod anew
    for slot in candidates:
        if at[slot] != version[slot]:
            at[slot] = version[slot]
            no_pod[slot] = has_no_pod_to_move(ca.pods_of(slot), ca.options, now / SECOND, verdicts)
    return {s for s in candidates if no_pod[s]}


def still_candidates(ca: ClusterAutoscaler, nodes: list[int]) -> bool:
    """Whether each of ``nodes`` is a candidate now (``_judge``: its kept verdict, judged again
    where its pods changed, on its screen brought up to date): ``SimulationMemo.unchanged``
    asks it of nodes the last pass refused for their group's minSize."""
    ratios(ca, nodes)
    return len(_judge(ca, sorted(nodes), {}, ca.clock)) == len(nodes)


def _end_pass(
    ca: ClusterAutoscaler,
    now: int,
    limit: int,
    outcomes: dict[int, Outcome],
    found_unremovable: list[int],
    stopped: bool,
    kept: list[str],
    at_min: list[int],
    reasons: dict[str, int],
    looked: np.ndarray[Any, Any],
    under: np.ndarray[Any, Any],
    covering: bool,
    kept_verdicts: np.ndarray[Any, Any] | None = None,
) -> None:
    """The end of a pass that ran, with or without a simulation: the recheck deadlines of the
    nodes found unremovable, whether the next pass may differ (``dirty``), the unneeded nodes
    and the pass's reasons, and (``reuse``) what the pass read (``SimulationMemo.summarise``:
    the next pass's skip test compares the state with it). ``kept``: removable nodes the
    groups' minSize keeps; ``at_min``: candidates not simulated for that reason; ``under``:
    the slots near or under the threshold or judged whatever their ratio (present or not);
    ``kept_verdicts``: ``autoscale_steady.steady``'s nodes."""
    timeout = ca.settings.unremovable_node_recheck_timeout
    if timeout <= ca.settings.scan_interval:  # over before the next pass: it skips nothing
        found_unremovable = []
    deadline = now + timeout
    for slot in found_unremovable:  # ``AddTimeout``: not simulated again before the deadline
        ca.recheck.add_timeout(slot, deadline)
    if found_unremovable:  # the next pass skips them: it may answer differently
        ca.dirty = True
    if stopped:
        after = unneeded_limit(
            ca.options.max_scale_down_parallelism, len(outcomes), ca.settings.unneeded_time,
            ca.intervals.later,
        )  # fmt: skip
        if after != limit:  # the next pass may simulate the candidates left over
            ca.dirty = True
    ca.last_pass = (limit, stopped, bool(found_unremovable))
    ca.outcomes = outcomes
    ca.last_unneeded = len(outcomes)
    ca.unneeded = {s: ca.unneeded.get(s, now) for s in outcomes}
    if kept:
        reasons["NodeGroupMinSizeReached"] = len(kept) + len(at_min)
    reasons["Unneeded"] = len(outcomes) - len(kept)
    kept_reasons = {k: v for k, v in reasons.items() if v}
    ca.record.reasons.append((now, kept_reasons))
    if ca.reuse:
        # every node given a deadline with a quiet answer (``Entry.quiet``: blocked by a pod,
        # or no place for its first pod), each this pass's entry of its slot
        blocked: tuple[int, ...] | None = None
        no_place = 0
        if not found_unremovable:  # ``BlockedByPod`` comes only from the simulations
            if not reasons.get(BLOCKED, 0):
                blocked = ()
        else:
            entries = ca.sims.entries
            if all(entries[s].quiet for s in found_unremovable):
                blocked = tuple(found_unremovable)
                no_place = len(blocked) - reasons.get(BLOCKED, 0)
        if not ca.bind_rises:
            # a node over the screen is ``clear`` (a bind on it not verified) because a bind
            # only raises its ratio, the assumption ``steady`` rests on too; with pods taken off
            # (``autoscale_screen``) a DaemonSet or mirror pod's bind that leaves nothing of a
            # resource's allocatable turns its screen to -inf (judged): no node is clear then,
            # each touched node's screen is read again
            under = np.ones_like(under)
        ca.sims.summarise(
            looked, len(ca.provisioning), covering, kept_reasons, under, blocked, kept_verdicts,
            at_min, no_place,
        )  # fmt: skip


def _expiry_stands(ca: ClusterAutoscaler, held: dict[int, int], now: int, limit: int) -> bool:
    """Whether the pass at ``now``, whose ``held`` deadlines (before ``Update``) some passed,
    answers as the last one with those nodes over the threshold or blocked again
    (``autoscale_expiry``); if so it is recorded as such (``expire``) and counted skipped."""
    summary = ca.sims.summary
    if not autoscale_expiry.applicable(ca):
        return False
    gone = [slot for slot in held if slot not in ca.recheck.deadlines]
    if summary.reasons.get(RECENTLY_UNREMOVABLE, 0) < len(gone):  # each skipped by that pass
        return False
    # the screen of ``gone`` only: ``classify`` reads theirs, ``_judge`` those of some of them
    found = autoscale_expiry.classify(
        ca, gone, ratios(ca, gone), lambda look: _judge(ca, look, {}, now), now, limit
    )
    if found is None or not stands(ca, limit, tuple(gone)):
        return False
    over, blocked, inert = found
    autoscale_expiry.expire(ca, over, blocked, limit, now, inert)
    ca.record.skipped += 1
    ca.record.reasons.append((now, dict(summary.reasons)))
    if ca.hints_repeat:  # as ``stood``
        ca.hints_stable, ca.hints_repeat = True, False
    return True


def _allocatable(ca: ClusterAutoscaler, slot: int) -> dict[str, int]:
    row = ca.state.allocatable[slot]
    return {r: int(v) for r, v in zip(ca.state.resources, row.tolist(), strict=True) if v}


def to_delete(ca: ClusterAutoscaler, now: int) -> list[int]:
    """``NodesToDelete``: unneeded long enough, outside the cool-down after a scale-up. Long
    enough is strictly longer than ``scale-down-unneeded-time`` (``unneeded.Nodes.
    unremovableReason``: ``NotUnneededLongEnough`` unless ``since + time`` is before now), or
    at once where that time is 0. The budgets are less the deletions still in progress
    (``ClusterAutoscaler.deletions_in_progress``)."""
    if now - ca.last_add < ca.settings.delay_after_add:
        return []
    wait = ca.settings.unneeded_time
    due = [ca.outcomes[s] for s in ca.outcomes if not wait or now - ca.unneeded[s] > wait]
    if not due:
        return []
    position = {ca.nodes[s].name: s for s in ca.outcomes}
    going = ca.deletions_in_progress(now)
    empty, drained, _ = select(due, ca.cluster([]), ca.options, going)
    return [position[name] for name in empty + drained]

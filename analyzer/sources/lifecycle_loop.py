"""The synthetic cluster's scheduling loop: every pod placed, run and ended in time order.

The same queue semantics as the replay (``analyzer.scheduling.queue_order``), so that a replay of
the generated snapshot with the generator's profile reproduces it pod for pod, waits, priorities
and preemption included. At every instant:

1. departures first (pods ending, deleted, or preemption victims whose termination ends now);
2. one pass over the pods arriving now and the pending pods that may fit on a node that gained
   room now, in PrioritySort order (priority, creation, creation order); a pending pod's failure
   ends its group's turn in the pass (the replay's queue groups);
3. a pod that fits nowhere may preempt, when the placer can (``Preempter``, e.g. ``KubePlacer``
   with DefaultPreemption): the victims are deleted now and terminate after
   ``TERMINATION_GRACE`` seconds (kube's default ``terminationGracePeriodSeconds``), their
   controllers create replacement pods (a ReplicaSet or Job at once, new names; a StatefulSet
   once the old pod is gone, same name), and the preemptor waits in the queue until room frees
   (it does not preempt again while its victims terminate). It is bound when the victims'
   termination frees the room (or earlier, elsewhere). Only inside the observed range: a victim
   deleted before it leaves no trace in the snapshot, so a replay could not know the room it
   held (before the range, a pod that fits nowhere waits). The PodDisruptionBudgets of
   ``state.objects`` protect victims as in the replay (``lifecycle_budgets``).

A replay reads a pod's arrival as its scheduled time by default, so the generator's waits and
preemptions reach it as what they are in the data — the preemptor bound when its victims ended —
and the replay places every pod where and when the generator did without preempting anyone
itself. With ``arrivals="created"`` (``analyzer.replay.input``) it makes the same preemptions
itself: the victims are marked in the snapshot (``pods.end_reason``).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Sequence
from contextlib import nullcontext

import numpy as np

from analyzer.scheduling.kube_objects import from_kept
from analyzer.scheduling.nominated_holds import Holds
from analyzer.scheduling.queue_order import (
    TERMINATION_GRACE,
    PassOrder,
    may_fit,
    may_fit_beside,
    may_preempt,
    queue_rank,
)
from analyzer.scheduling.requeue import Requeue
from analyzer.scheduling.state import PodDemand
from analyzer.sources.autoscaled_nodes import NodeAutoscaler
from analyzer.sources.catalog import PRIORITY_CLASSES
from analyzer.sources.lifecycle import JOB_TTL, Describe, Pod, SpecResources, _Names
from analyzer.sources.lifecycle_budgets import LoopBudgets
from analyzer.sources.placement import (
    ClusterState,
    PlacementRequest,
    Placer,
    Running,
    preempter_of,
)

__all__ = ["TERMINATION_GRACE", "priority", "run_lifecycles"]
_DEPART, _ARRIVE = 0, 1
_NO_HOLDS = nullcontext()  # no nominated pod holds room: nothing to set aside
_NS = 1_000_000_000


def priority(pod: Pod) -> int:
    """The pod's priority value (from its PriorityClass)."""
    return PRIORITY_CLASSES[pod.template.priority_class]


def _request(
    pod: Pod,
    pools_arr: np.ndarray,
    closed: tuple[str, ...],
    specs: SpecResources,
    masks: dict[str | None, np.ndarray],
    describe: Describe | None,
) -> PlacementRequest:
    requests = dict(specs.requests(pod.spec))
    requests["pods"] = 1
    allowed: np.ndarray
    if pod.pin >= 0:
        allowed = np.zeros(len(pools_arr), dtype=bool)
        allowed[pod.pin] = True
    else:
        pool = pod.template.pool
        if pool not in masks:
            # a pool's own workloads, or any open pool (tainted ones only take their workloads)
            mask = pools_arr == pool if pool is not None else ~np.isin(pools_arr, closed)
            mask.flags.writeable = False  # shared by every pod of that pool
            masks[pool] = mask
        allowed = masks[pool]
    return PlacementRequest(
        uid=pod.uid,
        requests=requests,
        non_zero=specs.non_zero(pod.spec),
        allowed=allowed,
        priority=priority(pod),
        daemonset=pod.pin >= 0,
        time=pod.arrive,
        namespace=pod.template.namespace,
        owner=(pod.owner_kind, pod.owner_name),
        cells=describe(pod) if describe is not None else {},
    )


def _group(pod: Pod) -> tuple[object, ...]:
    """The pod's queue group: pods that fit or fail alike (the replay's shape key: same spec,
    priority, constraints, labels and owner); each DaemonSet pod is a group of its own."""
    return (pod.pin, id(pod.template), pod.workload_name, pod.owner_kind, pod.owner_name)


def run_lifecycles(
    pods: list[Pod],
    state: ClusterState,
    place: Placer,
    rng: np.random.Generator,
    window: tuple[int, int],
    *,
    closed: tuple[str, ...] = ("gpu",),
    describe: Describe | None = None,
    autoscaler: NodeAutoscaler | None = None,
) -> None:
    """Place and run every pod in time order, filling in node, times and phase in place.

    ``autoscaler``: nodes join and leave by cluster-autoscaler's rules
    (``analyzer.sources.autoscaled_nodes``): pods go only to present nodes, a deleted node's pods
    are evicted and replaced by their controllers.

    Pods whose object never exists inside ``window`` (unix seconds, inclusive) are dropped.
    ``closed`` pools are tainted: only the workloads bound to them are placed there.
    ``describe`` gives each placement request the pod's snapshot cells (``PlacementRequest.cells``).
    """
    begin, end = window
    if autoscaler is not None:  # the same array, updated in place as nodes join and leave
        state.present = autoscaler.present
    pools_arr = np.array(state.pools)
    names = _Names(rng)
    preempter = preempter_of(place)
    budgets = None  # the PodDisruptionBudgets among ``state.objects`` protect victims
    if preempter is not None and describe is not None and state.objects:
        pdbs = from_kept(state.objects, "generator objects").pdbs
        budgets = LoopBudgets(pdbs, pods, describe) if pdbs else None
    events: list[tuple[int, int, int]] = []
    for i, pod in enumerate(pods):
        events.append((pod.arrive, _ARRIVE, i))
        if pod.deleted is not None:
            events.append((pod.deleted, _DEPART, i))
    heapq.heapify(events)
    replaced = {p.replaces for p in pods if p.replaces is not None}  # going away in a rollout
    pending: set[int] = set()
    # the pods that arrived at this instant and found no node (the autoscaler's frequent loops
    # run at once when one still waits at the instant's end: ``NodeAutoscaler.settle``)
    became: list[int] = []
    running: set[int] = set()  # bound pods the scheduler placed (DaemonSet pods left out)
    specs = SpecResources()
    masks: dict[str | None, np.ndarray] = {}
    columns = [state.resources.index(r) for r in ("cpu", "memory")]
    slots = state.resources.index("pods")
    on_node: list[set[int]] = [set() for _ in state.nodes]  # with an autoscaler: its pods
    scaled = [*columns, slots]  # the autoscaler's columns: cpu, memory, pods
    # waiting pods the topology plugins refuse are retried when a pod they read moves, as in
    # the replay (``analyzer.scheduling.requeue``); a placer without the plugins has no rule
    topology = getattr(place, "requeue", None)
    rule: tuple[Requeue, Callable[[PlacementRequest], PodDemand]] | None = (
        None if topology is None else topology(state)
    )
    requeue = None if rule is None else rule[0]

    # nominated pods: pod -> (node, end of the nomination), their room held there (``reserve``)
    # for the pods of lower or equal priority (``nominated_holds``)
    def reserve(i: int, node: int) -> None:
        request = pods[i].request
        assert request is not None  # offered before it preempted
        state.reserve(node, request)

    def release(i: int, node: int) -> None:
        request = pods[i].request
        assert request is not None
        state.release(node, request)

    holds = Holds(lambda i: priority(pods[i]), reserve, release)
    held_pods = holds.held  # (its truth read at every try: the dict itself, no method call)
    freed = holds.freed  # nodes whose hold ended (``admit_freed``)
    dropped: list[int] = []  # pods a preemption at this try took the nomination of
    # a pending pod's nominated node, tried alone first (``evaluateNominatedNode``) until the pod
    # is bound or deleted, or a preemption attempt of it finds no candidate
    nominee_of: dict[int, int] = {}
    fits_alone = getattr(preempter, "fits_alone", None)

    def demand_of(j: int) -> PodDemand:
        request = pods[j].request
        assert rule is not None and request is not None  # pending and moved pods were offered
        return rule[1](request)

    def moved(i: int) -> None:
        if requeue is not None:
            requeue.note(demand_of(i))

    def rank(i: int) -> int:
        return queue_rank(priority(pods[i]), pods[i].created * _NS, i)

    def bind(i: int, now: int) -> bool:
        pod = pods[i]
        assert pod.request is not None
        request = pod.request
        if autoscaler is not None:  # only nodes that exist now
            request = dataclasses.replace(request, allowed=request.allowed & autoscaler.present)
        held = holds.unhold(i) if held_pods else None  # a nominated pod does not count itself
        target = nominee_of.get(i, -1) if nominee_of else -1
        if target >= 0 and fits_alone is not None and fits_alone(request, state, target):
            node: int | None = target  # its nominated node, unscored
        else:
            node = place(request, state)
        if node is None:
            if held is not None and now < held[1]:  # still nominated (its victims terminate)
                holds.hold(i, *held)
            return False
        if not 0 <= node < len(state.nodes):  # ``allowed`` is advice: a placer may ignore it
            raise ValueError(f"placer chose node {node} for pod {pod.uid}: no such node")
        state.bind(node, pod.request)
        moved(i)
        nominee_of.pop(i, None)
        pod.node = node
        pod.scheduled = now
        pod.started = now + int(rng.integers(2, 8)) + (30 if pod.spec.init_containers else 0)
        pod.phase = "Running"
        if pod.pin < 0:
            running.add(i)
        on_node[node].add(i)
        template = pod.template
        if template.duration > 0:
            run = int(template.duration * rng.lognormal(0.0, 0.3))
            if pod.fails:
                run = max(60, run // 3)
            heapq.heappush(events, (pod.started + run, _DEPART, i))
        if pod.replaces is not None:
            heapq.heappush(events, (pod.started + 10, _DEPART, pod.replaces))
        return True

    def preempt(i: int, now: int) -> bool:
        """DefaultPreemption for pod ``i`` (fits nowhere): delete the victims, True if any."""
        pod = pods[i]
        if preempter is None or pod.pin >= 0 or now < max(begin, pod.nominated_until):
            return False  # before the range: see the module docstring
        assert pod.request is not None
        lower = [j for j in running if priority(pods[j]) < pod.request.priority]
        if not lower:  # no candidate: upstream clears the pod's nominated node
            nominee_of.pop(i, None)
            return False
        lower.sort(key=lambda j: (pods[j].scheduled, j))  # bound order, as the replay keeps it
        bound = [
            Running(pods[j].node, req, (pods[j].scheduled or 0) * _NS)
            for j in lower
            if (req := pods[j].request) is not None
        ]
        protecting = budgets.at(now, lower) if budgets is not None else []
        request = pod.request
        if autoscaler is not None:  # only nodes that exist now (as ``bind``): a node not there
            # yet passes every filter, so the pod would seem to fit and preempt no one
            request = dataclasses.replace(request, allowed=request.allowed & autoscaler.present)
        found = preempter.preempt(request, state, now, bound, protecting)
        if found is None:
            nominee_of.pop(i, None)
            return False
        by_uid = {pods[j].uid: j for j in lower}
        pod.nominated_until = now + TERMINATION_GRACE
        # the nominated node holds the pod's room for the pods of lower or equal priority
        assert i not in holds  # (it preempts only once its last nomination has ended)
        holds.hold(i, found[0], pod.nominated_until)
        nominee_of[i] = found[0]
        pod.preemptions.append((now, found[0], tuple(found[1]), pod.nominated_until))
        # the pods of lower priority nominated there lose their nomination (upstream's
        # ``prepareCandidate``): tried again, they may preempt again
        for other in holds.displaced(priority(pod), found[0]):
            nominee_of.pop(other, None)
            taken = pods[other]
            taken.nominated_until = now
            t, node, victims, _ = taken.preemptions[-1]
            taken.preemptions[-1] = (t, node, victims, now)  # the nomination ended now
            dropped.append(other)
        for uid in found[1]:
            victim = by_uid[uid]
            if pods[victim].preempted is None:
                delete_victim(victim, now)
        return True

    def delete_victim(j: int, now: int) -> None:
        """A preemption victim: deleted now, gone after the grace period; its controller makes
        a new pod (not for pods a rollout is replacing, nor a StatefulSet pod a rollout deletes)."""
        victim = pods[j]
        victim.preempted = now
        gone = now + TERMINATION_GRACE
        heapq.heappush(events, (gone, _DEPART, j))
        if j in replaced or victim.owner_kind == "DaemonSet":
            return
        if victim.owner_kind == "StatefulSet":
            if victim.deleted is not None:
                return
            new = _retry(victim, names, gone + 2)
            new.name = victim.name  # the same ordinal, once the old pod is gone
        else:
            new = _retry(victim, names, now)
        new.replaces = None
        pods.append(new)
        heapq.heappush(events, (new.arrive, _ARRIVE, len(pods) - 1))

    def depart(i: int, now: int) -> int | None:
        """Handle one departure event; the node that gained room, if any."""
        pod = pods[i]
        if pod.finished is not None or pod.phase == "Deleted":
            return None
        if pod.preempted is not None and now < pod.preempted + TERMINATION_GRACE:
            return None  # terminating: it ends when its grace period does
        if pod.node < 0:  # deleted while pending
            pending.discard(i)
            pod.deleted = now
            pod.phase = "Deleted"
            nominee_of.pop(i, None)
            held = holds.unhold(i) if held_pods else None  # a nominated pod: its hold goes with it
            return None if held is None else held[0]
        assert pod.request is not None
        node = pod.node
        state.unbind(node, pod.request)
        moved(i)
        running.discard(i)
        on_node[node].discard(i)
        pod.finished = now
        if pod.preempted is not None:
            pod.phase = "Failed"
            pod.deleted = now
        elif pod.template.duration > 0:
            pod.phase = "Failed" if pod.fails else "Succeeded"
            pod.deleted = now + JOB_TTL
            if pod.fails:  # the Job controller creates a replacement pod (new name, new uid)
                pods.append(_retry(pod, names, now + 10))
                heapq.heappush(events, (pods[-1].arrive, _ARRIVE, len(pods) - 1))
        else:
            pod.deleted = now
        return node

    def cpu_memory(j: int) -> tuple[int, int]:
        request = pods[j].request
        assert request is not None  # pending pods were offered
        return request.requests.get("cpu", 0), request.requests.get("memory", 0)

    def fitting(
        changed: Sequence[int], waiting: list[int]
    ) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
        """The pods of ``waiting`` that may fit on a node of ``changed`` (the replay's
        ``may_fit``); and the changed nodes, their free cpu and memory, the pods each takes
        more and the holds there."""
        rows = np.array(sorted(set(changed)), dtype=np.int64)
        free = state.allocatable[rows][:, columns] - state.requested[rows][:, columns]
        slots_left = state.allocatable[rows, slots] - state.requested[rows, slots]
        need = np.array([cpu_memory(j) for j in waiting], dtype=np.int64).reshape(-1, 2)
        held = holds.beside(rows.tolist()) if held_pods else []
        if held:  # a hold counts only for pods of lower or equal priority, not its holder
            hits = may_fit_beside(
                need, waiting, [priority(pods[j]) for j in waiting], free, slots_left, held,
                lambda j: np.array(cpu_memory(j), dtype=np.int64),
            )  # fmt: skip
        else:
            hits = may_fit(need, free, slots_left > 0)
        found = [j for j, hit in zip(waiting, hits.tolist(), strict=True) if hit]
        return found, rows, free, slots_left, held

    def hopeful(changed: Sequence[int]) -> list[int]:
        """Pending pods that may fit on a node that gained room (the replay's ``may_fit``)."""
        if not pending or not changed:
            return []
        waiting = sorted(pending)
        found, rows, free, slots_left, held = fitting(changed, waiting)
        if preempter is None or not running:
            return found
        # room to preempt in (``queue_order.may_preempt``): retried as in the replay
        hit = set(found)
        asking = [j for j in waiting if j not in hit and pods[j].pin < 0]
        if not asking:
            return found
        lower = [(r, j) for r, node in enumerate(rows.tolist()) for j in on_node[node]
                 if j in running]  # fmt: skip
        lower += [(r, j) for r, j, _ in held]  # a lower-priority hold goes with them
        placed = (
            np.array([r for r, _ in lower], dtype=np.int64),
            np.array([priority(pods[j]) for _, j in lower], dtype=np.int64),
            np.array([cpu_memory(j) for _, j in lower], dtype=np.int64).reshape(-1, 2),
        )
        asked = np.array([cpu_memory(j) for j in asking], dtype=np.int64)
        hits = may_preempt(asked, [priority(pods[j]) for j in asking], free, slots_left, placed)
        return [*found, *(j for j, hit in zip(asking, hits.tolist(), strict=True) if hit)]

    def need(j: int) -> np.ndarray:
        request = pods[j].request
        assert request is not None
        return np.array([request.requests.get(state.resources[c], 0) for c in scaled])

    clock = [0]  # the autoscaler's run being made (``movable`` reads it)

    def movable(j: int) -> bool:
        pod = pods[j]
        if not pod.owner_kind:
            return False
        if pod.template.namespace != "kube-system":
            return True
        # CA 1.33+: a kube-system pod no PodDisruptionBudget covers is drainable once created
        # longer ago than the timeout (strictly: ``isBspPassedDisruptionTimeout``)
        timeout = autoscaler.system_timeout if autoscaler is not None else None
        return timeout is not None and clock[0] > pod.created + timeout

    def autoscale(now: int, changed: list[int]) -> list[int]:
        """The autoscaler's run at ``now``; the replacement pods of the evicted ones."""
        assert autoscaler is not None
        clock[0] = now
        decision = autoscaler.act(
            now,
            state.allocatable[:, scaled],
            state.requested[:, scaled],
            on_node,
            # a pod waiting for its victims to go asks no new node (CA's
            # ``FilterOutExpendableAndSplit``): its nominated node holds it
            sorted((j for j in pending if j not in holds), key=rank),
            need,
            movable,
            lambda j: pods[j].created,
        )
        changed.extend(decision.joined)
        if requeue is not None and (decision.joined or decision.deleted):
            requeue.nodes_changed()
        replacements = []
        for j in decision.evicted:  # not as a Job pod ending: no retry of it
            victim = pods[j]
            assert victim.request is not None
            state.unbind(victim.node, victim.request)  # its node takes no pods (it is going)
            moved(j)
            running.discard(j)
            on_node[victim.node].discard(j)
            # terminating for its grace period, then gone
            gone = now + TERMINATION_GRACE
            victim.finished, victim.phase, victim.deleted = gone, "Failed", gone
            new = _retry(victim, names, now, delay=0)
            pods.append(new)
            replacements.append(len(pods) - 1)
        return replacements

    def one_pass(now: int, fresh: list[int], retried: set[int]) -> None:
        """One pass in rank order over the arrivals ``fresh`` and the groups of the pending
        pods ``retried`` and of those a move since their last try may let in (``requeue``); a
        group stops at its first failure, and a bind may let waiting groups in
        (``queue_order.PassOrder``, as the replay's pass)."""
        members: dict[tuple[object, ...], list[int]] = {}
        at_start = set(pending)  # the pods waiting as the pass begins (the replay's queue)
        freed.clear()  # (holds ended before the pass: their nodes were screened)
        # every waiting group when a bind may let one in, else the groups retried
        for j in sorted(pending if requeue is not None else retried, key=rank):
            members.setdefault(_group(pods[j]), []).append(j)
        order = PassOrder(members, rank)
        order.add(_group(pods[j]) for j in retried)
        if requeue is not None and requeue.pending and pending:
            found = requeue.admitted(order.idle(), demand_of, lambda j: _group(pods[j]))
            order.add(_group(pods[j]) for j in found)
        mark = requeue.clock if requeue is not None else 0

        def let_in(j: int) -> None:
            """Pod ``j``'s group joins the pass at its next untried pod, even if it was not in
            this pass (its members: the group's pods waiting when the pass began, as the
            replay's queue holds them)."""
            group = _group(pods[j])
            if group not in members:
                members[group] = sorted(
                    (k for k in at_start if k in pending and _group(pods[k]) == group), key=rank
                )
            order.add([group])

        def retry_dropped() -> None:
            """The pods whose nomination a preemption just took over try again in the pass
            (upstream moves them to the active queue)."""
            for j in dropped:
                if j in at_start and j in pending:
                    let_in(j)
            dropped.clear()

        def admit_freed() -> None:
            """Holds ended during the pass: the waiting pods that may fit in that room join it
            at their rank (the replay's ``admit_freed``)."""
            waiting = sorted(j for j in pending if j in at_start)
            if waiting:
                for j in fitting(freed, waiting)[0]:
                    let_in(j)
            freed.clear()

        def readmit() -> None:
            nonlocal mark
            if requeue is not None and pending and requeue.last > mark:
                found = requeue.admitted(
                    order.idle(), demand_of, lambda j: _group(pods[j]), after=mark
                )
                mark = requeue.clock
                order.add(_group(pods[j]) for j in found)

        for pod in [*sorted(fresh, key=rank), None]:
            while True:
                if freed:  # holds ended in the pass: who may fit there joins it at its rank
                    admit_freed()
                head = order.peek()
                if head is None or (pod is not None and rank(head) >= rank(pod)):
                    break
                order.pop()
                # the holds of nominated pods of lower priority do not count for it
                with holds.aside(priority(pods[head])) if held_pods else _NO_HOLDS:
                    if bind(head, now):
                        pending.discard(head)
                        order.advance()
                        readmit()
                        continue
                    nominated = preempt(head, now)
                if requeue is not None:
                    requeue.tried(_group(pods[head]))
                if nominated:
                    order.advance()
                else:
                    order.stop()
                if dropped:  # nominations it took over: those pods try again
                    retry_dropped()
            if pod is None:
                break
            with holds.aside(priority(pods[pod])) if held_pods else _NO_HOLDS:
                if bind(pod, now):
                    pending.discard(pod)
                    readmit()
                    continue
                preempt(pod, now)
            pending.add(pod)
            became.append(pod)
            if requeue is not None:
                requeue.tried(_group(pods[pod]))
            if dropped:
                retry_dropped()

    while events or (autoscaler is not None and autoscaler.due() <= end):
        now = events[0][0] if events else end + 1
        if autoscaler is not None:
            now = min(now, autoscaler.due())
        if now > end:
            break
        departing: list[int] = []
        arriving: list[int] = []
        while events and events[0][0] == now:
            _, kind, i = heapq.heappop(events)
            (departing if kind == _DEPART else arriving).append(i)
        changed = [node for i in departing if (node := depart(i, now)) is not None]
        if autoscaler is not None and now == autoscaler.due():
            arriving.extend(autoscale(now, changed))
        fresh = []
        for i in arriving:
            pod = pods[i]
            if pod.phase == "Deleted":  # replaced before it was even offered
                continue
            pod.request = _request(pod, pools_arr, closed, specs, masks, describe)
            fresh.append(i)
        retried = set(hopeful(changed))
        if requeue is not None and not pending:
            requeue.forget()
        while True:
            one_pass(now, fresh, retried)
            # pods that failed in the pass wait only after it: a bind in it may let them in
            # (the replay's rule: one more pass)
            if requeue is None or not requeue.pending or not pending:
                break
            fresh, retried = [], set()
        # nominations whose victims are gone and whose preemptor was not tried in the pass (it
        # fits nowhere that changed): released after it (the autoscaler's run counted them, as
        # upstream's), their room retried at once
        ended = [node for _, node in holds.ending(now)] if held_pods else []
        if ended:
            one_pass(now, [], set(hopeful(ended)))
        if autoscaler is not None:  # the instant's end: a run at once with frequent loops
            autoscaler.settle(now, any(j in pending for j in became))
        became.clear()
    for pod in pods:
        if pod.deleted is not None and pod.deleted > end:
            pod.deleted = None
        if pod.finished is not None and pod.finished > end:
            pod.finished = None
            pod.phase = "Running"
        if pod.phase == "Deleted":
            pod.phase = "Pending"
    pods[:] = [p for p in pods if p.created <= end and (p.deleted is None or p.deleted >= begin)]


def _retry(failed: Pod, names: _Names, at: int, delay: int = 1) -> Pod:
    """The controller's replacement for a failed or deleted pod (new name, new uid), offered to
    the scheduler ``delay`` seconds after it is created."""
    job_name = failed.owner_name
    return Pod(
        uid=names.uid(),
        name=f"{job_name}-{names.suffix(5)}",
        template=failed.template,
        owner_kind=failed.owner_kind,
        owner_name=failed.owner_name,
        workload_kind=failed.workload_kind,
        workload_name=failed.workload_name,
        created=at,
        arrive=at + delay,
        spec=failed.spec,
    )

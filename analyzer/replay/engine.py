"""Event-driven replay of a snapshot's pod placements under a scheduling strategy.

Semantics (DESIGN.md "Replay", normative):

- events in time order: pod arrivals at the scheduled time (else created, first seen, snapshot
  start), pod departures at the finished time (else last seen, when that is before the end of the
  data), nodes joining at ``first_seen`` and leaving at ``last_seen``; at one instant departures
  come first, then nodes leaving, nodes joining, and arrivals last;
- DaemonSet and static/mirror pods (``analyzer.core.pod_intervals.pinned_pods``) stay on their real node in
  every strategy;
- a pod that fits nowhere waits in a pending queue, FIFO by arrival like the scheduling queue
  (PrioritySort profiles: priority first, then the queue timestamp — the pod's creation — then
  the row), and is retried whenever capacity frees (a departure or a node joining; for
  load-aware profiles also at every NodeMetric refresh): at each instant the arrivals and the
  pending pods that may fit now are tried in one pass in queue order
  (``analyzer.scheduling.queue_order``, the synthetic generator's loop too); its wait is
  recorded, and pods still pending at the end are reported. A pod whose real lifetime ends while
  it is still pending leaves the queue unplaced;
- with DefaultPreemption a pod that fits nowhere may evict lower-priority pods
  (``analyzer.replay.preemption``), as kube-scheduler does (``analyzer.replay.terminations``): the
  victims are deleted and keep their room for their graceful termination, the preemptor is
  nominated, waits in the queue and is bound when room frees (it preempts no more meanwhile);
  while nominated, its requests are held on that node for the pods of lower or equal priority
  (``analyzer.scheduling.nominated_holds``: upstream's ``addNominatedPods``; a higher preemption
  on that node ends it), and with observed arrivals the data's own nominations
  (``ReplayInput.nominations``) are held likewise where their victims terminate. A nominated
  pod tries its nominated node alone first and goes there, unscored, when it passes the filters
  (``evaluateNominatedNode``); the nomination lasts until the pod is bound or deleted, or a
  preemption attempt of it finds no candidate.
  A victim whose termination ends leaves its node and queues again as its controller's new pod
  (queue timestamp: its deletion), unless the input says that pod is in the data
  (``ReplayInput.replaced``, arrivals "created": then it is simply gone). With arrivals
  "created" nobody preempts before the data's start (pods deleted before it are not in the data,
  so the cluster then held more than the replay knows);
- pods on a node that leaves are tried again at once, as arrivals (their controllers' new pods,
  which kube-scheduler's active queue takes at once), keeping their place by arrival; those that
  fit nowhere wait in the queue (until 2026-12-01 they went to the queue untried, and waited
  until capacity freed somewhere they fit, however much room other nodes had);
- with the snapshot's node-state intervals, taints, cordons and not-ready periods hold only
  while they did, and NoExecute taints evict (``analyzer.replay.node_state``);
- ties are broken with a seeded ``numpy`` Generator, so the same seed gives the same result;
- the strategy ``observed`` keeps every pod where it really ran: the baseline.

Times inside the engine are int64 nanoseconds since the epoch (UTC). The hot path (one scoring per
placement) goes through ``analyzer.replay.scoring.ScoreCache`` over the scheduling core's
``ClusterState``, updated in place with ``bind``/``unbind``.
"""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from functools import partial
from typing import Any

import numpy as np

from analyzer.core.memory import gc_paused
from analyzer.replay.autoscale_loop import ClusterAutoscaler
from analyzer.replay.autoscale_setup import AutoscalerSettings, NodeGroups
from analyzer.replay.budgets import budgets_of
from analyzer.replay.input import (
    ARRIVE,
    DEPART,
    NEVER,
    NODE_LEAVE,
    ReplayInput,
)
from analyzer.replay.karpenter_loop import KarpenterAutoscaler
from analyzer.replay.karpenter_setup import KarpenterPools, KarpenterSettings
from analyzer.replay.loadfeed import LoadFeed
from analyzer.replay.node_state import TAINT_EVICTED, NodeStateTimeline
from analyzer.replay.preemption import ReplayPreemption
from analyzer.replay.priority_order import by_priority, pod_priorities, queue_rank
from analyzer.replay.queue import PendingQueue
from analyzer.replay.recorder import Recorder
from analyzer.replay.refusals import Refusal, RefusalCounter, WaitReasons
from analyzer.replay.result import ReplayResult
from analyzer.replay.scoring import ScoreCache
from analyzer.replay.strategy import OBSERVED as OBSERVED
from analyzer.replay.strategy import OBSERVED_STRATEGY as OBSERVED_STRATEGY
from analyzer.replay.strategy import Strategy as Strategy
from analyzer.replay.terminations import GRACE_NS, Terminations
from analyzer.replay.topology import TopologyCheck
from analyzer.scheduling.gpu.devices import attach_devices
from analyzer.scheduling.nominated_holds import HOLD, Holds
from analyzer.scheduling.queue_order import PassOrder
from analyzer.scheduling.queue_order import queue_rank as priority_rank
from analyzer.scheduling.requeue import Requeue

# the second word of the seed of DefaultPreemption's candidate offsets (a stream of their own)
PREEMPTION_STREAM = 1
AUTOSCALER_STREAM = 2  # the expander's random choices
# cluster-autoscaler's quiet instants (no node Ready, no run due) left to its ``ready`` alone;
# False: ``ready`` and ``tick`` called at every instant (the reference the tests compare it
# with: the same decisions)
CA_QUIET_INSTANTS = True
NO_HOLDS = nullcontext()  # no nominated pod holds room: nothing to set aside


# No cycle collection while it runs: its loop makes no cyclic garbage (none in the seeded runs,
# with and without an autoscaler), so collections only walked live objects (under CA ~100k
# containers, ~0.1 s a week at 500 nodes); reference counting frees all (``gc_paused``).
# Process-wide, never left off: replays overlapping on a Dask worker may run with it on (slower)
@gc_paused()
def replay(
    inp: ReplayInput,
    strategy: Strategy,
    seed: int = 0,
    *,
    stop_after: int | None = None,
    matrices: Any = None,
    rescore_all: bool = False,
    autoscaler: tuple[NodeGroups, AutoscalerSettings]
    | tuple[KarpenterPools, KarpenterSettings]
    | None = None,
) -> ReplayResult:
    """Replay every event of ``inp`` under ``strategy``; deterministic for a given ``seed``.

    ``stop_after`` ends the replay at the first instant after that many events were handled (a
    partial replay for benchmarks; the result says so in ``notes``). ``matrices``: the
    ``analyzer.replay.projection.UsageMatrices`` of ``inp`` when the caller has them (load-aware feeds).
    ``rescore_all``: score every node for every pod with ``Profile.evaluate`` instead of the
    incremental caches (same results, much slower: the reference the tests and benchmarks use).
    ``autoscaler``: the node groups and settings of an input from
    ``analyzer.replay.autoscale_setup.with_node_groups``: cluster-autoscaler drives the node set
    (``analyzer.replay.autoscale_loop``; not for ``observed``); or the pools and settings of
    ``analyzer.replay.karpenter_setup.with_shapes``: Karpenter does (``karpenter_loop``).
    """
    rng = np.random.default_rng(seed)
    state = inp.fresh_state()
    timeline = NodeStateTimeline.from_snapshot(inp.snapshot, inp.node_names, inp.start, inp.end)
    if timeline is not None:
        timeline.initial(state, inp.start)
    profile = strategy.profile
    devices = None
    if profile is not None and profile.uses_devices:  # GPU policies: track every GPU
        devices = attach_devices(state, inp.gpu_workload())
    inp.hold_baseline(state)  # an autoscaler's spare nodes' DaemonSet and static pods
    active = inp.node_join <= inp.start
    state.present = active  # updated in place as nodes join and leave (ImageLocality's spread)
    feed = None
    cache = None
    if strategy.profile is not None:
        feed = LoadFeed.for_profile(
            inp, strategy.profile, state, matrices, incremental=not rescore_all
        )
        cache = ScoreCache(
            strategy.profile, state, active, dynamic=feed is not None, rescore_all=rescore_all
        )
    # waiting pods the topology plugins refuse are retried when a pod they read moves
    # (``analyzer.scheduling.requeue``), not only when room grows
    requeue = None
    if cache is not None and profile is not None and TopologyCheck(profile, state).present:
        requeue = Requeue(state.objects.namespaces)
    rec = Recorder(inp.pod_count, inp.start, inp.end)
    on_node: list[set[int]] = [set() for _ in inp.node_names]
    bound = [-1] * inp.pod_count
    times, kinds, index = inp.events
    arrivals = index[kinds == ARRIVE]
    ranks = np.empty(inp.pod_count, dtype=np.int64)
    ranks[arrivals] = np.arange(len(arrivals))
    pinned, real_node = inp.pinned.tolist(), inp.real_node.tolist()
    departure, demands, keys = inp.departure.tolist(), inp.demands, inp.shape_keys
    priorities, ordered = pod_priorities(demands), by_priority(profile)
    # queue rank: arrival order, or PrioritySort's (priority, queue timestamp = creation, row)
    if ordered:
        queued = (inp.arrival if inp.queued is None else inp.queued).tolist()
        seq = [priority_rank(priorities[p], queued[p], p) for p in range(inp.pod_count)]
    else:
        seq = [queue_rank(priorities[p], r, ordered) for p, r in enumerate(ranks.tolist())]
    pre = ReplayPreemption.for_profile(
        profile, state, active, demands, priorities, on_node, cache, budgets_of(inp, state),
        np.random.default_rng([seed, PREEMPTION_STREAM]),  # the candidates' offsets
    )  # fmt: skip
    replaced = None if inp.replaced is None else inp.replaced.tolist()
    renewed = itertools.count()  # replacements queued so far (their queue positions)
    ending = Terminations(inp.start if inp.arrivals == "created" else -NEVER)
    victim_rows: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    # pinned pods go back to their own node only, so each is a group of its own
    queue = PendingQueue(
        seq, lambda pod: pod.to_bytes(8, "little") + b"pin" if pinned[pod] else keys[pod]
    )
    scaler: ClusterAutoscaler | KarpenterAutoscaler | None = None
    if autoscaler is not None and profile is not None:
        kind: Any = (
            KarpenterAutoscaler
            if isinstance(autoscaler[1], KarpenterSettings)
            else ClusterAutoscaler
        )  # same engine-facing methods
        scaler = kind(
            inp, *autoscaler, profile, state, active, on_node, bound, budgets_of(inp, state),
            np.random.default_rng([seed, AUTOSCALER_STREAM]),
        )  # fmt: skip
    if scaler is not None and pre is not None:  # victims count in the budgets it reads
        scaler.terminating = (pre.deleting, pre.gone)
    if isinstance(scaler, ClusterAutoscaler) and feed is None:
        # an instant with nothing to do is nothing to the scheduler: the loop's idle runs may
        # be left out (``analyzer.replay.autoscale_idle``)
        scaler.queued = queue.pods
    # pods that started waiting at this instant, where cluster-autoscaler's frequent loops run
    # it again at once for a pod that became unschedulable (``autoscale_settle.trigger``)
    fresh: list[int] | None = (
        [] if isinstance(scaler, ClusterAutoscaler) and scaler.frequent else None
    )
    # the autoscaler's ``touch`` (per bind and unbind), looked up once
    scaler_touch = None if scaler is None else scaler.touch
    # cluster-autoscaler, whose quiet instants skip ``tick`` (``ClusterAutoscaler.tick``)
    ca = scaler if isinstance(scaler, ClusterAutoscaler) and CA_QUIET_INSTANTS else None
    # the autoscaler where budgets count waiting pods and victims; the queue's list at the last end
    watcher, listed = (scaler if scaler is not None and scaler.budgets else None), None
    evicted = 0
    counter = None if profile is None else RefusalCounter(profile, state, active, cache)
    why = WaitReasons(counter, keys, demands, pinned)
    # a pending pod's nominated node (its status.nominatedNodeName), which it tries first
    nominee_of: dict[int, int] = {}
    # the data's nominations (arrivals "scheduled": the preemptions are the data's) and the next
    noms, nom_at = (inp.nominations if cache is not None else None), 0  # (observed: none)
    if noms is not None:
        noms = (noms[0], noms[1].tolist())
    refused = why.failed

    def bind(pod: int, node: int, now: int) -> None:
        gpus = None
        if state.devices is not None and profile is not None and not pinned[pod]:
            gpus = profile.choose_gpus(state, demands[pod], node, rng)
        state.bind(node, demands[pod], gpus)
        on_node[node].add(pod)
        bound[pod] = node
        if nominee_of:
            nominee_of.pop(pod, None)  # bound: its nomination is over
        rec.place(pod, node, now)
        if scaler_touch is not None:
            scaler_touch(node, False, pod)
        if pre is not None and not pinned[pod]:
            pre.bound(pod, node, now)
        if timeline is not None and not pinned[pod] and state.node_taints[node]:
            # a pod placed on a node with a NoExecute taint it tolerates for a while
            timeline.schedule(
                pod, state.node_taints[node], demands[pod].constraints.tolerations, now
            )
        if cache is not None:
            cache.touch(node)
        if requeue is not None:
            requeue.note(demands[pod])
        if feed is not None:
            feed.bound(pod, node, now)

    def unbind(pod: int, now: int) -> int:
        node = bound[pod]
        state.unbind(node, demands[pod])
        on_node[node].discard(pod)
        ending.forget(pod)
        if timeline is not None:
            timeline.forget(pod)
        bound[pod] = -1
        rec.end_segment(pod, now)
        if scaler_touch is not None:
            scaler_touch(node, True, pod)
        if pre is not None and not pinned[pod]:
            pre.unbound(pod)
        if cache is not None:
            cache.touch(node)
        if requeue is not None:
            requeue.note(demands[pod])
        if feed is not None:
            feed.unbound(pod, node, now)
        return node

    def nodes_moved() -> None:
        """A node joined, left, or its taints or cordon changed."""
        if requeue is not None:
            requeue.nodes_changed()

    def enqueue(pod: int, now: int, reason: Refusal) -> None:
        queue.add(pod)
        rec.start_wait(pod, now)
        why.waits(pod, reason)
        if fresh is not None:
            fresh.append(pod)

    def reserve(pod: int, node: int) -> None:
        state.reserve(node, demands[pod])
        if cache is not None:
            cache.touch(node)

    def release(pod: int, node: int) -> None:
        state.release(node, demands[pod])
        if cache is not None:
            cache.touch(node)

    # nominated pods: pod -> (node, end of the nomination, ns), their room held there for the
    # pods of lower or equal priority (``nominated_holds``)
    held_touch = None if scaler_touch is None else partial(scaler_touch, pod=HOLD)
    holds = Holds(priorities.__getitem__, reserve, release, held_touch)
    held_pods = holds.held  # (its truth read at every try: the dict itself, no method call)
    freed = holds.freed  # nodes whose hold ended (``admit_freed``)
    dropped: list[int] = []  # pods a preemption at this try took the nomination of

    def observed_nominations(now: int) -> list[tuple[int, int, int, int, int]]:
        """The data's nominations starting by ``now`` not taken yet (``inp.nominations``), as
        (rank, preemptor, node, start, end) in rank order: each is held (``nominate``) in the pass
        where the preemptor's turn would come, as it preempted there; one that started before
        this instant (no instant between) at once."""
        nonlocal nom_at
        if noms is None or nom_at >= len(noms[0]) or noms[0][nom_at][0] > now:
            return []
        spans, due = noms[0], []
        while nom_at < len(spans) and spans[nom_at][0] <= now:
            start, pod, node, until = spans[nom_at]
            nom_at += 1
            due.append((seq[pod] if start == now else -1, pod, node, start, until))
        due.sort()
        return due

    def nominate(due: list[tuple[int, int, int, int, int]], before: int | None, now: int) -> None:
        """Hold the room of the nominations of ``due`` ranked before ``before`` (None: all)
        where their victims terminate in the replay too (a pod the data says was preempted,
        ending with the nomination, on that node); taken off ``due``. An entry of node -1
        releases its pod's hold if it has ended (``ripe``)."""
        assert noms is not None
        marked = noms[1]
        while due and (before is None or due[0][0] < before):
            _, pod, node, start, until = due.pop(0)
            if pod in holds and holds.held[pod][1] <= now:
                holds.unhold(pod)  # ended: at the preemptor's turn, or replaced by a new one
            if node < 0 or until <= now or bound[pod] >= 0 or pod in holds or not active[node]:
                continue
            # its victims: the pods the data says were preempted, terminating there since the
            # nomination started (its end is earlier if a preemption took it over)
            if any(marked[p] and departure[p] == start + GRACE_NS for p in on_node[node]):
                holds.hold(pod, node, until)
                nominee_of[pod] = node

    def try_place(pod: int, now: int) -> bool:
        if pinned[pod] or cache is None:  # pinned pods and `observed`: the real node
            node = real_node[pod]
            if node < 0:
                return False
        else:
            held = holds.unhold(pod) if held_pods else None  # a nominee does not count itself
            target = nominee_of.get(pod, -1) if nominee_of else -1
            if target >= 0 and active[target] and cache.fits_alone(demands[pod], target, now / 1e9):
                bind(pod, target, now)  # its nominated node, unscored (``evaluateNominatedNode``)
                return True
            choice = cache.choose(keys[pod], demands[pod], now / 1e9, rng)
            if choice is None:
                if held is not None and now < held[1]:  # still nominated: held again
                    holds.hold(pod, *held)
                return False
            node = choice
        bind(pod, node, now)
        return True

    def preempt(pod: int, now: int) -> bool:
        """DefaultPreemption for ``pod`` (fits nowhere): delete the victims (they terminate) and
        nominate the node; the pod stays pending. True if it preempted."""
        if pre is None or pinned[pod] or not ending.may_preempt(pod, now):
            return False
        found = pre.attempt(pod, now, keys[pod])
        if found is None:  # no candidate: upstream clears the pod's nominated node
            if nominee_of:
                nominee_of.pop(pod, None)
            return False
        node, victims = found
        for victim in victims:
            for column, value in zip(victim_rows, (victim, pod, node, now), strict=True):
                column.append(value)
        pre.deleting[victims] = True
        if watcher is not None:  # victims: not healthy in their budgets
            watcher.reads_changed()
        ending.preempted(pod, victims, now)
        # the nominated node holds the pod's room for the pods of lower or equal priority
        # (upstream's ``addNominatedPods``) until its attempt when the victims' grace ends
        holds.unhold(pod)  # a nomination the data gave it: this one replaces it
        holds.hold(pod, node, ending.nominated[pod])
        nominee_of[pod] = node
        # the pods of lower priority nominated there lose their nomination (``prepareCandidate``):
        # tried again, they may preempt again
        for other in holds.displaced(priorities[pod], node):
            nominee_of.pop(other, None)
            ending.nominated[other] = now
            dropped.append(other)
        return True

    def terminate(now: int, changed: list[int]) -> list[int]:
        """Victims whose termination ends now leave their node; those whose replacement is not in
        the data queue again as it (arriving now). Returns them."""
        back = []
        for victim in ending.due(now):
            deleted = ending.deleted.pop(victim)
            changed.append(unbind(victim, now))
            if replaced is not None and replaced[victim]:
                if pre is not None:
                    pre.gone[victim] = True
                continue  # its controller's new pod is in the data
            if departure[victim] <= now:
                continue  # it has ended anyway
            fresh = len(seq) + next(renewed)  # after every pod of the data, unique
            seq[victim] = (
                priority_rank(priorities[victim], deleted, fresh)
                if ordered
                else queue_rank(priorities[victim], fresh, ordered)
            )
            back.append(victim)
        return back

    def node_states(now: int, changed: list[int]) -> None:
        """Apply the node-state changes and NoExecute evictions due at ``now``."""
        nonlocal evicted
        assert timeline is not None
        nodes, opened = timeline.apply(state, now)
        changed.extend(opened)
        if nodes:
            nodes_moved()
            if cache is not None:
                cache.node_state_changed(nodes)
            if counter is not None:
                counter.static_changed()
            if scaler is not None:  # which nodes take pods (cordons, taints) changed
                scaler.reads_changed()
        going: list[int] = list(timeline.due(now))
        for node in nodes:
            for pod in sorted(on_node[node], key=lambda p: seq[p]):
                if pinned[pod] or pod in ending.until:
                    continue
                tolerations = demands[pod].constraints.tolerations
                if timeline.schedule(pod, state.node_taints[node], tolerations, now):
                    going.append(pod)
        for pod in sorted(set(going), key=lambda p: seq[p]):
            if bound[pod] < 0 or pinned[pod] or cache is None:
                continue
            changed.append(unbind(pod, now))
            evicted += 1
            timeline.evicted += 1
            enqueue(pod, now, TAINT_EVICTED)

    def readmit(requeue: Requeue, order: PassOrder[bytes], mark: list[int]) -> None:
        """A bind may let waiting groups in through the topology plugins: they join the pass
        at their rank (kube-scheduler's hint moves them to the active queue); ``mark``: the
        record's clock read so far in this pass."""
        if queue and requeue.last > mark[0]:
            found = requeue.admitted(
                order.idle(), demands.__getitem__, queue.group_of, after=mark[0]
            )
            mark[0] = requeue.clock
            order.add(queue.group_of(p) for p in found)

    def admit_freed(order: PassOrder[bytes]) -> None:
        """Holds ended during the pass (a preemptor bound, on its node or another, or failing
        at its nomination's end; a nomination taken over): the waiting groups that may fit in
        that room join the pass at their rank, as they would at its start (``may_fit``)."""
        if queue and cache is not None:
            idle = order.idle()
            if idle:
                found = cache.may_fit(idle, demands, freed, holds, priorities)
                order.add(queue.group_of(p) for p in found)
        freed.clear()

    def step(now: int, changed: list[int], everything: bool, arriving: list[int]) -> None:
        """One pass over this instant's arrivals and the pending pods that may fit now, merged in
        queue order (``analyzer.scheduling.queue_order``); a pending pod's failure ends its
        group's turn, arrivals are always tried; pods that fail wait."""
        freed.clear()  # (holds ended before the pass: their nodes are in ``changed``)
        moved = requeue is not None and requeue.pending
        retry = bool((changed or everything or moved) and queue and cache is not None)
        if requeue is not None and not queue:
            requeue.forget()
        if not retry and not arriving:
            return  # nothing to try (e.g. an instant of the autoscaler's own)
        order = PassOrder(queue.members(), seq.__getitem__)
        if retry and cache is not None:
            heads = queue.representatives()
            if everything:
                hopeful = heads
            else:
                hopeful = (
                    cache.may_fit(heads, demands, changed, holds, priorities) if changed else []
                )
                if changed and pre is not None:  # room to preempt in: a retry, as upstream
                    hit = set(hopeful)
                    others = [p for p in heads if p not in hit and not pinned[p]]
                    hopeful += pre.may_preempt(others, changed, holds)
            order.add(queue.group_of(p) for p in hopeful)
            if requeue is not None:  # the topology plugins' hints (the record read either way)
                found = requeue.admitted(order.idle(), demands.__getitem__, queue.group_of)
                order.add(queue.group_of(p) for p in found)

        mark = [requeue.clock if requeue is not None else 0]  # the record read so far
        placed: list[int] = []
        waiting: list[tuple[int, Refusal]] = []
        due = observed_nominations(now)
        if held_pods and noms is not None:
            ripe = [(seq[p], p, -1, 0, 0) for p, (_, until) in holds.held.items()
                    if until <= now and p not in queue]  # fmt: skip
            if ripe:  # the data's nominations that ended, their preemptor not waiting here:
                # released at its turn in the pass, as its own try would (``try_place``)
                due = sorted(due + ripe)
        for pod in [*arriving, None]:
            while True:
                if freed:  # holds ended in the pass: who may fit there joins it at its rank
                    admit_freed(order)
                head = order.peek()
                if head is None or (pod is not None and seq[head] >= seq[pod]):
                    break
                order.pop()
                if due:
                    nominate(due, seq[head], now)
                # the holds of nominated pods of lower priority do not count for it
                with holds.aside(priorities[head]) if held_pods else NO_HOLDS:
                    if try_place(head, now):
                        placed.append(head)
                        why.ended(head)
                        order.advance()
                        if requeue is not None:
                            readmit(requeue, order, mark)
                        continue
                    refused(head, now)
                    if requeue is not None:
                        requeue.tried(queue.group_of(head))
                    nominated = preempt(head, now)
                if nominated:  # nominated: the rest of its group still try
                    order.advance()
                else:  # capacity only shrank: the rest fail too (unless a bind lets it in)
                    order.stop()
                if dropped:  # nominations it took over: those pods try again
                    order.add(queue.group_of(p) for p in dropped if p in queue)
                    dropped.clear()
            if due:
                nominate(due, None if pod is None else seq[pod], now)
            if pod is None:
                break
            with holds.aside(priorities[pod]) if held_pods else NO_HOLDS:
                if departure[pod] <= now:  # gone the instant it came
                    if try_place(pod, now):
                        unbind(pod, now)
                    else:
                        rec.abandoned[pod] = True
                    continue
                if try_place(pod, now):
                    if requeue is not None:
                        readmit(requeue, order, mark)
                    continue
                waiting.append((pod, refused(pod, now)))
                if requeue is not None:
                    requeue.tried(queue.group_of(pod))
                preempt(pod, now)
            if dropped:
                order.add(queue.group_of(p) for p in dropped if p in queue)
                dropped.clear()
        for pod in placed:
            queue.remove(pod)
        for pod, reason in waiting:  # queued after the pass (the pass reads the queue)
            enqueue(pod, now, reason)

    def autoscale(now: int, changed: list[int]) -> list[int]:
        """The autoscaler's nodes joining now and its run of the loop; the pods it evicted (they
        arrive again now)."""
        assert scaler is not None and cache is not None
        for slot in scaler.ready(now):
            active[slot] = True
            nodes_moved()
            changed.append(slot)
            cache.touch(slot)
        drained: list[int] = []
        waiting = queue.pods()
        if held_pods:  # a pod waiting for its victims to go asks no new node (upstream's CA
            # ``FilterOutExpendableAndSplit``, Karpenter's ``IsProvisionable``): its node holds it
            waiting = [p for p in waiting if p not in holds]
        removing = scaler.tick(now, waiting)
        tainted = scaler.node_changes()
        if tainted:  # the autoscaler tainted nodes (Karpenter's candidates being replaced)
            cache.node_state_changed(tainted)
            nodes_moved()
            if counter is not None:
                counter.static_changed()
            scaler.reads_changed()
        for slot in removing:
            active[slot] = False
            nodes_moved()
            cache.touch(slot)
            gone = []
            for pod in sorted(on_node[slot], key=lambda p: seq[p]):
                unbind(pod, now)
                if not pinned[pod]:  # DaemonSet and static pods end with their node
                    gone.append(pod)
            scaler.removed(slot, now, gone)
            # an evicted pod comes back (its controller's new pod) unless the data ends it
            # within its termination grace: its replacement, if any, is a pod of the data (the
            # data's own autoscaler evicted it at this instant), else it would end about as
            # soon as it could be placed again
            until = now + scaler.eviction_grace
            drained.extend(pod for pod in gone if departure[pod] > until)
        return drained

    bounds = np.flatnonzero(np.diff(times)) + 1
    starts = np.concatenate([[0], bounds]).astype(np.int64).tolist() if len(times) else []
    stops = [*bounds.tolist(), len(times)] if len(times) else []
    kinds_list, index_list = kinds.tolist(), index.tolist()
    first_times = times[starts].tolist() if len(times) else []  # each instant's time, as ints
    instants = len(starts)
    at = 0  # the next instant of the event list

    # what may come between the event list's instants: a termination's end, the autoscaler's
    # own instant, a node's state change (each ``next_time``, NEVER: none)
    ending_next = ending.next_time
    scaler_next = None if scaler is None else scaler.next_time
    timeline_next = None if timeline is None else timeline.next_time

    while True:
        # the next instant: of the event list, or one of those in between (read once per
        # instant: nothing changes between the reads here)
        later = ending_next()
        if scaler_next is not None:
            after = scaler_next()
            if after < later:
                later = after
        if timeline_next is not None:
            after = timeline_next()
            if after < later:
                later = after
        if at >= instants and later > inp.end:
            break
        lo = starts[at] if at < instants else len(times)
        if stop_after is not None and lo >= stop_after:
            rec.notes.append(f"stopped after {lo} of {len(times)} events (partial replay)")
            break
        now = first_times[at] if at < instants else NEVER
        hi = lo
        if later < now:
            now = later
        else:
            hi = stops[at]
            at += 1
        refreshed = False
        if feed is not None:
            if cache is not None and feed.due(now):
                cache.before_reload()
            refreshed = feed.advance(now)
            if refreshed and cache is not None:
                cache.reloaded(now / 1e9)
        changed: list[int] = []
        # ``later`` <= every termination's end: none ends at an instant before it
        back = terminate(now, changed) if later <= now else []
        k = lo
        while k < hi and kinds_list[k] != ARRIVE:
            kind, item = kinds_list[k], index_list[k]
            if kind == DEPART:
                if bound[item] >= 0:
                    changed.append(unbind(item, now))
                elif item in rec.wait_since:
                    held = holds.unhold(item) if held_pods else None
                    if held is not None:  # a nominated pod deleted: its hold goes
                        changed.append(held[0])
                    nominee_of.pop(item, None)
                    queue.remove(item)
                    rec.end_wait(item, now)
                    rec.abandoned[item] = True
                    why.ended(item)
            elif kind == NODE_LEAVE:
                active[item] = False
                nodes_moved()
                if cache is not None:
                    cache.touch(item)
                    for pod in sorted(on_node[item], key=lambda p: seq[p]):
                        # a victim terminating there, its replacement a pod of the data: gone
                        gone = pod in ending.until and replaced is not None and replaced[pod]
                        unbind(pod, now)
                        if gone and pre is not None:
                            pre.gone[pod] = True
                        if not pinned[pod] and not gone:
                            evicted += 1
                            back.append(pod)  # tried at once with the arrivals
            else:  # NODE_JOIN
                active[item] = True
                nodes_moved()
                changed.append(item)
                if cache is not None:
                    cache.touch(item)
            k += 1
        if timeline is not None and timeline.next_time() <= now:  # most instants: nothing due
            node_states(now, changed)
        if scaler is not None:
            if ca is not None and now < ca.next_tick and now < ca.ready_at:
                # a third of the instants: no node becomes Ready (``ready`` only moves the
                # clock on) and ``tick`` would do nothing (no run due before ``next_tick``)
                ca.ready(now)
            else:
                back.extend(autoscale(now, changed))
        arriving = [*index_list[k:hi], *back]
        if (ordered or back) and len(arriving) > 1:  # PrioritySort: higher priority first
            arriving.sort(key=seq.__getitem__)
        step(now, changed, refreshed, arriving)
        while requeue is not None and requeue.pending and queue:
            # pods bound in the pass that may open a node to a waiting pod the topology plugins
            # refused before them (kube-scheduler requeues it at the bind): one more pass
            step(now, [], False, [])
        if held_pods:  # nominations whose victims are gone and whose preemptor was not tried in
            # the pass (it fits nowhere that changed): released, their room retried at once
            ended = [node for _, node in holds.ending(now)]
            if ended:
                step(now, ended, False, [])
        if scaler is not None:  # pods left waiting: the autoscaler's next run looks at them
            scaler.waiting = bool(queue)
            if fresh:  # one still waiting became unschedulable now (not placed since)
                since = rec.wait_since
                if any(since.get(pod) == now for pod in fresh):
                    scaler.unschedulable = True  # type: ignore[union-attr]
                fresh.clear()
            if watcher is not None and (pending := queue.pods()) is not listed:
                listed = pending  # a new list: the queue changed
                watcher.reads_changed()
            scaler.settle()
    for pod in queue.pods():
        why.ended(pod)
    result = rec.result(strategy.name, seed, queue.pods())
    result.refusals = {pod: why.last[pod] for pod in np.flatnonzero(result.waited).tolist()}
    result.evicted = evicted
    if scaler is not None:
        scaler.finish(inp.end)
        result.autoscaler = scaler.record
    result.preemptions = {
        name: np.array(column, dtype=np.int64)
        for name, column in zip(("victim", "preemptor", "node", "time"), victim_rows, strict=True)
    }
    result.notes.extend(rec.notes)
    if timeline is not None and timeline.evicted:
        result.notes.append(f"{timeline.evicted} pod(s) evicted by NoExecute taints")
    if cache is not None:
        result.notes.extend(cache.notes)
    if devices is not None and devices.unfitted:
        result.notes.append(
            f"{devices.unfitted} placement(s) of DaemonSet/static pods did not fit their "
            "node's free GPUs; they kept their node without taking GPUs"
        )
    return result

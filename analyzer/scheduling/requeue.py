"""Which waiting pods a bind or an unbind may let in through PodTopologySpread or InterPodAffinity.

kube-scheduler keeps a pod that fitted nowhere aside until a cluster event may make it
schedulable: each plugin that refused it answers a *queueing hint* for the event
(``EventsToRegister``). The replay and the generator retry a waiting pod at the instant such an
event happens (``queue_order``: no backoff). For resources that instant is when room grew on a node
the pod may fit (``queue_order.may_fit``). The two topology plugins refuse nodes for reasons that
other nodes' pods decide, so room is not enough:

- **PodTopologySpread** (``isSchedulableAfterPodChange``): an assigned pod of the waiting pod's
  namespace was added or deleted and one of its ``DoNotSchedule`` constraints selects it (the
  counts of that constraint moved). ``ScheduleAnyway`` constraints never refuse a node, so they
  never keep a pod waiting. ``matchLabelKeys`` only narrows the selector; it is left out here,
  which can only ask for more retries, never fewer;
- **InterPodAffinity** (``isSchedulableAfterPodChange``): an added pod matches the waiting pod's
  required affinity terms, or a deleted pod matches its required anti-affinity terms. Upstream
  asks the pod to match *all* the terms of a kind; any one is asked here (more retries, never
  fewer), and both kinds for both events: a deletion can also open a required affinity (the last
  matching pod gone, a pod matching its own terms then goes anywhere: "first of its group");
- a placed pod whose **required anti-affinity** terms match the waiting pod was added or deleted
  (its deletion lifts that pod's refusal). Upstream's hint does not ask this; there the pod waits
  for the 5-minute flush of the unschedulable pods (``podMaxInUnschedulablePodsDuration``), which
  the replay does not model, so the replay retries it at the deletion.

A retry that fails changes nothing but the wait's reasons and one more preemption attempt
(``replay.preemption``), so asking for a superset of upstream's retries keeps every placement
upstream would make at the event, and moves none earlier than a possible one.

Nodes that join, leave or change their taints can change a spread constraint's domains (and
``minDomains``): pods with ``DoNotSchedule`` constraints are retried then too
(``PodTopologySpread``'s node hints).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

from analyzer.scheduling.kube_objects import Namespace
from analyzer.scheduling.spread_types import DO_NOT_SCHEDULE
from analyzer.scheduling.state import PodDemand


def refusing_spread(pod: PodDemand) -> bool:
    """True when one of ``pod``'s own spread constraints can refuse a node (DoNotSchedule)."""
    return any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in pod.spread)


def refusing_own(pod: PodDemand) -> bool:
    """True when ``pod``'s own constraints or terms can have a topology plugin refuse a node;
    otherwise only a placed pod's required anti-affinity can."""
    terms = pod.affinity
    return refusing_spread(pod) or (
        terms is not None and bool(terms.required or terms.required_anti)
    )


def _anti(pod: PodDemand) -> bool:
    return pod.affinity is not None and bool(pod.affinity.required_anti)


def may_admit(waiting: PodDemand, moved: PodDemand, namespaces: Mapping[str, Namespace]) -> bool:
    """True when binding or unbinding ``moved`` may change a topology plugin's refusal of
    ``waiting`` on some node (the module's rules); ``namespaces``: the cluster's, whose labels
    the terms' namespace selectors read."""

    def ns_labels(name: str) -> Mapping[str, str] | None:
        found = namespaces.get(name)
        return None if found is None else found.labels

    if moved.namespace == waiting.namespace:
        for constraint in waiting.spread:
            if constraint.when_unsatisfiable == DO_NOT_SCHEDULE and constraint.selector.matches(
                moved.labels
            ):
                return True
    own = waiting.affinity
    if own is not None and (own.required or own.required_anti):
        labels = ns_labels(moved.namespace)
        for term in (*own.required, *own.required_anti):
            if term.matches(moved.namespace, moved.labels, labels):
                return True
    theirs = moved.affinity
    if theirs is not None and theirs.required_anti:
        labels = ns_labels(waiting.namespace)
        for term in theirs.required_anti:
            if term.matches(waiting.namespace, waiting.labels, labels):
                return True
    return False


def _identity(pod: PodDemand) -> tuple[object, ...]:
    # a replay's (and the generator's mirror's) demands share their parsed labels, spread
    # constraints and terms by object: the ids name what ``may_admit`` reads; the objects
    # live as long as the demands that hold them, which outlive the ``Requeue``
    return (pod.namespace, id(pod.labels), id(pod.spread), id(pod.affinity))


class Requeue:
    """The pods bound and unbound since each waiting group last tried, and the groups they may
    admit.

    ``note`` every bind and unbind, ``nodes_changed`` on joins, leaves and taint changes, and
    ``tried`` each group whose pod failed; ``admitted`` answers for the waiting groups and starts
    a new record. A move counts for a group only when it came after the group's last try (a pod
    that failed after a bind already saw it). ``may_admit``'s answers are kept per (waiting,
    moved) identity: a workload's pods share one.
    """

    def __init__(self, namespaces: Mapping[str, Namespace]) -> None:
        self.namespaces = namespaces
        self.clock = 0  # moves and tries so far
        self.last = 0  # the clock at the latest move or node change
        self.moved: dict[tuple[object, ...], tuple[int, PodDemand]] = {}  # the latest move
        self.nodes = -1  # the clock at the last node change (-1: none since the last answer)
        self._tried: dict[Hashable, int] = {}
        self._answers: dict[tuple[tuple[object, ...], tuple[object, ...]], bool] = {}
        # per waiting identity: (its own constraints or terms may refuse, its spread may)
        self._kinds: dict[tuple[object, ...], tuple[bool, bool]] = {}
        # one demand per identity seen, held so that no id in the keys is ever reused
        self._held: dict[tuple[object, ...], PodDemand] = {}

    def note(self, pod: PodDemand) -> None:
        """``pod`` was bound or unbound."""
        self.clock += 1
        self.last = self.clock
        key = _identity(pod)
        self.moved[key] = (self.clock, self._held.setdefault(key, pod))

    def nodes_changed(self) -> None:
        """A node joined, left, or its taints or cordon changed."""
        self.clock += 1
        self.last = self.nodes = self.clock

    def tried(self, group: Hashable) -> None:
        """A pod of ``group`` was tried and failed now."""
        self.clock += 1
        self._tried[group] = self.clock

    def forget(self) -> None:
        """Nothing waits: the record starts again."""
        self.moved.clear()
        self.nodes = -1
        self._tried.clear()

    @property
    def pending(self) -> bool:
        """True when something was recorded since the last ``admitted``."""
        return bool(self.moved) or self.nodes >= 0

    def admitted(
        self,
        waiting: Sequence[int],
        demand_of: Callable[[int], PodDemand],
        group_of: Callable[[int], Hashable],
        *,
        after: int | None = None,
    ) -> list[int]:
        """The pods of ``waiting`` (one per group) that a move or a node change since their
        group's last try may admit. Without ``after``, ``waiting`` holds every waiting group and
        the record starts again; with it, only what came after the clock ``after`` is read and
        the record is kept (a bind in a pass: the pods that fail in it wait only after it, and
        the next pass reads the record for them)."""
        moved, nodes = list(self.moved.items()), self.nodes
        if after is None:
            self.moved, self.nodes = {}, -1
            after = 0
        else:
            moved = [entry for entry in moved if entry[1][0] > after]
            nodes = nodes if nodes > after else -1
        if not waiting or not (moved or nodes >= 0):
            return []
        # a pod without own refusing constraints or terms reads only placed pods' required
        # anti-affinity: the other moves cannot admit it
        anti = [entry for entry in moved if _anti(entry[1][1])]
        answers, kinds, tried, found = self._answers, self._kinds, self._tried, []
        for pod in waiting:
            demand = demand_of(pod)
            key = _identity(demand)
            kind = kinds.get(key)
            if kind is None:
                kind = kinds[key] = (refusing_own(demand), refusing_spread(demand))
                self._held.setdefault(key, demand)
            own, spread = kind
            candidates = moved if own else anti
            if not candidates and nodes < 0:
                continue
            since = max(tried.get(group_of(pod), 0), after)
            if nodes > since and spread:
                found.append(pod)
                continue
            for other, (at, theirs) in candidates:
                if at <= since:
                    continue
                pair = (key, other)
                hit = answers.get(pair)
                if hit is None:
                    hit = answers[pair] = may_admit(demand, theirs, self.namespaces)
                if hit:
                    found.append(pod)
                    break
        return found

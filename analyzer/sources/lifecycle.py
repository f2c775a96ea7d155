"""Pod lifecycles of the synthetic cluster: who is created when, where it runs, when it ends.

An event loop in time order (departures before arrivals at the same instant, like the replay
engine) binds arriving pods with the ``Placer``, keeps pods that fit nowhere in a pending queue
(highest priority first) and retries them whenever a pod leaves. Workload behaviour:

- DaemonSet pods exist on their nodes from before the range; the rest of the long-running pods
  were created before the range at random times;
- Deployments roll (new ReplicaSet hash, one replica every 30 s; the old pod is deleted 10 s
  after its replacement started); StatefulSets restart pod by pod, reusing names with new uids;
- a CronJob runs every hour, Jobs arrive at a rate scaled by ``churn``; Job pods end Succeeded
  (about one in ten Failed, then retried by a new pod) and their objects stay 1 h after finishing;
- with growth (``SyntheticSpec.growth``), a Deployment or StatefulSet has the replicas its growth
  curve gives at the range start, and each replica it gains inside the range is a new pod created
  when the curve reaches it (a scale-up; later rollouts replace it like the others).
"""

from __future__ import annotations

import heapq
import math
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from analyzer.core.resources import PodSpecResources, pod_limits, pod_requests
from analyzer.sources.catalog import (
    APPS,
    DAEMONSETS,
    ETL,
    KSM_TEMPLATE,
    PRIORITY_CLASSES,
    REPORTS,
    TRAIN,
    Template,
)
from analyzer.sources.placement import ClusterState, PlacementRequest, Placer
from analyzer.sources.spec import MONTH_SECONDS, SyntheticSpec

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery rand.String alphabet
JOB_TTL = 3600  # ttlSecondsAfterFinished of Job objects


@dataclass
class Pod:
    """One pod object through its life (times in unix seconds; ``None`` = not (yet) happened)."""

    uid: str
    name: str
    template: Template
    owner_kind: str
    owner_name: str
    workload_kind: str
    workload_name: str
    created: int
    arrive: int  # when it is first offered to the scheduler
    spec: PodSpecResources
    node: int = -1
    scheduled: int | None = None
    started: int | None = None
    finished: int | None = None  # containers ended (completion, or deletion of a running pod)
    deleted: int | None = None  # the object is gone (KSM series end)
    phase: str = "Pending"  # last phase
    fails: bool = False
    replaces: int | None = None  # index of the pod this one replaces (deleted once it started)
    pin: int = -1  # DaemonSet pods: their node
    pod_ip: str = ""
    request: PlacementRequest | None = field(default=None, repr=False)


Describe = Callable[[Pod], Mapping[str, str]]  # a pod's snapshot cells (PlacementRequest.cells)


class _Names:
    """Seeded uids and Kubernetes-style random name suffixes."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def uid(self) -> str:
        return str(uuid.UUID(bytes=self.rng.bytes(16), version=4))

    def suffix(self, length: int) -> str:
        idx = self.rng.integers(0, len(_ALPHABET), size=length)
        return "".join(_ALPHABET[i] for i in idx)


@dataclass
class Lifecycles:
    """The outcome: every pod, in creation order of the generator."""

    pods: list[Pod]


class _Builder:
    """Creates the pod objects of every workload (before placement)."""

    def __init__(
        self,
        spec: SyntheticSpec,
        pools: tuple[str, ...],
        rng: np.random.Generator,
        structure: np.random.Generator | None = None,
    ):
        self.spec = spec
        self.pools = pools
        self.rng = rng
        self.structure = rng if structure is None else structure  # workload sizes
        self.names = _Names(rng)
        self.pods: list[Pod] = []
        self.t0 = spec.start_s
        self.t1 = spec.end_s

    def pod(
        self, template: Template, name: str, owner: tuple[str, str, str, str], created: int
    ) -> int:
        """Append one pod; returns its index."""
        delay = 0
        if created >= self.t0 and self.rng.random() < self.spec.pending_fraction:
            delay = int(self.rng.integers(120, 1200))  # held back: e.g. a volume not yet bound
        spec = PodSpecResources(
            containers=template.containers,
            init_containers=template.init_containers,
            overhead=dict(template.overhead),
        )
        owner_kind, owner_name, workload_kind, workload_name = owner
        self.pods.append(
            Pod(
                uid=self.names.uid(),
                name=name,
                template=template,
                owner_kind=owner_kind,
                owner_name=owner_name,
                workload_kind=workload_kind,
                workload_name=workload_name,
                created=created,
                arrive=created + 1 + delay,
                spec=spec,
            )
        )
        return len(self.pods) - 1

    def past(self) -> int:
        """A creation time before the range (pods already running when it starts)."""
        return self.t0 - int(self.rng.integers(3600, 20 * 86400))

    def daemonsets(self) -> None:
        for template in DAEMONSETS:
            for node, pool in enumerate(self.pools):
                if template.pool is not None and template.pool != pool:
                    continue
                name = f"{template.name}-{self.names.suffix(5)}"
                owner = ("DaemonSet", template.name, "DaemonSet", template.name)
                index = self.pod(template, name, owner, self.t0 - 30 * 86400 + node)
                self.pods[index].pin = node

    def deployment(self, template: Template, name: str, replicas: int) -> None:
        """A Deployment (or StatefulSet) of ``replicas`` at the growth anchor, with its rollouts
        and (with growth) its scale-ups over the range."""
        rate = self.spec.growth_rate(template.name, template.pool) if self.spec.grows else 0.0
        ups: list[int] = []
        if rate > 0 and template.name != KSM_TEMPLATE.name:
            offset = rounding_offset(name)
            ups = scale_ups(replicas, rate, self.spec.anchor_s, self.t0, self.t1, offset)
            months = (self.t0 - self.spec.anchor_s) / MONTH_SECONDS
            replicas = replicas_at(replicas, rate, months, offset)
        hash_ = self.names.suffix(10)
        if template.kind == "StatefulSet":
            owner = ("StatefulSet", name, "StatefulSet", name)
            current = [
                self.pod(template, f"{name}-{i}", owner, self.past()) for i in range(replicas)
            ]
        else:
            owner = ("ReplicaSet", f"{name}-{hash_}", "Deployment", name)
            current = [
                self.pod(template, f"{name}-{hash_}-{self.names.suffix(5)}", owner, self.past())
                for _ in range(replicas)
            ]
        rollouts: list[int] = []
        if template.name != KSM_TEMPLATE.name and self.spec.churn > 0:
            span = self.t1 - self.t0
            count = self.rng.poisson(self.spec.churn * span / 86400)
            rollouts = [int(at) for at in np.sort(self.rng.integers(self.t0, self.t1, size=count))]
        # (time, 0 = scale-up | 1 = rollout): a scale-up at the instant of a rollout comes first
        for at, kind in sorted([(t, 0) for t in ups] + [(t, 1) for t in rollouts]):
            if kind == 0:
                if template.kind == "StatefulSet":
                    current.append(self.pod(template, f"{name}-{len(current)}", owner, at))
                else:
                    pod_name = f"{name}-{hash_}-{self.names.suffix(5)}"
                    current.append(self.pod(template, pod_name, owner, at))
                continue
            hash_ = self.names.suffix(10)
            for i in range(len(current)):
                if template.kind == "StatefulSet":
                    # delete ordinal i, then the controller recreates the same name (new uid)
                    gone = at + 60 * i
                    new = self.pod(template, f"{name}-{i}", owner, gone + 2)
                    self.pods[current[i]].deleted = gone
                else:
                    owner = ("ReplicaSet", f"{name}-{hash_}", "Deployment", name)
                    pod_name = f"{name}-{hash_}-{self.names.suffix(5)}"
                    new = self.pod(template, pod_name, owner, at + 30 * i)
                    self.pods[new].replaces = current[i]
                current[i] = new

    def splits(self, total: int) -> Iterator[int]:
        """Replica counts of a template's Deployments (1–12 each) until ``total`` is reached,
        drawn one at a time (the draws interleave with the Deployments' own)."""
        while total > 0:
            replicas = min(total, int(self.structure.integers(1, 13)))
            yield replicas
            total -= replicas

    def apps(self, n_nodes: dict[str, int]) -> None:
        """Long-running workloads sized to ``pods_per_node``."""
        self.deployment(KSM_TEMPLATE, KSM_TEMPLATE.name, 1)
        target = self.spec.pods_per_node * sum(n_nodes.values())
        usable = [t for t in APPS if t.pool is None or n_nodes.get(t.pool, 0) > 0]
        weights = np.array([t.weight for t in usable])
        for template, weight in zip(usable, weights, strict=True):
            total = max(1, round(target * weight / weights.sum()))
            if template.pool == "gpu":
                total = max(1, min(total, n_nodes["gpu"] * 2))
            if template.pool == "memory":
                total = max(1, min(total, n_nodes["memory"] * 3))
            for k, replicas in enumerate(self.splits(total)):
                name = template.name if k == 0 else f"{template.name}-{k + 1}"
                self.deployment(template, name, replicas)

    def job(
        self, template: Template, job_name: str, owner: tuple[str, str, str, str], at: int
    ) -> None:
        """One Job pod (and its retry if it fails)."""
        index = self.pod(template, f"{job_name}-{self.names.suffix(5)}", owner, at)
        if self.rng.random() < 0.1:
            self.pods[index].fails = True

    def batch(self, n_nodes: dict[str, int]) -> None:
        """The hourly CronJob and Jobs arriving over the range."""
        crons = max(1, sum(n_nodes.values()) // 40)
        span = self.t1 - self.t0
        for c in range(crons):
            cron = REPORTS.name if c == 0 else f"{REPORTS.name}-{c + 1}"
            minute = int(self.rng.integers(0, 60))
            first = (self.t0 // 3600) * 3600 + 60 * minute
            for at in range(first, self.t1, 3600):
                if at < self.t0:
                    continue
                job_name = f"{cron}-{at // 60}"  # CronJob names Jobs by scheduled minute
                self.job(REPORTS, job_name, ("Job", job_name, "CronJob", cron), at)
        rates = [(ETL, 0.3 * sum(n_nodes.values())), (TRAIN, 1.0 * n_nodes.get("gpu", 0))]
        for template, per_day in rates:
            count = self.rng.poisson(self.spec.churn * per_day * span / 86400)
            for at in np.sort(self.rng.integers(self.t0 - 3 * 3600, self.t1, size=count)):
                job_name = f"{template.name}-{self.names.suffix(5)}"
                owner = ("Job", job_name, "Job", job_name)
                self.job(template, job_name, owner, int(at))


def rounding_offset(name: str) -> float:
    """A fixed offset in (0, 1) per workload name: where its replica count rounds up, so that
    workloads of one size do not all gain a replica at the same instant (and on average the count
    follows the curve)."""
    return (zlib.crc32(name.encode()) % 997 + 0.5) / 997


def replicas_at(replicas: int, rate: float, months: float, offset: float = 0.5) -> int:
    """Replicas of a workload that had ``replicas`` at the anchor, ``months`` (30 days) later at a
    growth of ``rate`` per month: ``max(1, ⌊replicas·(1 + rate)^months + offset⌋)``."""
    grown: float = replicas * (1.0 + rate) ** months
    return max(1, math.floor(grown + offset))


def scale_ups(
    replicas: int, rate: float, anchor: int, t0: int, t1: int, offset: float = 0.5
) -> list[int]:
    """Instants in ``[t0, t1]`` (unix seconds) where :func:`replicas_at` gains one replica."""
    months = (t0 - anchor) / MONTH_SECONDS, (t1 - anchor) / MONTH_SECONDS
    first, last = (replicas_at(replicas, rate, m, offset) for m in months)
    times = []
    for k in range(first + 1, last + 1):
        # replicas·(1 + rate)^m + offset ≥ k  ⇔  m ≥ ln((k − offset) / replicas) / ln(1 + rate)
        month = math.log((k - offset) / replicas) / math.log1p(rate)
        times.append(min(t1, max(t0, anchor + math.ceil(month * MONTH_SECONDS))))
    return times


def build_pods(
    spec: SyntheticSpec,
    pools: tuple[str, ...],
    rng: np.random.Generator,
    structure: np.random.Generator | None = None,
) -> list[Pod]:
    """All pod objects of the cluster, not yet placed; ``structure`` (default ``rng``) draws the
    sizes of the workloads, ``rng`` everything else."""
    n_nodes = {pool: pools.count(pool) for pool in set(pools)}
    builder = _Builder(spec, pools, rng, structure)
    builder.daemonsets()
    builder.apps(n_nodes)
    builder.batch(n_nodes)
    return builder.pods


class SpecResources:
    """Effective requests, non-zero requests and limits of pod specs, computed once per distinct
    spec (every pod of a template shares its containers, so a run has a handful of specs)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[object, ...], tuple[PodSpecResources, dict[str, int]]] = {}

    def _get(self, spec: PodSpecResources, kind: str) -> dict[str, int]:
        key = (kind, id(spec.containers), id(spec.init_containers), *sorted(spec.overhead.items()))
        hit = self._seen.get(key)
        if hit is None:
            if kind == "limits":
                value = pod_limits(spec)
            else:
                value = pod_requests(spec, non_zero=kind == "non_zero")
            hit = (spec, value)  # the spec is kept so that its containers' ids stay unique
            self._seen[key] = hit
        return hit[1]

    def requests(self, spec: PodSpecResources) -> dict[str, int]:
        """``pod_requests(spec)`` (shared: do not modify)."""
        return self._get(spec, "requests")

    def non_zero(self, spec: PodSpecResources) -> dict[str, int]:
        """``pod_requests(spec, non_zero=True)`` (shared: do not modify)."""
        return self._get(spec, "non_zero")

    def limits(self, spec: PodSpecResources) -> dict[str, int]:
        """``pod_limits(spec)`` (shared: do not modify)."""
        return self._get(spec, "limits")


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
        priority=PRIORITY_CLASSES[pod.template.priority_class],
        daemonset=pod.pin >= 0,
        time=pod.arrive,
        namespace=pod.template.namespace,
        owner=(pod.owner_kind, pod.owner_name),
        cells=describe(pod) if describe is not None else {},
    )


_DEPART, _ARRIVE = 0, 1


def priority(pod: Pod) -> int:
    """The pod's priority value (from its PriorityClass)."""
    return PRIORITY_CLASSES[pod.template.priority_class]


def run_lifecycles(
    pods: list[Pod],
    state: ClusterState,
    place: Placer,
    rng: np.random.Generator,
    window: tuple[int, int],
    *,
    closed: tuple[str, ...] = ("gpu",),
    describe: Describe | None = None,
) -> None:
    """Place and run every pod in time order, filling in node, times and phase in place.

    Pods whose object never exists inside ``window`` (unix seconds, inclusive) are dropped.
    ``closed`` pools are tainted: only the workloads bound to them are placed there.
    ``describe`` gives each placement request the pod's snapshot cells (``PlacementRequest.cells``).
    """
    begin, end = window
    pools_arr = np.array(state.pools)
    names = _Names(rng)
    events: list[tuple[int, int, int]] = []
    for i, pod in enumerate(pods):
        events.append((pod.arrive, _ARRIVE, i))
        if pod.deleted is not None:
            events.append((pod.deleted, _DEPART, i))
    heapq.heapify(events)
    pending: list[int] = []
    specs = SpecResources()
    masks: dict[str | None, np.ndarray] = {}

    def bind(i: int, now: int) -> bool:
        pod = pods[i]
        assert pod.request is not None
        node = place(pod.request, state)
        if node is None:
            return False
        if not 0 <= node < len(state.nodes):  # ``allowed`` is advice: a placer may ignore it
            raise ValueError(f"placer chose node {node} for pod {pod.uid}: no such node")
        state.bind(node, pod.request)
        pod.node = node
        pod.scheduled = now
        pod.started = now + int(rng.integers(2, 8)) + (30 if pod.spec.init_containers else 0)
        pod.phase = "Running"
        template = pod.template
        if template.duration > 0:
            run = int(template.duration * rng.lognormal(0.0, 0.3))
            if pod.fails:
                run = max(60, run // 3)
            heapq.heappush(events, (pod.started + run, _DEPART, i))
        if pod.replaces is not None:
            heapq.heappush(events, (pod.started + 10, _DEPART, pod.replaces))
        return True

    while events:
        now, kind, i = heapq.heappop(events)
        if now > end:
            break
        pod = pods[i]
        if kind == _ARRIVE:
            if pod.phase == "Deleted":  # replaced before it was even offered
                continue
            pod.request = _request(pod, pools_arr, closed, specs, masks, describe)
            if not bind(i, now):
                pending.append(i)
            continue
        if pod.finished is not None or pod.phase == "Deleted":
            continue
        if pod.node < 0:  # deleted while pending
            if i in pending:
                pending.remove(i)
            pod.deleted = now
            pod.phase = "Deleted"
            continue
        assert pod.request is not None
        freed = pod.node
        state.unbind(freed, pod.request)
        pod.finished = now
        if pod.template.duration > 0:
            pod.phase = "Failed" if pod.fails else "Succeeded"
            pod.deleted = now + JOB_TTL
            if pod.fails:  # the Job controller creates a replacement pod (new name, new uid)
                pods.append(_retry(pod, names, now + 10))
                heapq.heappush(events, (pods[-1].arrive, _ARRIVE, len(pods) - 1))
        else:
            pod.deleted = now
        if pending:
            # Only the freed node gained room, so only pods that fit there can now be placed.
            pending.sort(key=lambda j: (-priority(pods[j]), pods[j].arrive))
            pending = [j for j in pending if not (_fits_on(pods[j], state, freed) and bind(j, now))]
    for pod in pods:
        if pod.deleted is not None and pod.deleted > end:
            pod.deleted = None
        if pod.finished is not None and pod.finished > end:
            pod.finished = None
            pod.phase = "Running"
        if pod.phase == "Deleted":
            pod.phase = "Pending"
    pods[:] = [p for p in pods if p.created <= end and (p.deleted is None or p.deleted >= begin)]


def _fits_on(pod: Pod, state: ClusterState, node: int) -> bool:
    """Whether ``pod``'s requests fit into ``node`` right now (``allowed`` is not consulted:
    a custom placer may ignore it)."""
    request = pod.request
    assert request is not None
    need = state.vector(request.requests)
    room = (state.requested[node] + need <= state.allocatable[node]) | (need == 0)
    return bool(room.all())


def _retry(failed: Pod, names: _Names, at: int) -> Pod:
    """The Job controller's replacement for a failed pod."""
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
        arrive=at + 1,
        spec=failed.spec,
    )

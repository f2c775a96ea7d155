"""Pod lifecycles of the synthetic cluster: who is created when (the pod objects of every
workload, built here before placement); ``lifecycle_loop`` then places and runs them in time
order with the replay's queue semantics (waits, priorities, preemption). Workload behaviour:

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

import math
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
    REPORTS,
    TRAIN,
    Template,
)
from analyzer.sources.placement import PlacementRequest
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
    preempted: int | None = None  # when the scheduler deleted it to make room (a victim)
    nominated_until: int = 0  # a preemptor: its victims terminate until then
    # a preemptor's preemptions: (time, nominated node, victim uids, end of the nomination: its
    # victims' grace, or earlier when a preemption of a higher priority took the node over)
    preemptions: list[tuple[int, int, tuple[str, ...], int]] = field(
        default_factory=list, repr=False
    )


Describe = Callable[[Pod], Mapping[str, str]]  # a pod's snapshot cells (PlacementRequest.cells)


class _Names:
    """Seeded uids and Kubernetes-style random name suffixes."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def uid(self) -> str:
        # ``str(uuid.UUID(bytes=..., version=4))`` without the UUID object: the version and
        # variant bits set on the same 16 random bytes, the same text
        raw = bytearray(self.rng.bytes(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def suffix(self, length: int) -> str:
        idx = self.rng.integers(0, len(_ALPHABET), size=length)
        return "".join([_ALPHABET[i] for i in idx.tolist()])  # Python ints: no numpy scalars


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
        # (an autoscaled cluster holds none back: ``SyntheticSpec.autoscaled``; the draw is made
        # all the same)
        held = 0.0 if self.spec.autoscaled else self.spec.pending_fraction
        if created >= self.t0 and self.rng.random() < held:
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
        per_day = self.spec.churn if self.spec.rollouts is None else self.spec.rollouts
        if template.name != KSM_TEMPLATE.name and per_day > 0:
            span = self.t1 - self.t0
            count = self.rng.poisson(per_day * span / 86400)
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

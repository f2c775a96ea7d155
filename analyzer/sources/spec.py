"""The synthetic cluster's knobs (``SyntheticSpec``) and its time grid."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from analyzer.core.errors import InputError
from analyzer.sources.catalog import KUBELET_VERSION

DEFAULT_START = datetime(2026, 11, 1, tzinfo=UTC)
# Fields added after the first snapshots: left out of meta.json while they hold their default.
OPTIONAL_FIELDS = {
    "dedicated_pools": (),
    "usage_scale": 1.0,
    "hot_by_node": False,
    "growth": (),
    "fast_growth": (),
    "growth_anchor": None,
    "weekend_dip": 0.0,
    "day_noise": 0.0,
    "team_usage": (),
}
# Kubernetes-object knobs (sources/kube_objects.py), also left out of meta.json at their defaults.
OPTIONAL_FIELDS.update({"zones": 0, "pod_constraints": False})
OPTIONAL_FIELDS["kubelet_version"] = KUBELET_VERSION
OPTIONAL_FIELDS["node_events"] = False
OPTIONAL_FIELDS["autoscaled"] = False
OPTIONAL_FIELDS["rollouts"] = None
MONTH_SECONDS = 30 * 86400  # a growth rate is per 30 days
ANY_POOL = "*"  # ``growth`` key of the workloads free to run in any open pool


@dataclass(frozen=True)
class SyntheticSpec:
    """Everything that determines a synthetic cluster; the same spec gives identical output.

    - ``nodes``: node count, split over the pools of ``catalog.POOLS``;
    - ``days``/``step`` (seconds)/``start`` (UTC): the observed range and sample grid;
    - ``churn``: Deployment rollouts per Deployment per day, and the scale of Job arrivals;
    - ``rollouts``: Deployment rollouts per Deployment per day when not ``churn`` (None: ``churn``);
      Job arrivals keep ``churn`` (each rollout places every replica again: fewer rollouts make
      a long history cheaper to generate, docs/monthly.md "The demo");
    - ``pods_per_node``: mean long-running app pods per node (DaemonSet pods come on top);
    - ``hot_nodes``: fraction of non-GPU nodes whose CPU runs above 65 % of allocatable for hours
      every day (at least one when there are 4 or more nodes);
    - ``gpu_pool``: whether the ``nvidia.com/gpu`` pool exists;
    - ``pending_fraction``: share of new pods held pending for minutes before they are scheduled;
    - ``dedicated_pools``: pools whose nodes carry the taint ``dedicated=<pool>:NoSchedule``, which
      only the workloads bound to that pool tolerate (default none);
    - ``usage_scale``: multiplies every app pod's mean cpu usage (below 1: over-requested
      workloads, as most clusters run);
    - ``hot_by_node``: hot nodes burn in their own processes (kept by the node under any
      placement) instead of in their pods without a cpu limit;
    - ``zones``: label the nodes with ``topology.kubernetes.io/zone`` (round robin over this many
      zones per pool; 0: no zone labels);
    - ``pod_constraints``: give some workloads topologySpreadConstraints and pod (anti-)affinity
      (``sources/kube_objects.py``); the simple placers do not apply them, the exact one
      (``kube_placement``) and the demo's (``constrained_placement``) honour the required ones.

    Growth, seasonality and over-requesting teams (the monthly review's data; all off by default):

    - ``growth``: pool name → growth of the long-running app workloads bound to that pool, as a
      fraction per 30 days (0.04 = +4 %/month, compounded); the key ``"*"`` is the rate of the
      workloads free to run in any open pool. DaemonSets, kube-state-metrics and Jobs do not grow;
    - ``fast_growth``: workload template name (e.g. ``"search"``) → its own rate, overriding
      its pool's;
    - ``growth_anchor``: the instant at which every workload has its no-growth replica count
      (default ``start``); before it there were fewer replicas, after it more. A Deployment or
      StatefulSet of ``r`` replicas at the anchor has ``max(1, ⌊r·(1 + rate)^months + u⌋)``
      at any instant, ``u`` in (0, 1) fixed per workload name (so workloads of one size do not
      all scale at once, and on average the count follows the curve); each replica gained is a
      new pod created when the count rises;
    - ``weekend_dip``: the share of app pods' cpu usage that is gone on Saturdays and Sundays
      (UTC), the weekly cycle;
    - ``day_noise``: σ of a lognormal factor on app pods' cpu usage drawn once per UTC day from
      the seed and the day alone, so a day has the same factor whatever range it is generated in;
    - ``team_usage``: namespace → factor on the cpu and memory usage of its app pods (0.25: the
      team requests four times what it uses).

    ``kubelet_version`` is every node's kubelet (``kube_node_info{kubelet_version}`` and the
    nodes table): the Kubernetes version a replay of this cluster reads (docs/scheduling.md).
    ``node_events``: cordons, short autoscaler taints and a not-ready join
    (``analyzer.sources.node_events``; off by default).
    ``autoscaled``: one pool of general nodes (``nodes`` at the start, at least one, at most twice
    as many) whose nodes join and leave by cluster-autoscaler's rules, no DaemonSets
    (``analyzer.sources.autoscaled_nodes``; off by default); no pod held back
    (``pending_fraction`` read as 0: in the data a pod held back for minutes, e.g. by an unbound
    volume, looks like one waiting for a node, so no replay could tell whether its autoscaler
    should have added one; docs/autoscaling.md, "Fidelity").

    With ``growth`` or ``fast_growth`` set, the cluster's structure (nodes, workloads and their
    replicas at the anchor) comes from the seed alone and its events (pod creation times, rollouts,
    Jobs, usage noise) from the seed and ``start``: ranges generated one after another (e.g. one
    week at a time) continue one another, and the same range gives the same output.

    Fields added after the first snapshots keep their defaults out of ``meta.json`` so default
    output does not change.
    """

    seed: int = 0
    nodes: int = 200
    days: float = 7.0
    step: int = 60
    start: datetime = DEFAULT_START
    churn: float = 0.5
    pods_per_node: float = 8.0
    hot_nodes: float = 0.05
    gpu_pool: bool = True
    pending_fraction: float = 0.02
    dedicated_pools: tuple[str, ...] = ()
    usage_scale: float = 1.0
    hot_by_node: bool = False
    zones: int = 0
    pod_constraints: bool = False
    growth: tuple[tuple[str, float], ...] = ()
    fast_growth: tuple[tuple[str, float], ...] = ()
    growth_anchor: datetime | None = None
    weekend_dip: float = 0.0
    day_noise: float = 0.0
    team_usage: tuple[tuple[str, float], ...] = ()
    kubelet_version: str = KUBELET_VERSION
    node_events: bool = False
    autoscaled: bool = False
    rollouts: float | None = None

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise InputError(f"--nodes: {self.nodes} must be at least 1")
        if self.step < 1 or self.step != int(self.step):
            raise InputError(f"--step: {self.step}s must be a whole number of seconds >= 1s")
        if self.days <= 0 or self.days * 86400 < 2 * self.step:
            raise InputError(f"--days: {self.days} must cover at least two steps")
        if self.churn < 0:
            raise InputError(f"--churn: {self.churn} must be >= 0")
        if self.rollouts is not None and self.rollouts < 0:
            raise InputError(f"rollouts: {self.rollouts} must be >= 0 (rollouts per day)")
        if not 0 <= self.hot_nodes <= 1:
            raise InputError(f"--hot-nodes: {self.hot_nodes} must be a fraction in [0, 1]")
        if self.pods_per_node < 0:
            raise InputError(f"--pods-per-node: {self.pods_per_node} must be >= 0")
        if self.usage_scale <= 0:
            raise InputError(f"--usage-scale: {self.usage_scale} must be > 0")
        if self.zones < 0:
            raise InputError(f"--zones: {self.zones} must be >= 0 (0: no zone labels)")
        if self.start.tzinfo is None:
            raise InputError("--start: the time must carry a timezone (e.g. 2026-11-01T00:00:00Z)")
        for name, rate in (*self.growth, *self.fast_growth):
            if not 0 <= rate <= 10:
                raise InputError(
                    f"growth of {name}: {rate} must be a fraction per month in [0, 10] "
                    "(0.05 = +5 %/month)"
                )
        if self.growth_anchor is not None and self.growth_anchor.tzinfo is None:
            raise InputError("growth_anchor: the time must carry a timezone")
        if not 0 <= self.weekend_dip < 1:
            raise InputError(f"weekend_dip: {self.weekend_dip} must be a fraction in [0, 1)")
        if not 0 <= self.day_noise <= 1:
            raise InputError(f"day_noise: {self.day_noise} must be in [0, 1] (a lognormal σ)")
        for namespace, factor in self.team_usage:
            if factor <= 0:
                raise InputError(f"team_usage of {namespace}: {factor} must be > 0")

    @property
    def grows(self) -> bool:
        """Whether the growth model is on (it also changes how the random streams are split)."""
        return bool(self.growth or self.fast_growth)

    @property
    def anchor_s(self) -> int:
        """The growth anchor in unix seconds (``start`` unless set)."""
        anchor = self.growth_anchor or self.start
        return int(anchor.timestamp())

    def growth_rate(self, template: str, pool: str | None) -> float:
        """Monthly growth of the workload template ``template`` bound to ``pool`` (None: any)."""
        fast = dict(self.fast_growth)
        if template in fast:
            return fast[template]
        return dict(self.growth).get(pool if pool is not None else ANY_POOL, 0.0)

    @property
    def start_s(self) -> int:
        """Range start in unix seconds (a multiple of the step keeps the grid aligned)."""
        return int(self.start.timestamp())

    @property
    def points(self) -> int:
        """Sample points in the observed range ``[start, end]`` (both ends included)."""
        return int(self.days * 86400) // self.step + 1

    @property
    def end_s(self) -> int:
        """Range end in unix seconds (the last grid point)."""
        return self.start_s + (self.points - 1) * self.step


@dataclass(frozen=True)
class Grid:
    """The generator's sample grid: one point before ``start`` (so counters have a rate at the
    first observed point), then every ``step`` up to ``end``. Index 0 is ``start − step``."""

    origin: int  # unix seconds of index 0
    step: int
    size: int

    @classmethod
    def of(cls, spec: SyntheticSpec) -> Grid:
        """The grid of ``spec``."""
        return cls(origin=spec.start_s - spec.step, step=spec.step, size=spec.points + 1)

    @property
    def times(self) -> np.ndarray:
        """Unix seconds of every grid index (int64)."""
        return self.origin + self.step * np.arange(self.size, dtype=np.int64)

    def first_at_or_after(self, t: float) -> int:
        """Smallest index whose time is ≥ ``t`` (may be ``size``: none)."""
        return max(0, -((self.origin - int(np.ceil(t))) // self.step))

    def last_at_or_before(self, t: float) -> int:
        """Largest index whose time is ≤ ``t`` (−1: none), clipped to the grid."""
        return min(self.size - 1, (int(np.floor(t)) - self.origin) // self.step)

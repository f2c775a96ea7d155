"""PodTopologySpread and InterPodAffinity in a replay: which pods need the full profile.

The replay's incremental cache (``scoring.py``) scores pods by shape and does not see placed
pods' labels. PodTopologySpread and InterPodAffinity do; for most pods they are *inert* — they
neither refuse a node nor score (PreFilter and PreScore both Skip) — and leaving them out gives
the same choice as ``Profile.evaluate``:

- PodTopologySpread is inert for a pod without ``topologySpreadConstraints`` whose default
  constraints (``defaultingType: System``: hostname maxSkew 3, zone maxSkew 5) get an empty
  selector from ``helper.DefaultSelector`` — no Service, ReplicationController, ReplicaSet or
  StatefulSet in the snapshot's objects selects it. A snapshot without such objects therefore
  applies no default spreading, exactly as upstream does for a pod nothing selects; we do not
  invent selectors from pods' common labels;
- InterPodAffinity is inert for a pod without pod (anti-)affinity terms when no placed pod's
  terms match it (``InterPodAffinity.placed_terms_match``).

``TopologyCheck.route`` sorts each pod: ``INERT`` (both plugins inert: the cache alone);
``DEFAULTS`` — its only topology work is PodTopologySpread's System default constraints (no own
constraints, no terms, no placed pod's terms matching it, a non-empty default selector; they are
ScheduleAnyway, so they never filter): ``choose_defaults`` adds their score from the per-selector
counts of ``default_spread.DefaultSpread`` to the cache's totals; ``PROFILE`` — every other pod is
chosen by ``TopologyCheck.choose``: the cache's resource totals and feasibility (kept
incrementally per shape), the two plugins' filters over all nodes, the static score plugins
normalised over the nodes left, and the two plugins' scores over those — the same sums and tie
set as ``Profile.evaluate``; the cost is paid only by pods that carry terms or are selected by
them. The score cache shares its per-shape rows between pods that differ only in the shape key's
topology part (after ``TOPOLOGY_MARK``: namespace, labels, owner, terms). ``objects_of`` turns a
snapshot's ``kube_objects.json`` into the ``KubeObjects`` the plugins read.

When no pod of the snapshot has spread constraints or pod (anti-)affinity terms and its objects
hold no Service, ReplicationController, ReplicaSet or StatefulSet, both plugins are inert for every
pod of the whole replay: the state then gets an ``InertIndex`` (always empty, which is what the
plugins would conclude from a full one) and the cache skips the per-pod check — resource-only
snapshots replay at the speed they had before these plugins joined the presets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from analyzer.core.snapshot import Snapshot
from analyzer.replay.default_spread import UNHANDLED, DefaultSpread
from analyzer.replay.zone_bests import Kept
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.kube_objects import KubeObjects, from_kept
from analyzer.scheduling.label_selectors import LabelSelector
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.pod_index import PlacedPod, PodIndex
from analyzer.scheduling.state import ClusterState, PodDemand

LOWEST = np.iinfo(np.int64).min  # the cache's "infeasible" row value (scoring.LOWEST)
TOPOLOGY_PLUGINS = (PodTopologySpread, InterPodAffinity)  # the plugins this module checks
INERT, DEFAULTS, PROFILE = "inert", "defaults", "profile"  # ``TopologyCheck.route``
# a shape key's topology part (namespace, labels, owner, terms: pending-queue groups) follows this
# mark; the score cache's entries (resource totals) share the part before it
TOPOLOGY_MARK = b"|#topology#"
_PLUGINS = TOPOLOGY_PLUGINS


def objects_of(snapshot: Snapshot) -> KubeObjects:
    """The snapshot's Kubernetes objects as ``KubeObjects`` (none for older snapshots)."""
    return from_kept(snapshot.objects, "kube_objects.json")


class InertIndex(PodIndex):
    """A pod index that stays empty: for replays whose pods can never meet a term or a default
    selector (``in_play`` False), where an empty index gives the plugins' exact answers."""

    tracking = False

    def add(self, node: int, pod: PlacedPod) -> None:
        """Nothing to track."""

    def remove(self, node: int, pod: PlacedPod) -> None:
        """Nothing to track."""


def in_play(objects: KubeObjects, demands: list[PodDemand]) -> bool:
    """Whether PodTopologySpread or InterPodAffinity can act on any pod of a replay."""
    if objects.selecting:
        return True
    return any(d.spread or d.affinity is not None for d in demands)


def without_inert_filters(profile: Profile, state: ClusterState) -> Profile:
    """``profile`` without its PodTopologySpread/InterPodAffinity filters when ``state`` has an
    ``InertIndex`` (they refuse no node in such a replay); else ``profile`` itself."""
    if not isinstance(state.pod_index, InertIndex):
        return profile
    kept = [f for f in profile.filters if not isinstance(f, _PLUGINS)]
    return profile if len(kept) == len(profile.filters) else replace(profile, filters=kept)


def topology_plugins(profile: Profile) -> tuple[PodTopologySpread | None, InterPodAffinity | None]:
    """The profile's PodTopologySpread and InterPodAffinity instances (filter or score)."""
    plugins = [*profile.filters, *(w.plugin for w in profile.scorers)]
    spread = next((p for p in plugins if isinstance(p, PodTopologySpread)), None)
    affinity = next((p for p in plugins if isinstance(p, InterPodAffinity)), None)
    return spread, affinity


class TopologyCheck:
    """Decides per pod whether the profile's topology plugins can be left out (exactly)."""

    def __init__(self, profile: Profile, state: ClusterState | None = None) -> None:
        self.spread, self.affinity = topology_plugins(profile)
        self.filters = [f for f in profile.filters if isinstance(f, _PLUGINS)]
        self.scorers = [
            (w.plugin, w.weight) for w in profile.scorers if isinstance(w.plugin, _PLUGINS)
        ]
        # an InertIndex: nothing in this replay can meet the plugins (``in_play``)
        self.inert = state is not None and isinstance(state.pod_index, InertIndex)
        # (namespace, labels, controller) -> the default selector (None: empty, nothing selects)
        self._selected: dict[Any, LabelSelector | None] = {}
        self._by_id: dict[tuple[str, int, int], tuple[Any, Any, LabelSelector | None]] = {}
        # System defaults scored without the profile (``default_spread``): PodTopologySpread's
        # score weight when its args are System-defaulted, else None
        weights = [w for p, w in self.scorers if isinstance(p, PodTopologySpread)]
        system = self.spread is not None and self.spread.system_defaulted
        self.default_weight = weights[0] if system and len(weights) == 1 else None
        self.fast: DefaultSpread | None = None
        # the pod, time and answers (by plugin id) of the filters at the last ``choose``: a
        # caller that knows nothing they read changed since may take them (``ScoreCache``)
        self.last: tuple[PodDemand, float, dict[int, BoolArray]] | None = None

    @property
    def present(self) -> bool:
        """True when the profile has PodTopologySpread or InterPodAffinity and they may act."""
        return (self.spread is not None or self.affinity is not None) and not self.inert

    def _default_selector(self, state: ClusterState, pod: PodDemand) -> LabelSelector | None:
        # a replay's demands share their labels and controller objects: look up by identity
        # first (the objects are kept in the value, so the ids stay theirs)
        fast = (pod.namespace, id(pod.labels), id(pod.controller))
        held = self._by_id.get(fast)
        if held is not None and held[0] is pod.labels and held[1] is pod.controller:
            return held[2]
        key = (pod.namespace, _frozen(pod.labels), pod.controller)
        if key in self._selected:
            found = self._selected[key]
        else:
            selector = state.objects.default_selector(pod.namespace, pod.labels, pod.controller)
            found = self._selected[key] = None if selector.empty else selector
        self._by_id[fast] = (pod.labels, pod.controller, found)
        return found

    def needs_profile(self, state: ClusterState, pod: PodDemand) -> bool:
        """True when PodTopologySpread or InterPodAffinity may act on ``pod`` in ``state``."""
        return self.route(state, pod)[0] != INERT

    def route(self, state: ClusterState, pod: PodDemand) -> tuple[str, LabelSelector | None]:
        """``INERT`` (the cache alone decides), ``DEFAULTS`` with the default selector (only the
        System default constraints act: ``default_spread``) or ``PROFILE``."""
        spread = self.spread
        selector = None
        if spread is not None:
            if pod.spread:
                return PROFILE, None
            if spread.defaults:
                selector = self._default_selector(state, pod)
        affinity = self.affinity
        if affinity is not None:
            terms = pod.affinity
            if terms is not None and (
                terms.required or terms.required_anti or terms.preferred or terms.preferred_anti
            ):
                return PROFILE, None
            if affinity.placed_terms_match(state, pod):
                return PROFILE, None
        if selector is None:
            return INERT, None
        return (DEFAULTS if self.default_weight is not None else PROFILE), selector

    def choose_defaults(
        self,
        masked: Int64Array,
        static: list[tuple[Any, int, Int64Array]],
        state: ClusterState,
        pod: PodDemand,
        selector: LabelSelector,
        now: float,
        rng: np.random.Generator,
        kept: Kept | None = None,
    ) -> int | None:
        """``choose`` for a pod routed ``DEFAULTS`` (``default_spread``; the general path when
        static score plugins vary or the nodes' labels are unusual). ``kept``: the score-cache
        entry ``masked`` is, flushed (its per-zone bests are kept there)."""
        if not static and self.default_weight is not None:
            if self.fast is None:
                self.fast = DefaultSpread(state, self.default_weight)
            found = self.fast.choose(masked, state, pod, selector, rng, kept)
            if found != UNHANDLED:
                return found
        return self.choose(masked, static, state, pod, now, rng)

    def choose(
        self,
        masked: Int64Array,
        static: list[tuple[Any, int, Int64Array]],
        state: ClusterState,
        pod: PodDemand,
        now: float,
        rng: np.random.Generator,
        sample: Callable[[BoolArray], BoolArray] | None = None,
    ) -> int | None:
        """``select(Profile.evaluate(...))`` from the cache's row totals: ``masked`` holds the
        resource plugins' weighted total on nodes passing the cached filters (``LOWEST``
        elsewhere), ``static`` the raw scores of the static score plugins that differ by node.
        ``sample``: keeps the feasible nodes kube-scheduler would find (percentageOfNodesToScore,
        ``node_tree``); only those are scored and normalised."""
        feasible = masked != LOWEST
        answers = {}
        for plugin in self.filters:
            passed = plugin.filter(state, pod, now).feasible
            answers[id(plugin)] = passed
            feasible &= passed
        self.last = (pod, now, answers)
        if not feasible.any():
            return None
        if sample is not None:
            feasible = sample(feasible)
        total = np.where(feasible, masked, 0)
        for plugin, weight, raw in static:
            total += weight * plugin.normalize(raw, feasible)
        for scorer, weight in self.scorers:
            scores = scorer.score_feasible(state, pod, now, feasible)
            if scores is not None:
                total += weight * scores
        candidates = np.flatnonzero(feasible)
        values = total[candidates]
        ties = candidates[values == values.max()]
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[int(rng.integers(len(ties)))])


def _frozen(labels: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())

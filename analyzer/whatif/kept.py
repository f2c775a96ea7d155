"""Repack only's placement kept with the right-sized requests, and per-pool mixes of placements.

Why the kept placement is feasible (docs/whatif.md '"both" vs "repack only"'): a
``ReplayResult`` is a timeline — every pod's runs (node, start, end), its pending intervals and the
evictions. Right-sizing changes requests (and a limit it must raise), never usage, labels, nodes,
arrivals or departures. Keep repack only's timeline and give every pod its right-sized requests:

- **NodeResourcesFit** passes wherever it passed before when no pod's request of any resource
  rose: the sum of requests on a node at any instant is no larger;
- **LoadAwareScheduling**: the NodeMetrics are built from usage, unchanged with the same
  placement; the pod-assign cache adds each recent pod's estimate ``min(round(max(request, limit)
  × factor / 100), limit)`` (``scheduling.plugins.loadaware.args.estimate_pod``), which does not grow when
  the request does not grow and the limit stays (a limit is only raised when below the new
  request) — checked pod by pod with the profile's own arguments;
- **PodTopologySpread, InterPodAffinity, node affinity, taints, ports**: labels, nodes and the
  pods on each node at each instant are the same, so every count and match is the same;
- **DefaultPreemption**: its evictions stay; the preemptor still fits after them (its request
  did not grow), only an eviction may no longer have been needed — a feasible placement, not
  necessarily the one a scheduler would choose.

So the check is per pod (:func:`raised_pods`): a pod whose request of some resource rose (a
recommendation above today's request, an OOM bump) or, when the profile filters with
LoadAwareScheduling, whose estimate rose (a limit below the request — which Kubernetes refuses,
the synthetic generator writes — raised to the new request) breaks the argument, and then the
kept placement is not used.

A per-pool mix takes each pool's pods and nodes from one of two placements (:func:`merge`). It is
a placement of the whole cluster only when the pools are independent in both
(:func:`pools_independent`): every pod runs in one pool only, the same in both placements (or in
none in both), and no filter looks across pools — no pod has a required pod-affinity term (its
"first pod of the group" exception looks at the whole cluster) or a DoNotSchedule topology spread
constraint (its skew compares domains across the cluster), the profile sets no DoNotSchedule
default constraint, and every topology domain of a required anti-affinity term lies in one pool.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.loadfeed import LoadFeed
from analyzer.replay.projection import UsageMatrices
from analyzer.replay.result import ReplayResult
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.loadaware.args import LoadAwareArgs, estimate_pod
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling as LoadAware
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.spread_types import DO_NOT_SCHEDULE
from analyzer.scheduling.state import PodDemand
from analyzer.whatif.explain import node_pools

FRESH = "fresh"
KEPT = "repack only's, right-sized"
OBSERVED_PLACEMENT = "observed"


def raised_pods(today: ReplayInput, rightsized: ReplayInput, profile: Profile | None) -> list[int]:
    """The pods whose right-sized demand breaks the kept placement's argument under ``profile``'s
    filters: a request of some resource rose, or (LoadAwareScheduling filtering) the estimate."""
    if today.pod_uids != rightsized.pod_uids:
        raise ValueError("kept placement: the two inputs hold other pods")
    load = [f.args for f in (profile.filters if profile else []) if isinstance(f, LoadAware)]
    return [
        pod
        for pod, (old, new) in enumerate(zip(today.demands, rightsized.demands, strict=True))
        if old is not new and _breaks(old, new, load)
    ]


def _breaks(old: PodDemand, new: PodDemand, load: list[LoadAwareArgs]) -> bool:
    """A request rose, or a load-aware estimate did."""
    names = set(old.request_map) | set(new.request_map)
    if any(new.request(k) > old.request(k) for k in names):
        return True
    for args in load:
        before, after = estimate_pod(old, args), estimate_pod(new, args)
        if any(v > before.get(k, 0) for k, v in after.items()):
            return True
    return False


def refusal(inp: ReplayInput, result: ReplayResult, profile: Profile, mats: UsageMatrices) -> str:
    """ "" when every run of ``result`` passes ``profile``'s filters at its bind with ``inp``'s
    demands; else the first refusal, as text (:func:`first_refusal`)."""
    where, reasons = first_refusal(inp, result, profile, mats)
    return f"{where}: {reasons}" if where else reasons


def first_refusal(
    inp: ReplayInput, result: ReplayResult, profile: Profile, mats: UsageMatrices
) -> tuple[str, str]:
    """("", "") when every run of ``result`` passes ``profile``'s filters at its bind with
    ``inp``'s demands; else the first refusal: (which pod on which node when, the filters'
    reasons), or ("", why the walk was not made). The runs are walked in time order — at each
    instant the NodeMetrics advance, the runs that end are unbound, then the runs that start are
    checked and bound in the replay's bind order — with LoadAwareScheduling's feed as in the
    replay. DaemonSet/static pods are bound unchecked, as the replay binds them."""
    if profile.uses_devices:
        return "", "GPU-sharing profiles are not checked"
    state = inp.fresh_state()
    feed = LoadFeed.for_profile(inp, profile, state, mats)
    seg = result.segments
    pods, nodes = seg["pod"].tolist(), seg["node"].tolist()
    begin = seg["start"].tolist()
    # at one instant: the runs that end, then those that start in bind order (a run that ends
    # when it starts right after its own start)
    events = sorted(
        [(t, 1, k, 0) for k, t in enumerate(begin)]
        + [(t, int(t <= begin[k]), k, 1) for k, t in enumerate(seg["end"].tolist()) if t != NEVER]
    )
    clock = None
    for when, _, k, ends in events:
        if feed is not None and when != clock:
            feed.advance(when)
        clock = when
        pod, node, demand = pods[k], nodes[k], inp.demands[pods[k]]
        if ends:
            state.unbind(node, demand)
            if feed is not None:
                feed.unbound(pod, node, when)
            continue
        for plugin in profile.filters if not inp.pinned[pod] else []:
            checked = plugin.filter(state, demand, when / 1e9)
            if not checked.feasible[node]:
                return (
                    f"pod {inp.pod_uids[pod]} on {inp.node_names[node]} at "
                    f"{pd.Timestamp(when, tz='UTC').isoformat()}",
                    "; ".join(checked.reasons(node)),
                )
        state.bind(node, demand)
        if feed is not None:
            feed.bound(pod, node, when)
    return "", ""


def _runs_pool(result: ReplayResult, pools: list[str], n_pods: int) -> list[set[str]]:
    """Per pod, the pools of its runs."""
    out: list[set[str]] = [set() for _ in range(n_pods)]
    seg = result.segments
    for pod, node in zip(seg["pod"].tolist(), seg["node"].tolist(), strict=True):
        out[pod].add(pools[node])
    return out


def _names(pools: set[str]) -> str:
    return "/".join(sorted(pools)) or "no pool"


def pod_pools(inp: ReplayInput, a: ReplayResult, b: ReplayResult) -> list[str] | str:
    """Per pod, its one pool in both placements ("" = placed in neither); or why there is none."""
    pools = node_pools(inp)
    in_a = _runs_pool(a, pools, inp.pod_count)
    in_b = _runs_pool(b, pools, inp.pod_count)
    out = []
    for pod, (x, y) in enumerate(zip(in_a, in_b, strict=True)):
        if x != y or len(x) > 1:
            return (
                f"pod {inp.pod_uids[pod]} runs in {_names(x)} in one placement and "
                f"{_names(y)} in the other"
            )
        out.append(next(iter(x)) if x else "")
    return out


def pools_independent(inp: ReplayInput, profile: Profile | None) -> str:
    """ "" when no filter of ``profile`` looks across pools for the pods of ``inp``; else why."""
    pools = node_pools(inp)
    labels = inp.template.node_labels
    spread = [p for p in (profile.filters if profile else []) if isinstance(p, PodTopologySpread)]
    for plugin in spread:
        if any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in plugin.defaults):
            return "the profile sets a DoNotSchedule default topology spread constraint"
    keys: set[str] = set()
    for pod, demand in enumerate(inp.demands):
        if any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in demand.spread):
            return f"pod {inp.pod_uids[pod]} has a DoNotSchedule topology spread constraint"
        if demand.affinity is None:
            continue
        if demand.affinity.required:
            return f"pod {inp.pod_uids[pod]} has a required pod affinity term"
        keys |= {t.topology_key for t in demand.affinity.required_anti}
    for key in sorted(keys):
        domains: dict[str, set[str]] = {}
        for node, node_labels in enumerate(labels):
            if key in node_labels:
                domains.setdefault(node_labels[key], set()).add(pools[node])
        shared = sorted(v for v, p in domains.items() if len(p) > 1)
        if shared:
            return f"the anti-affinity topology {key}={shared[0]} spans pools"
    return ""


def merge(
    inp: ReplayInput, a: ReplayResult, b: ReplayResult, pods_pool: list[str], from_b: set[str]
) -> ReplayResult:
    """Placement ``a`` in every pool but those of ``from_b``, where it is ``b`` (pods placed in
    no pool come from ``b``; :func:`pod_pools` gives ``pods_pool``)."""
    take_b = np.array([p in from_b or p == "" for p in pods_pool], dtype=bool)
    if len(take_b) != inp.pod_count:
        raise ValueError("merge: one pool per pod")

    def per_pod(name: str) -> Any:
        return np.where(take_b, getattr(b, name), getattr(a, name))

    def joined(key: str, name: str) -> dict[str, Any]:
        """The rows of table ``name`` whose ``key`` pod comes from each placement."""
        parts = [
            {k: v[take_b[table[key]] == mine] for k, v in table.items()}
            for table, mine in ((getattr(a, name), False), (getattr(b, name), True))
            if table
        ]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}

    segments = joined("pod", "segments")
    order = np.lexsort((segments["start"], segments["pod"]))
    segments = {k: v[order] for k, v in segments.items()}
    refusals = {
        pod: refusal
        for source, mine in ((a, False), (b, True))
        for pod, refusal in source.refusals.items()
        if take_b[pod] == mine
    }
    # evictions by a leaving node: runs of non-DaemonSet pods that ended when their node left
    seg_pod, seg_node, seg_end = segments["pod"], segments["node"], segments["end"]
    evicted = (
        (seg_end == inp.node_leave[seg_node])
        & (seg_end < inp.departure[seg_pod])
        & ~inp.pinned[seg_pod]
    )
    return ReplayResult(
        strategy=b.strategy,
        seed=b.seed,
        node=per_pod("node"),
        placed_at=per_pod("placed_at"),
        wait=per_pod("wait"),
        waited=per_pod("waited"),
        pending_at_end=per_pod("pending_at_end"),
        abandoned=per_pod("abandoned"),
        segments=segments,
        waits=joined("pod", "waits"),
        evicted=int(evicted.sum()),
        preemptions=joined("preemptor", "preemptions"),
        refusals=dict(sorted(refusals.items())),
        notes=sorted(set(a.notes) | set(b.notes)),
    )

"""The scheduling core: kube-scheduler and Koordinator plugins, bit-exact, over numpy arrays.

API for the replay engine (every call works on all nodes at once)::

    from analyzer.scheduling import ClusterState, load_strategy, make_demand
    import numpy as np

    state = ClusterState.from_nodes(names, allocatable_maps)   # resources: cpu, memory, others sorted
    profile = load_strategy("kube-default")                     # or a KubeSchedulerConfiguration path
    pod = make_demand(state.resources, requests, nonzero, limits, name=..., namespace=...,
                      daemonset=False, priority=None, koord_class="koord-prod", qos="Burstable")
    evaluation = profile.evaluate(state, pod, now=unix_seconds)
    node = profile.select(evaluation, np.random.default_rng(seed))   # None = fits nowhere
    if node is not None:
        state.bind(node, pod)                                    # later: state.unbind(node, pod)

- ``ClusterState``: ``allocatable``/``requested`` ``[N, R]`` int64 (real requests),
  ``nonzero_requested`` ``[N, 2]`` (cpu, memory with 100m/200Mi per container without a request),
  ``pod_count``/``allowed_pods`` ``[N]``; ``node_annotations`` for Koordinator overrides;
  ``load``: ``LoadInputs`` (Koordinator NodeMetric-derived arrays: node usage, aggregated usage per
  (stat, window), update time, report interval, delta of recently assigned pods, prod usage), which a
  replay fills from projected NodeMetrics. ``build_load_inputs`` runs Koordinator's pod-assign cache.
- ``PodDemand``: requests / non-zero / limits vectors in the state's resource order, plus DaemonSet
  flag, priority, Koordinator priority class and QoS. ``PodObject.demand`` builds one from a Pod.
- ``Evaluation``: ``feasible`` mask, ``scores`` per plugin (raw 0–100, every node), ``total``
  (Σ weight × score), ``reasons(i)``, ``best()`` (tie set). ``select`` draws uniformly among ties.
- Plugins live in a registry (``registry.register(PluginType(...))`` for user plugins); presets in
  ``strategies`` (kube-default, most-allocated, rtcr-binpack, koord-loadaware; GPU sharing: fgd,
  bestfit, gpu-packing, gpu-clustering, dotprod, random).
- Topology spread: ``state.attach_pod_index()`` before binding makes ``bind``/``unbind`` keep the
  placed pods' namespace/labels/terminating flag and per-selector counts (``pod_index``), which
  ``PodTopologySpread`` (``podtopologyspread``) reads with ``state.objects`` (Services, ReplicaSets,
  StatefulSets, … from ``kube_objects``); ``PodDemand.spread`` holds a pod's constraints.
  ``InterPodAffinity`` (``interpodaffinity``) reads the same index (placed pods with terms in
  ``affinity_groups``) and Namespace objects; ``PodDemand.affinity`` holds a pod's terms.
  ``Evaluation.status(i)``: Success / Unschedulable / UnschedulableAndUnresolvable.
- GPU sharing (``analyzer.scheduling.gpu``): ``gpu.devices.attach_devices(state, workload)`` tracks
  every GPU; the GPU plugins (``gpu.plugins``) filter per GPU and score with the FGD paper's
  policies; ``bind`` takes ``gpus`` (``profile.choose_gpus``) and ``unbind`` frees exactly those.
"""

from __future__ import annotations

from analyzer.scheduling.framework import Evaluation, FilterResult, Profile, WeightedScore, select
from analyzer.scheduling.plugins.loadaware.cache import (
    AssignedPod,
    NodeMetricInfo,
    build_load_inputs,
)
from analyzer.scheduling.state import (
    ClusterState,
    LoadInputs,
    PodDemand,
    make_demand,
    resource_axis,
)
from analyzer.scheduling.strategies import available_strategies, load_strategy
from analyzer.scheduling.versions import KubeVersion, parse_version

__all__ = [
    "AssignedPod",
    "ClusterState",
    "Evaluation",
    "FilterResult",
    "KubeVersion",
    "LoadInputs",
    "NodeMetricInfo",
    "PodDemand",
    "Profile",
    "WeightedScore",
    "available_strategies",
    "build_load_inputs",
    "load_strategy",
    "make_demand",
    "parse_version",
    "resource_axis",
    "select",
]

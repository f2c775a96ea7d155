"""GPU-sharing plugins of the scheduling core: the device filter and the FGD paper's six policies.

They read the per-GPU device state ``ClusterState.devices`` (``devices``; a replay attaches
it for profiles that use these plugins) and call the same policy math as the trace replays
(``scores``), so a core preset and the trace policy of the same name score alike.

- ``GpuDevice`` (filter): the pod's GPU count, per-GPU milli and allowed models must fit
  (``GpuNodes.device_fit``); the GPU resource names themselves are left to this filter
  (the GPU presets list them in NodeResourcesFit's ``ignoredResources``).
- Score plugins ``FGDScore``, ``BestFitScore``, ``GpuPackingScore``, ``GpuClusteringScore``,
  ``DotProductScore``, ``RandomScore``: integer 0–100 scores of the nodes where the pod fits by
  CPU, memory and GPUs (0 elsewhere); ``BestFitScore`` min-max normalises over the feasible nodes
  (NormalizeScore); ``RandomScore`` gives every node 0, so the seeded uniform tie-break picks a
  uniformly random feasible node. Each also chooses the GPUs inside the chosen node
  (``choose_gpus``): best-fit GPU, FGD's own choice, or random fitting GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.devices import DeviceState
from analyzer.scheduling.gpu.model import GpuDemand
from analyzer.scheduling.gpu.scores import (
    GPU_RULES,
    best_fit_raw,
    choose_gpus,
    dot_product_scores,
    fgd_node_scores,
    gpu_clustering_scores,
    gpu_packing_scores,
    normalize,
)
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

FILTER_NAME = "GpuDevice"
ScoreFn = Callable[[GpuState, GpuDemand, Int64Array], Int64Array]


def parse_no_args(raw: Mapping[str, Any] | None, field: str) -> None:
    """The GPU plugins take no arguments."""
    if raw:
        raise InputError(f"{field}: the GPU plugins take no args, got {sorted(raw)}")


def devices_of(state: ClusterState, plugin: str) -> DeviceState:
    """The state's device model, or ``InputError`` naming the fix."""
    if not isinstance(state.devices, DeviceState):
        raise InputError(
            f"{plugin}: needs per-GPU device state; use it in 'analyzer whatif' or call "
            "analyzer.scheduling.gpu.devices.attach_devices(state) before binding pods "
            "('analyzer score' does not yet)"
        )
    return state.devices


class GpuDeviceFilter:
    """Filter: enough GPUs of an allowed model with the per-GPU milli free."""

    name = FILTER_NAME
    needs_devices = True

    def __init__(self, args: object = None, version: KubeVersion | None = None) -> None:
        self.version = version

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Device fit of every node for ``pod``."""
        devices = devices_of(state, self.name)
        demand = devices.demand(pod)
        feasible: BoolArray = devices.gpu.nodes.device_fit(demand)
        models = f" of model {'|'.join(sorted(demand.models))}" if demand.models else ""
        reason = (
            f"node(s) had fewer than {demand.num_gpu} GPU(s){models} with "
            f"{demand.gpu_milli} milli free"
        )
        return FilterResult(feasible, lambda _node: [reason])


class GpuPolicyScore:
    """A score plugin running one of the paper's policies on the device state."""

    needs_devices = True

    def __init__(self, name: str, policy: str, score_fn: ScoreFn | None) -> None:
        self.name = name
        self.policy = policy
        self.score_fn = score_fn  # None: every node 0 (Random)

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array:
        """Scores of the nodes where the pod fits (CPU, memory, GPUs); 0 elsewhere."""
        devices = devices_of(state, self.name)
        out = np.zeros(state.node_count, dtype=np.int64)
        if self.score_fn is None:
            return out
        demand = devices.demand(pod)
        nodes = np.flatnonzero(devices.gpu.nodes.feasible(demand)).astype(np.int64)
        if len(nodes):
            out[nodes] = self.score_fn(devices.gpu, demand, nodes)
        return out

    def choose_gpus(
        self, state: ClusterState, pod: PodDemand, node: int, rng: np.random.Generator
    ) -> tuple[int, ...]:
        """The policy's GPUs on the chosen ``node``."""
        devices = devices_of(state, self.name)
        return choose_gpus(GPU_RULES[self.policy], devices.gpu, devices.demand(pod), node, rng)

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """The node's free and total GPU milli and its raw score."""
        devices = devices_of(state, self.name)
        gpu = devices.gpu.nodes
        demand = devices.demand(pod)
        raw = self.score(state, pod, now)
        return [
            ExplainRow(
                plugin=self.name,
                resource="gpu-milli",
                requested=int(gpu.gpu_count[node]) * 1000 - int(gpu.gpu_free[node].sum()),
                allocatable=int(gpu.gpu_count[node]) * 1000,
                utilisation=None,
                score=int(raw[node]),
                note=f"pod: {demand.num_gpu} GPU(s) × {demand.gpu_milli} milli; "
                f"GPU choice {GPU_RULES[self.policy]}",
            )
        ]


class NormalizedGpuPolicyScore(GpuPolicyScore):
    """A policy score with the artifact's NormalizeScore step (BestFit)."""

    def normalize(self, raw: Int64Array, feasible: BoolArray) -> Int64Array:
        """Integer min-max normalisation over the feasible nodes; the others get 0."""
        out = np.zeros_like(raw)
        nodes = np.flatnonzero(feasible)
        if len(nodes):
            out[nodes] = normalize(raw[nodes])
        return out


def _fgd(state: GpuState, demand: GpuDemand, nodes: Int64Array) -> Int64Array:
    return fgd_node_scores(state, demand, nodes)[0]


# plugin name -> (paper policy, score function or None, normalises)
SCORE_PLUGINS: dict[str, tuple[str, ScoreFn | None, bool]] = {
    "FGDScore": ("FGD", _fgd, False),
    "BestFitScore": ("BestFit", best_fit_raw, True),
    "GpuPackingScore": ("GpuPacking", gpu_packing_scores, False),
    "GpuClusteringScore": ("GpuClustering", gpu_clustering_scores, False),
    "DotProductScore": ("DotProd", dot_product_scores, False),
    "RandomScore": ("Random", None, False),
}


def _builder(name: str) -> Callable[[Any, KubeVersion], GpuPolicyScore]:
    policy, score_fn, normalizes = SCORE_PLUGINS[name]
    kind = NormalizedGpuPolicyScore if normalizes else GpuPolicyScore
    return lambda _args, _version: kind(name, policy, score_fn)


def register_gpu_plugins(register: Callable[[Any], None], plugin_type: Any) -> None:
    """Register the GPU filter and the six policy score plugins (from ``registry``)."""
    register(
        plugin_type(
            name=FILTER_NAME,
            description="filter: GPU count, per-GPU milli and model fit (GPU sharing, per device)",
            points=frozenset({"filter"}),
            parse_args=parse_no_args,
            build=GpuDeviceFilter,
        )
    )
    for name, (policy, _, _) in SCORE_PLUGINS.items():
        register(
            plugin_type(
                name=name,
                description=f"score: the FGD paper's {policy} policy on per-GPU state",
                points=frozenset({"score"}),
                parse_args=parse_no_args,
                build=_builder(name),
            )
        )

"""Per-GPU device state attached to the scheduling core's ``ClusterState`` (``state.devices``).

GPU-sharing schedulers (Koordinator DeviceShare, the Alibaba gpushare device plugin) place a pod
on individual GPUs, so the core optionally carries the trace replays' ``GpuState`` (free milli per
GPU, GPU model, the FGD caches) beside its nodes × resources arrays. ``ClusterState.bind`` and
``unbind`` keep it in step: a bound pod records the GPUs it took, and unbind frees exactly those.

GPU choice on bind: the caller's (the profile's GPU policy, ``Profile.choose_gpus``), else the
best-fit GPU (Open-Gpu-Share's default). A pod bound where its GPUs do not fit (a DaemonSet or
static pod kept on its real node, or a profile without the GPU filter) takes no GPU here; it is
counted in ``unfitted`` so the replay can say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fragments import TargetWorkload, target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes
from analyzer.scheduling.gpu.requests import node_gpu_count, node_gpu_model, pod_gpu_demand
from analyzer.scheduling.state import ClusterState, PodDemand


def empty_workload() -> TargetWorkload:
    """A target workload without shapes (every policy but FGD works without one)."""
    none = np.zeros(0, dtype=np.int64)
    return TargetWorkload(none, none, none, (), none, distinct_shapes=0, pods=0)


def workload_of(demands: Sequence[GpuDemand], threshold_pct: int = 95) -> TargetWorkload:
    """FGD's target workload from pod demands (``analyzer.scheduling.gpu.fragments.target_workload``: shapes by CPU,
    per-GPU milli, GPU count and models, most common first until ``threshold_pct`` % of pods)."""
    if not demands:
        return empty_workload()
    return target_workload(
        [d.cpu for d in demands],
        [d.num_gpu for d in demands],
        [d.gpu_milli for d in demands],
        [d.models for d in demands],
        threshold_pct,
    )


@dataclass
class DeviceState:
    """The per-GPU state of one ``ClusterState`` and the GPUs every bound pod holds."""

    gpu: GpuState
    # id(pod) -> [(node, GPUs, the demand bound, the pod)]; the pod is kept so its id stays unique
    held: dict[int, list[tuple[int, tuple[int, ...], GpuDemand, PodDemand]]] = field(
        default_factory=dict
    )
    demands: dict[int, tuple[PodDemand, GpuDemand]] = field(default_factory=dict)
    unfitted: int = 0

    @classmethod
    def build(cls, state: ClusterState, workload: TargetWorkload | None = None) -> DeviceState:
        """Devices for ``state``'s nodes (nothing bound yet), GPUs from allocatable and labels."""
        if state.pod_count.any():
            raise ValueError("attach the GPU device state before binding pods")
        maps = [
            {r: int(v) for r, v in zip(state.resources, row, strict=True)}
            for row in state.allocatable.tolist()
        ]
        labels = state.node_labels or [{} for _ in state.node_names]
        nodes = GpuNodes.create(
            state.node_names,
            state.allocatable[:, 0].copy(),
            state.allocatable[:, 1].copy(),
            [node_gpu_count(m) for m in maps],
            [node_gpu_model(lab) for lab in labels],
        )
        return cls(GpuState(nodes, workload if workload is not None else empty_workload()))

    def demand(self, pod: PodDemand) -> GpuDemand:
        """The pod's GPU demand (parsed once per pod object)."""
        cached = self.demands.get(id(pod))
        if cached is not None and cached[0] is pod:
            return cached[1]
        demand = pod_gpu_demand(pod.request_map, pod.labels, f"pod {pod.namespace}/{pod.name}")
        self.demands[id(pod)] = (pod, demand)
        return demand

    def fits(self, node: int, demand: GpuDemand) -> bool:
        """Whether ``demand``'s GPUs fit on ``node`` (model, count, per-GPU milli)."""
        nodes = self.gpu.nodes
        if demand.num_gpu == 0:
            return True
        if demand.models is not None and not nodes.model_mask(demand.models)[node]:
            return False
        return int((nodes.gpu_free[node] >= demand.gpu_milli).sum()) >= demand.num_gpu

    def bind(self, node: int, pod: PodDemand, gpus: Sequence[int] | None = None) -> None:
        """Take ``gpus`` (default: best-fit) on ``node`` for ``pod`` and remember them."""
        demand = self.demand(pod)
        if gpus is None:
            if self.fits(node, demand):
                gpus = self.gpu.nodes.pick_gpus(node, demand, "best-fit")
            else:  # kept on its node without GPUs: account CPU and memory only
                self.unfitted += 1
                demand = GpuDemand(demand.cpu, demand.memory)
                gpus = ()
        taken = tuple(int(g) for g in gpus)
        if len(taken) != demand.num_gpu:
            raise ValueError(f"pod {pod.name}: {len(taken)} GPUs given for {demand.num_gpu}")
        self.gpu.bind(node, demand, taken)
        self.held.setdefault(id(pod), []).append((node, taken, demand, pod))

    def unbind(self, node: int, pod: PodDemand) -> None:
        """Free exactly the GPUs ``pod`` took on ``node``."""
        entries = self.held.get(id(pod), [])
        for i, (where, taken, demand, _) in enumerate(entries):
            if where == node:
                del entries[i]
                if not entries:
                    del self.held[id(pod)]
                self.gpu.unbind(node, demand, taken)
                return
        raise ValueError(f"pod {pod.name} is not bound on node {node}")

    def gpus_of(self, pod: PodDemand) -> list[tuple[int, tuple[int, ...]]]:
        """(node, GPU indices) of every current binding of ``pod``."""
        return [(node, taken) for node, taken, _, _ in self.held.get(id(pod), [])]


def attach_devices(state: ClusterState, workload: TargetWorkload | None = None) -> DeviceState:
    """Track ``state``'s GPUs one by one from now on (before any bind): ``state.bind``/``unbind``
    then keep them in step. ``workload``: FGD's target workload, None for none."""
    devices = DeviceState.build(state, workload)
    state.devices = devices
    return devices

"""Loader for the ByteDance microservice cluster M3 (``bytedance/research-cluster-dataset``).

M3.json normalises every CPU and memory value so the whole cluster is 1.0 in each dimension.
We scale it to a concrete cluster: the most common machine shape (39 of 96 machines) becomes
**96 cores / 384 GiB**, a common two-socket server, and every other value is scaled by the same two
factors (CPU to millicores, memory to MiB, rounded to the nearest integer). The cluster then has
about 8,470 cores. The production assignment (``InitialDeployingContainers``) is kept.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analyzer import __version__
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.core.snapshot_schema import empty_table
from analyzer.core.structured import load_json

DEFAULT_M3 = Path(__file__).resolve().parent.parent / "_traces" / "bytedance-m3" / "M3.json"
REFERENCE_CPU_MILLI = 96_000  # the most common machine shape is scaled to 96 cores ...
REFERENCE_MEMORY_MIB = 384 * 1024  # ... and 384 GiB
MIB = 1024 * 1024


@dataclass(frozen=True)
class M3Cluster:
    """Machines, containers (one row per container) and the production placement."""

    machines: list[str]
    machine_cpu: NDArray[np.int64]  # millicores
    machine_memory: NDArray[np.int64]  # MiB
    containers: list[str]
    service: list[str]
    container_cpu: NDArray[np.int64]
    container_memory: NDArray[np.int64]
    production: NDArray[np.int64]  # machine index per container, -1 = not placed
    cpu_scale: float  # millicores per normalised unit
    memory_scale: float  # MiB per normalised unit


def _field(entry: dict[str, Any], key: str, where: str) -> Any:
    if key not in entry:
        raise InputError(f"{where}: missing field {key}")
    return entry[key]


def load_m3(path: Path | None = None) -> M3Cluster:
    """Read M3.json and scale it (see the module docstring)."""
    path = Path(path or DEFAULT_M3)
    try:  # core.structured: nesting bounded, bad UTF-8 and syntax errors on one line
        data = load_json(path)
    except InputError as exc:
        raise InputError(f"{exc}; pass M3.json from bytedance/research-cluster-dataset") from None
    machines = _field(data, "MachineList", str(path))
    services = _field(data, "ServiceList", str(path))
    raw_cpu = [float(_field(m, "TotalCPU", f"{path}: MachineList")) for m in machines]
    raw_mem = [float(_field(m, "TotalMem", f"{path}: MachineList")) for m in machines]
    if not machines or min(raw_cpu) <= 0 or min(raw_mem) <= 0:
        raise InputError(f"{path}: MachineList must hold machines with TotalCPU and TotalMem > 0")
    # The most common (cpu, mem) shape, compared at 6 significant digits.
    keys = [(f"{c:.6g}", f"{m:.6g}") for c, m in zip(raw_cpu, raw_mem, strict=True)]
    first = keys.index(Counter(keys).most_common(1)[0][0])
    cpu_scale = REFERENCE_CPU_MILLI / raw_cpu[first]
    mem_scale = REFERENCE_MEMORY_MIB / raw_mem[first]
    names, service, cpu, mem = [], [], [], []
    for s in services:
        where = f"{path}: service {s.get('Service', '?')}"
        for container in _field(s, "ContainerList", where):
            names.append(str(container))
            service.append(str(s["Service"]))
            cpu.append(round(float(_field(s, "RequestCPU", where)) * cpu_scale))
            mem.append(round(float(_field(s, "RequestMem", where)) * mem_scale))
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        raise InputError(f"{path}: container names repeat across services")
    production = np.full(len(names), -1, dtype=np.int64)
    for m, machine in enumerate(machines):
        for container in machine.get("InitialDeployingContainers", []):
            if container not in index:
                raise InputError(
                    f"{path}: machine {machine['MachineIP']} lists unknown container {container}"
                )
            production[index[container]] = m
    return M3Cluster(
        machines=[str(_field(m, "MachineIP", f"{path}: MachineList")) for m in machines],
        machine_cpu=np.rint(np.array(raw_cpu) * cpu_scale).astype(np.int64),
        machine_memory=np.rint(np.array(raw_mem) * mem_scale).astype(np.int64),
        containers=names,
        service=service,
        container_cpu=np.array(cpu, dtype=np.int64),
        container_memory=np.array(mem, dtype=np.int64),
        production=production,
        cpu_scale=cpu_scale,
        memory_scale=mem_scale,
    )


def m3_snapshot(cluster: M3Cluster) -> Snapshot:
    """M3 as a snapshot: machines as nodes, containers as pods bound to their production machine."""
    nodes = pd.DataFrame({"node": cluster.machines, "pool": "m3"})
    for kind in ("allocatable", "capacity"):
        nodes[f"{kind}:cpu"] = cluster.machine_cpu
        nodes[f"{kind}:memory"] = cluster.machine_memory * MIB
    node_of = [cluster.machines[m] if m >= 0 else None for m in cluster.production]
    pods = pd.DataFrame(
        {
            "uid": cluster.containers,
            "namespace": "m3",
            "name": cluster.containers,
            "node": node_of,
            "workload_kind": "Service",
            "workload_name": cluster.service,
            "phase": "Running",
        }
    )
    for kind in ("requests", "limits"):
        pods[f"{kind}:cpu"] = cluster.container_cpu
        pods[f"{kind}:memory"] = cluster.container_memory * MIB
    pods["nonzero_requests:cpu"] = np.where(cluster.container_cpu > 0, cluster.container_cpu, 100)
    pods["nonzero_requests:memory"] = np.where(
        cluster.container_memory > 0, cluster.container_memory * MIB, 200 * MIB
    )
    now = pd.Timestamp.now(tz="UTC").isoformat()
    meta = SnapshotMeta(
        source="trace:bytedance-m3",
        start=now,
        end=now,
        step_seconds=0,
        collected_at=now,
        analyzer_version=__version__,
        extra={
            "cpu_milli_per_unit": cluster.cpu_scale,
            "memory_mib_per_unit": cluster.memory_scale,
        },
    )
    return make_snapshot(meta, nodes, pods, empty_table("node_usage"), empty_table("pod_usage"))

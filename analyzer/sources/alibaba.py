"""Loader for the Alibaba GPU cluster trace v2023 ("openb"): node and pod CSVs → arrays, snapshot.

Schema (``analyzer/_traces/alibaba-gpu-v2023/README.md``): node lists ``sn, cpu_milli, memory_mib,
gpu, model``; pod lists ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
pod_phase, creation_time, deletion_time, scheduled_time`` — the ``multigpu*`` lists have only the
first five columns. ``gpu_milli`` is per requested GPU; ``gpu_spec`` lists allowed models with
``|`` (empty = any model). Times are seconds from the start of the trace.

In a snapshot the GPUs appear as the extended resource ``nvidia.com/gpu`` (whole GPUs: a node's
GPU count, a pod's ``num_gpu``), plus ``alibaba.com/gpu-milli`` (node: GPUs × 1000; pod:
``num_gpu × gpu_milli``, so per-GPU milli = total / num_gpu). The node's GPU model is the label
``alibaba.com/gpu-model``; a pod's allowed models are the label ``alibaba.com/gpu-spec``. Trace
second 0 is mapped to ``TRACE_EPOCH``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analyzer import __version__
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.core.snapshot_schema import empty_table
from analyzer.scheduling.gpu.model import MILLI, GpuDemand, GpuNodes

TRACES_DIR = Path(__file__).resolve().parent.parent / "_traces" / "alibaba-gpu-v2023"
DEFAULT_NODES = TRACES_DIR / "openb_node_list_gpu_node.csv"
ALL_NODES = TRACES_DIR / "openb_node_list_all_node.csv"
DEFAULT_PODS = TRACES_DIR / "openb_pod_list_default.csv"
TRACE_EPOCH = pd.Timestamp("2023-01-01T00:00:00Z")
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MILLI_RESOURCE = "alibaba.com/gpu-milli"
GPU_MODEL_LABEL = "alibaba.com/gpu-model"
GPU_SPEC_LABEL = "alibaba.com/gpu-spec"
MIB = 1024 * 1024

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS_SHORT = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")


@dataclass(frozen=True)
class OpenbNodes:
    """A node list: one entry per node (memory in MiB, model "" for CPU-only nodes)."""

    names: list[str]
    cpu_milli: NDArray[np.int64]
    memory_mib: NDArray[np.int64]
    gpus: NDArray[np.int64]
    models: list[str]

    def gpu_nodes(self) -> GpuNodes:
        """Empty device-model state for these nodes (memory in MiB)."""
        return GpuNodes.create(self.names, self.cpu_milli, self.memory_mib, self.gpus, self.models)


@dataclass(frozen=True)
class OpenbPods:
    """A pod list. Times are seconds (NaN when absent); ``has_times`` is False for multigpu lists."""

    names: list[str]
    cpu_milli: NDArray[np.int64]
    memory_mib: NDArray[np.int64]
    num_gpu: NDArray[np.int64]
    gpu_milli: NDArray[np.int64]
    specs: list[frozenset[str] | None]
    qos: list[str]
    phase: list[str]
    creation: NDArray[np.float64]
    deletion: NDArray[np.float64]
    scheduled: NDArray[np.float64]
    has_times: bool

    def __len__(self) -> int:
        return len(self.names)

    def demand(self, i: int) -> GpuDemand:
        """Pod ``i`` as a device-model demand (memory in MiB)."""
        return GpuDemand(
            cpu=int(self.cpu_milli[i]),
            memory=int(self.memory_mib[i]),
            num_gpu=int(self.num_gpu[i]),
            gpu_milli=int(self.gpu_milli[i]),
            models=self.specs[i],
        )

    def total_gpu_milli(self) -> NDArray[np.int64]:
        """Per pod, num_gpu × gpu_milli."""
        return self.num_gpu * self.gpu_milli


def _read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file; pass an openb CSV from cluster-trace-gpu-v2023")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: not a readable CSV ({exc})") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(required)}"
        )
    return frame


def _ints(frame: pd.DataFrame, column: str, path: Path) -> NDArray[np.int64]:
    values = pd.to_numeric(frame[column].replace("", "0"), errors="coerce")
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise InputError(f"{path}: column {column} row {row + 2} is not an integer")
    if (values < 0).any():
        raise InputError(f"{path}: column {column} has negative values")
    out: NDArray[np.int64] = values.to_numpy(dtype=np.int64)
    return out


def load_nodes(path: Path = DEFAULT_NODES) -> OpenbNodes:
    """Read an openb node list (``openb_node_list_*.csv``)."""
    frame = _read_csv(path, NODE_COLUMNS)
    names = frame["sn"].tolist()
    if len(set(names)) != len(names):
        raise InputError(f"{path}: duplicate node names in column sn")
    gpus = _ints(frame, "gpu", Path(path))
    models = frame["model"].str.strip().tolist()
    if any(g > 0 and not m for g, m in zip(gpus, models, strict=True)):
        raise InputError(f"{path}: a node with GPUs has an empty model column")
    return OpenbNodes(
        names=names,
        cpu_milli=_ints(frame, "cpu_milli", Path(path)),
        memory_mib=_ints(frame, "memory_mib", Path(path)),
        gpus=gpus,
        models=models,
    )


def _times(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    out: NDArray[np.float64] = pd.to_numeric(
        frame[column].replace("", np.nan), errors="coerce"
    ).to_numpy(dtype=float)
    return out


def load_pods(path: Path = DEFAULT_PODS) -> OpenbPods:
    """Read an openb pod list (any of the 26 variants, incl. the five-column multigpu lists)."""
    path = Path(path)
    frame = _read_csv(path, POD_COLUMNS_SHORT)
    num_gpu = _ints(frame, "num_gpu", path)
    gpu_milli = _ints(frame, "gpu_milli", path)
    bad = ((num_gpu == 0) & (gpu_milli != 0)) | (
        (num_gpu > 0) & ((gpu_milli == 0) | (gpu_milli > MILLI))
    )
    if bad.any():
        row = int(np.flatnonzero(bad)[0]) + 2
        raise InputError(f"{path}: row {row}: gpu_milli must be 1..1000 when num_gpu > 0, else 0")
    spec_col = frame["gpu_spec"] if "gpu_spec" in frame.columns else pd.Series([""] * len(frame))
    specs = [frozenset(s.split("|")) if s.strip() else None for s in spec_col.str.strip()]
    empty = [""] * len(frame)
    return OpenbPods(
        names=frame["name"].tolist(),
        cpu_milli=_ints(frame, "cpu_milli", path),
        memory_mib=_ints(frame, "memory_mib", path),
        num_gpu=num_gpu,
        gpu_milli=gpu_milli,
        specs=specs,
        qos=frame["qos"].tolist() if "qos" in frame.columns else empty,
        phase=frame["pod_phase"].tolist() if "pod_phase" in frame.columns else empty,
        creation=_times(frame, "creation_time"),
        deletion=_times(frame, "deletion_time"),
        scheduled=_times(frame, "scheduled_time"),
        has_times="creation_time" in frame.columns,
    )


def _stamp(seconds: NDArray[np.float64]) -> pd.Series:
    return TRACE_EPOCH + pd.to_timedelta(pd.Series(seconds), unit="s")


def openb_snapshot(
    nodes: OpenbNodes, pods: OpenbPods, source: str = "trace:alibaba-gpu-v2023"
) -> Snapshot:
    """The trace as a snapshot (no usage tables; pods unbound: the trace has no node column)."""
    gpu_milli_total = pods.total_gpu_milli()
    node_frame = pd.DataFrame(
        {
            "node": nodes.names,
            "pool": [m or "cpu" for m in nodes.models],
            "labels": [json.dumps({GPU_MODEL_LABEL: m} if m else {}) for m in nodes.models],
        }
    )
    for kind in ("allocatable", "capacity"):
        node_frame[f"{kind}:cpu"] = nodes.cpu_milli
        node_frame[f"{kind}:memory"] = nodes.memory_mib * MIB
        node_frame[f"{kind}:{GPU_RESOURCE}"] = nodes.gpus
        node_frame[f"{kind}:{GPU_MILLI_RESOURCE}"] = nodes.gpus * MILLI
    # The trace gives one request per pod; a request of 0 gets kube-scheduler's non-zero default.
    pod_frame = pd.DataFrame(
        {
            "uid": pods.names,
            "namespace": "openb",
            "name": pods.names,
            "qos_class": pods.qos,
            "phase": pods.phase,
            "labels": [
                json.dumps({GPU_SPEC_LABEL: "|".join(sorted(s))} if s else {}) for s in pods.specs
            ],
            "created": _stamp(pods.creation),
            "scheduled": _stamp(pods.scheduled),
            "finished": _stamp(pods.deletion),
        }
    )
    for kind in ("requests", "limits"):
        pod_frame[f"{kind}:cpu"] = pods.cpu_milli
        pod_frame[f"{kind}:memory"] = pods.memory_mib * MIB
        pod_frame[f"{kind}:{GPU_RESOURCE}"] = pods.num_gpu
        pod_frame[f"{kind}:{GPU_MILLI_RESOURCE}"] = gpu_milli_total
    pod_frame["nonzero_requests:cpu"] = np.where(pods.cpu_milli > 0, pods.cpu_milli, 100)
    pod_frame["nonzero_requests:memory"] = np.where(
        pods.memory_mib > 0, pods.memory_mib * MIB, 200 * MIB
    )
    start = TRACE_EPOCH.isoformat()
    finite = pods.deletion[np.isfinite(pods.deletion)]
    end = _stamp(np.array([finite.max() if len(finite) else 0.0])).iloc[0].isoformat()
    meta = SnapshotMeta(
        source=source,
        start=start,
        end=end,
        step_seconds=0,
        collected_at=pd.Timestamp.now(tz="UTC").isoformat(),
        analyzer_version=__version__,
        extra={"gpu_milli_resource": GPU_MILLI_RESOURCE, "gpu_model_label": GPU_MODEL_LABEL},
    )
    return make_snapshot(
        meta, node_frame, pod_frame, empty_table("node_usage"), empty_table("pod_usage")
    )

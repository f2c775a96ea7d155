"""Policies × seeds for the openb trace on ``--executor``, and the JSON result.

``run_trace(TraceConfig)`` loads the node and pod lists, builds the target workload from the
original pod list, replays every (policy, seed) pair — in a local process pool when
``workers > 1`` (each worker receives the loaded trace once), or on a Dask cluster whose workers
load it themselves (``analyzer.core.executor``) — and
averages the curves the way the paper does (``analyzer.trace.curve``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.executor import ExecutorSpec, Shared, open_session
from analyzer.fragmentation.gpu import Fragmentation, cluster_fragmentation
from analyzer.scheduling.gpu.fragments import TargetWorkload, target_workload
from analyzer.sources.alibaba import (
    ALL_NODES,
    DEFAULT_NODES,
    DEFAULT_PODS,
    OpenbNodes,
    OpenbPods,
    load_nodes,
    load_pods,
)
from analyzer.trace.curve import CurvePoint, RunCurve, average_curves, run_curve
from analyzer.trace.protocol import TIE_BREAKS, RunRows, RunSpec, run_fgd, run_timeline
from analyzer.trace.registry import canonical_name

PROTOCOLS = ("fgd", "timeline")
TABLE_POINTS = (100, 110, 130)


@dataclass(frozen=True)
class TraceConfig:
    """What to replay: protocol, policies, seeds, tune ratio, input files, pool size."""

    protocol: str = "fgd"
    policies: tuple[str, ...] = ("BestFit", "FGD")
    seeds: tuple[int, ...] = (42,)
    tune: float = 1.3
    tie_break: str = "artifact"  # "artifact" (lowest seeded node rank) or "random"
    nodes_path: Path | None = None  # default: GPU nodes (fgd) or all nodes (timeline)
    pods_path: Path | None = None
    workers: int = 2
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # ``--executor``


@dataclass(frozen=True)
class TraceInputs:
    """The loaded trace and its target workload."""

    nodes: OpenbNodes
    pods: OpenbPods
    workload: TargetWorkload
    nodes_path: Path
    pods_path: Path


@dataclass(frozen=True)
class SeedResult:
    """Summary of one (policy, seed) replay plus its averaged curve."""

    policy: str
    seed: int
    pods: int
    failed: int
    first_failure_arrived_pct: float | None
    final_alloc_pct: float
    peak_alloc_pct: float
    pending_max: int
    mean_wait_seconds: float
    seconds: float
    curve: RunCurve = field(repr=False)


@dataclass
class PolicyResult:
    """All seeds of one policy, and the mean ± std curve."""

    name: str
    runs: list[SeedResult]
    curve: list[CurvePoint]

    @property
    def first_failure_arrived_pct(self) -> float | None:
        """Mean over seeds of the arrived % at the first failed pod (None if none failed)."""
        values = [
            r.first_failure_arrived_pct
            for r in self.runs
            if r.first_failure_arrived_pct is not None
        ]
        return float(np.mean(values)) if values else None


@dataclass
class TraceResult:
    """Everything one ``analyzer trace alibaba-gpu`` run reports."""

    config: TraceConfig
    inputs: TraceInputs
    empty: Fragmentation
    policies: dict[str, PolicyResult]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (``--format json``)."""
        wl = self.inputs.workload
        out: dict[str, Any] = {
            "protocol": self.config.protocol,
            "tune": self.config.tune,
            "tie_break": self.config.tie_break,
            "trace": {
                "nodes_file": self.inputs.nodes_path.name,
                "pods_file": self.inputs.pods_path.name,
                "nodes": len(self.inputs.nodes.names),
                "gpus": int(self.inputs.nodes.gpus.sum()),
                "pods": len(self.inputs.pods),
            },
            "target_workload": {
                "shapes": len(wl.weights),
                "distinct_shapes": wl.distinct_shapes,
                "coverage_pct": round(100 * wl.coverage, 2),
            },
            "empty_cluster": {
                "frag_ratio_pct": round(self.empty.ratio_pct, 4),
                "frag_amount_gpus": round(self.empty.amount_milli / 1000, 2),
            },
            "averaging": "per run: mean of rows whose arrived % rounds (half up) to x, else rows within ±1; over seeds: mean and population std",
            "seconds": round(self.seconds, 2),
            "policies": {},
        }
        for name, result in self.policies.items():
            by_x = {p.arrived_pct: p for p in result.curve}
            out["policies"][name] = {
                "seeds": [r.seed for r in result.runs],
                "curve": [
                    {
                        "arrived_pct": p.arrived_pct,
                        "alloc_pct_mean": round(p.alloc_pct_mean, 4),
                        "alloc_pct_std": round(p.alloc_pct_std, 4),
                        "frag_ratio_mean": round(p.frag_ratio_mean, 4),
                        "frag_amount_mean": round(p.frag_amount_mean, 4),
                    }
                    for p in result.curve
                ],
                "first_failure_arrived_pct": _round(result.first_failure_arrived_pct),
                "table": {
                    str(x): {
                        "alloc_pct_mean": round(by_x[x].alloc_pct_mean, 2),
                        "alloc_pct_std": round(by_x[x].alloc_pct_std, 2),
                        "frag_ratio_mean": round(by_x[x].frag_ratio_mean, 2),
                    }
                    for x in TABLE_POINTS
                    if x in by_x
                },
                "per_seed": [
                    {
                        k: _round(v) if isinstance(v, float) else v
                        for k, v in asdict(r).items()
                        if k not in ("curve", "policy")
                    }
                    for r in result.runs
                ],
            }
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def load_inputs(config: TraceConfig) -> TraceInputs:
    """Load the node and pod lists and build the target workload from the original pods."""
    if config.protocol not in PROTOCOLS:
        raise InputError(f"--protocol {config.protocol!r}: choose from {', '.join(PROTOCOLS)}")
    default_nodes = DEFAULT_NODES if config.protocol == "fgd" else ALL_NODES
    nodes_path = Path(config.nodes_path or default_nodes)
    pods_path = Path(config.pods_path or DEFAULT_PODS)
    nodes, pods = load_nodes(nodes_path), load_pods(pods_path)
    if config.protocol == "timeline" and not pods.has_times:  # fail before any replay
        raise InputError(
            f"{pods_path.name}: no creation/deletion times (multigpu lists); use --protocol fgd"
        )
    workload = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    return TraceInputs(nodes, pods, workload, nodes_path, pods_path)


def replay(inputs: TraceInputs, spec: RunSpec) -> RunRows:
    """One replay under ``spec.protocol``."""
    runner = run_fgd if spec.protocol == "fgd" else run_timeline
    return runner(inputs.nodes, inputs.pods, inputs.workload, spec)


def summarise(inputs: TraceInputs, spec: RunSpec) -> SeedResult:
    """Replay and reduce to the per-seed summary and curve (what crosses the process boundary)."""
    start = time.perf_counter()
    rows = replay(inputs, spec)
    seconds = time.perf_counter() - start
    curve = run_curve(
        rows.arrived_pct,
        {
            "alloc_pct": rows.alloc_pct,
            "frag_ratio_pct": rows.frag_ratio_pct,
            "frag_amount_pct": rows.frag_amount_pct,
        },
    )
    return SeedResult(
        policy=spec.policy,
        seed=spec.seed,
        pods=rows.pods,
        failed=rows.failed,
        first_failure_arrived_pct=rows.first_failure_arrived_pct,
        final_alloc_pct=float(rows.alloc_pct[-1]) if len(rows.alloc_pct) else 0.0,
        peak_alloc_pct=float(rows.alloc_pct.max()) if len(rows.alloc_pct) else 0.0,
        pending_max=rows.pending_max,
        mean_wait_seconds=rows.mean_wait_seconds,
        seconds=seconds,
        curve=curve,
    )


def run_specs(
    inputs: TraceInputs,
    specs: list[RunSpec],
    workers: int,
    config: TraceConfig | None = None,
) -> list[SeedResult]:
    """Run the replays on ``config.executor`` (``analyzer.core.executor``): inline for one
    worker, else a local pool of ``workers`` processes, or a Dask cluster whose workers load
    the trace themselves from ``config`` (its files are bundled or on shared storage)."""
    config = config or TraceConfig(workers=workers)
    if config.executor.is_dask:  # absolute paths: a worker's working directory is its own
        config = replace(
            config,
            nodes_path=config.nodes_path and Path(config.nodes_path).resolve(),
            pods_path=config.pods_path and Path(config.pods_path).resolve(),
        )
        shared: Shared[TraceInputs] = Shared(f"trace:{config}", partial(load_inputs, config))
    else:
        shared = Shared("trace:memory", value=inputs)
    workers = min(workers, len(specs))
    # spawn: no fork of a possibly threaded parent
    with open_session(config.executor, workers, shared, spawn=True) as session:
        return session.map(summarise, [(spec,) for spec in specs])


def run_trace(config: TraceConfig, inputs: TraceInputs | None = None) -> TraceResult:
    """Replay every policy × seed and average the curves."""
    start = time.perf_counter()
    inputs = inputs or load_inputs(config)
    names = [canonical_name(p) for p in config.policies]
    if not config.seeds:
        raise InputError("--seeds: give at least one seed, e.g. 42-51")
    if config.tie_break not in TIE_BREAKS:
        raise InputError(f"tie break {config.tie_break!r}: use one of {', '.join(TIE_BREAKS)}")
    specs = [
        RunSpec(
            policy=name,
            seed=seed,
            tune=config.tune,
            protocol=config.protocol,
            tie_break=config.tie_break,
        )
        for name in names
        for seed in config.seeds
    ]
    results = run_specs(inputs, specs, config.workers, config)
    policies = {}
    for name in names:
        runs = [r for r in results if r.policy == name]
        policies[name] = PolicyResult(name, runs, average_curves([r.curve for r in runs]))
    empty = cluster_fragmentation(inputs.nodes.gpu_nodes(), inputs.workload)
    return TraceResult(config, inputs, empty, policies, time.perf_counter() - start)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``42-51`` or ``1,2,7`` or ``42`` → seeds; ``InputError`` naming ``--seeds`` otherwise."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                low, high = part.split("-", 1)
                if int(high) < int(low):
                    raise ValueError(part)
                seeds.extend(range(int(low), int(high) + 1))
            elif part:
                seeds.append(int(part))
    except ValueError:
        raise InputError(f"--seeds {text!r}: use a range like 42-51 or a list like 1,2,3") from None
    if not seeds:
        raise InputError(f"--seeds {text!r}: no seeds; use a range like 42-51")
    return tuple(dict.fromkeys(seeds))

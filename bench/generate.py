"""Benchmark the synthetic cluster generator and its OpenMetrics writer.

1. ``generate()`` at ``--nodes`` × ``--days`` × ``--step`` (default 200 × 7 d × 5 min): wall and
   CPU seconds, rows produced, peak RSS of the process.
2. ``write_openmetrics()`` of a smaller cluster (``--om-nodes`` × ``--om-days`` at ``--om-step``)
   to a temporary file: samples/s and bytes/s, deleted afterwards.
3. Baseline in the same run: the node-exporter counter series of that cluster written the
   straightforward way (one f-string and one ``write`` per sample) vs ``SeriesWriter.counter``
   (whole series joined at once), asserting both produce the same bytes.

Prints a JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from analyzer.sources import SyntheticCluster, SyntheticSpec, generate, write_openmetrics
from analyzer.sources.omtext import SeriesWriter, series_head

T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _counters(cluster: SyntheticCluster) -> list[tuple[str, np.ndarray]]:
    """(head, cumulative millicore-seconds) of one busy counter per node and cpu mode."""
    out = []
    for i, node in enumerate(cluster.nodes):
        busy = cluster.usage.node_cpu[i] * cluster.grid.step
        busy[0] = 0
        for mode in ("user", "system", "idle"):
            head = series_head(
                "node_cpu_seconds_total",
                {"cpu": "0", "instance": node.name, "job": "node-exporter", "mode": mode},
            )
            out.append((head, np.cumsum(busy)))
    return out


def _naive(path: Path, series: list[tuple[str, np.ndarray]], times: np.ndarray) -> None:
    with path.open("w") as handle:
        for head, values in series:
            for value, t in zip(values.tolist(), times.tolist(), strict=True):
                handle.write(f"{head} {value / 1000!r} {t}\n")
        handle.write("# EOF\n")


def _joined(path: Path, series: list[tuple[str, np.ndarray]], times: np.ndarray) -> None:
    with path.open("w", buffering=1 << 20) as handle:
        out = SeriesWriter(handle, times)
        for head, values in series:
            out.counter(head, values, 0)
        out.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--step", type=int, default=300)
    parser.add_argument("--om-nodes", type=int, default=50)
    parser.add_argument("--om-days", type=float, default=1.0)
    parser.add_argument("--om-step", type=int, default=60)
    args = parser.parse_args()

    spec = SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=args.step)
    cluster, gen_s, gen_cpu = _timed(lambda: generate(spec))
    snap = cluster.snapshot
    rows = {
        "pods": len(snap.pods),
        "pod_usage": len(snap.pod_usage),
        "node_usage": len(snap.node_usage),
    }
    del cluster, snap

    small = generate(
        SyntheticSpec(seed=1, nodes=args.om_nodes, days=args.om_days, step=args.om_step)
    )
    with tempfile.TemporaryDirectory() as tmp:
        om = Path(tmp) / "cluster.om"
        stats, om_s, om_cpu = _timed(
            lambda: write_openmetrics(small, om, node_exporter_cpus=1, constant_step=300)
        )
        om.unlink()
        series = _counters(small)
        times = small.grid.times
        _, naive_s, _ = _timed(lambda: _naive(Path(tmp) / "naive.om", series, times))
        _, joined_s, _ = _timed(lambda: _joined(Path(tmp) / "joined.om", series, times))
        same = (Path(tmp) / "naive.om").read_bytes() == (Path(tmp) / "joined.om").read_bytes()
    assert same, "baseline and joined writer differ"
    counter_samples = sum(len(v) for _, v in series)
    result = {
        "bench": "generate",
        "generate": {
            "nodes": args.nodes,
            "days": args.days,
            "step_s": args.step,
            "wall_s": round(gen_s, 2),
            "cpu_s": round(gen_cpu, 2),
            **rows,
        },
        "openmetrics": {
            "nodes": args.om_nodes,
            "days": args.om_days,
            "step_s": args.om_step,
            "series": stats.series,
            "samples": stats.samples,
            "bytes": stats.bytes,
            "wall_s": round(om_s, 2),
            "cpu_s": round(om_cpu, 2),
            "samples_per_s": round(stats.samples / om_s),
            "mb_per_s": round(stats.bytes / om_s / 1e6, 1),
        },
        "counter_writer": {
            "samples": counter_samples,
            "joined_s": round(joined_s, 3),
            "baseline_per_sample_s": round(naive_s, 3),
            "ratio": round(naive_s / joined_s, 1),
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

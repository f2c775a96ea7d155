"""Write a large synthetic snapshot straight to disk, day by day (bench only, numpy).

Backfilling Prometheus with 5,000 nodes × 7 days × 1 m is impractical on this machine, and the
generator holds a whole cluster's usage in memory (10.4 GB at 500 × 7 × 1 m, docs/benchmarks.md),
so the memory benchmark's large snapshots come from here instead. SYNTHETIC, not a real collect:

- nodes and pods: the generator's cluster at ``--template-nodes`` (seed 1, 5 min grid) tiled
  ``nodes / template_nodes`` times, each copy's nodes, pod uids and pod names suffixed ``-cN``
  (workloads keep their names: a copy adds replicas), so churn, pools, DaemonSets, requests and
  priorities are the generator's;
- usage: every pod copy has one sample per ``--step`` while it holds its node (``(start, end]``
  clipped to the range), cpu = its cpu request × a per-pod level in [0.05, 0.9) × a lognormal
  per-sample noise, memory = its memory request × a per-pod level in [0.2, 1.0) × (1 ± 2 %);
  a node's usage is the sum of its pods' plus 250 m / 1 GiB of system use;
- the usage tables are written one UTC day at a time (a sample at 00:00 closes the day before),
  each day in row groups of at most ``--chunk-pods`` pods, which is the snapshot's day-partitioned
  layout (docs/snapshot.md "Day partitions"), so no more than one chunk is ever in memory.

Usage: ``python bench/synth_snapshot.py OUT --nodes 5000 --days 7 --step 60`` (prints a JSON line).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import SnapshotMeta
from analyzer.sources import SyntheticSpec, generate

DAY_NS = 86_400 * 10**9


def _tiled(frame: pd.DataFrame, copies: int, suffix_cols: tuple[str, ...]) -> pd.DataFrame:
    """``copies`` copies of ``frame`` with ``-cN`` appended to ``suffix_cols`` (NA stays NA)."""
    parts = []
    for n in range(copies):
        part = frame.copy()
        for col in suffix_cols:
            part[col] = part[col] + f"-c{n}"
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _usage_schema(key: str) -> pa.Schema:
    key_type = pa.dictionary(pa.int32(), pa.string()) if key == "uid" else pa.string()
    return pa.schema(
        [
            (key, key_type),
            ("timestamp", pa.timestamp("ns", tz="UTC")),
            ("cpu", pa.float64()),
            ("memory", pa.float64()),
        ]
    )


def write(out: Path, nodes: int, days: int, step: int, template_nodes: int, chunk: int) -> dict:
    """Write the snapshot to ``out``; return its row counts."""
    spec = SyntheticSpec(nodes=template_nodes, days=days, step=300, seed=1)
    snap = generate(spec).snapshot
    copies = max(1, nodes // template_nodes)
    node_tab = _tiled(snap.nodes, copies, ("node",))
    pod_tab = _tiled(snap.pods, copies, ("uid", "name", "node"))
    out.mkdir(parents=True, exist_ok=False)
    node_tab.to_parquet(out / "nodes.parquet", index=False)
    pod_tab.to_parquet(out / "pods.parquet", index=False)

    iv = pod_intervals(snap)
    base_pods = snap.pods.set_index("uid")
    start_ns = snap.start.value
    end_ns = snap.end.value
    step_ns = step * 10**9
    rng = np.random.default_rng(7)
    # per bound pod copy: node index, interval in ns, request and level
    node_index = pd.Index(node_tab["node"].astype(str))
    rows = []
    for n in range(copies):
        rows.append(
            pd.DataFrame(
                {
                    "uid": iv["uid"].astype(str) + f"-c{n}",
                    "node": node_index.get_indexer(iv["node"].astype(str) + f"-c{n}"),
                    "s": iv["start"].array.as_unit("ns").asi8,
                    "e": np.minimum(iv["end"].array.as_unit("ns").asi8, end_ns),
                    "req_cpu": base_pods.loc[iv["uid"], "requests:cpu"].to_numpy(),
                    "req_mem": base_pods.loc[iv["uid"], "requests:memory"].to_numpy(),
                }
            )
        )
    bound = pd.concat(rows, ignore_index=True)
    uids = pd.Index(bound["uid"])
    cpu_level = rng.uniform(0.05, 0.9, len(bound)) * np.maximum(bound["req_cpu"], 50)
    mem_level = rng.uniform(0.2, 1.0, len(bound)) * np.maximum(bound["req_mem"], 64 << 20)
    pod_writer = pq.ParquetWriter(out / "pod_usage.parquet", _usage_schema("uid"))
    node_writer = pq.ParquetWriter(out / "node_usage.parquet", _usage_schema("node"))
    per_day = 86_400 // step
    n_pod_rows = n_node_rows = 0
    names = pa.array(node_index.to_numpy(dtype=object), pa.string())
    uid_dictionary = pa.array(uids.to_numpy(dtype=object), pa.string())
    for d in range(days):
        day0 = start_ns + d * DAY_NS
        grid = day0 + step_ns * np.arange(1, per_day + 1, dtype=np.int64)  # (day0, day0 + 1 d]
        node_cpu = np.zeros(len(node_index) * per_day)
        node_mem = np.zeros(len(node_index) * per_day)
        for lo in range(0, len(bound), chunk):
            part = bound.iloc[lo : lo + chunk]
            # first / one-past-last grid index of (s, e] inside this day
            first = np.clip((part["s"].to_numpy() - day0) // step_ns, 0, per_day)
            last = np.clip((part["e"].to_numpy() - day0) // step_ns, 0, per_day)
            count = np.maximum(last - first, 0)
            total = int(count.sum())
            if total == 0:
                continue
            which = np.repeat(np.arange(len(part)), count)
            offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            col = np.repeat(first, count) + offset
            glob = which + lo
            cpu = cpu_level[glob] * rng.lognormal(0.0, 0.3, total)
            mem = mem_level[glob] * rng.uniform(0.98, 1.02, total)
            key = part["node"].to_numpy()[which] * per_day + col
            node_cpu += np.bincount(key, cpu, minlength=len(node_cpu))
            node_mem += np.bincount(key, mem, minlength=len(node_mem))
            codes = pa.array(glob.astype(np.int32))
            table = pa.table(
                {
                    "uid": pa.DictionaryArray.from_arrays(codes, uid_dictionary),
                    "timestamp": pa.array(grid[col], pa.timestamp("ns", tz="UTC")),
                    "cpu": cpu,
                    "memory": mem,
                },
                schema=_usage_schema("uid"),
            )
            pod_writer.write_table(table)
            n_pod_rows += total
        n_node = len(node_index)
        node_writer.write_table(
            pa.table(
                {
                    "node": names.take(pa.array(np.repeat(np.arange(n_node), per_day))),
                    "timestamp": pa.array(np.tile(grid, n_node), pa.timestamp("ns", tz="UTC")),
                    "cpu": node_cpu + 250.0,
                    "memory": node_mem + float(1 << 30),
                },
                schema=_usage_schema("node"),
            )
        )
        n_node_rows += n_node * per_day
    pod_writer.close()
    node_writer.close()
    meta = SnapshotMeta(
        source=f"synthetic:bench/synth_snapshot.py nodes={nodes} days={days} step={step}",
        start=snap.meta.start,
        end=snap.meta.end,
        step_seconds=step,
        collected_at=pd.Timestamp.now(tz="UTC").isoformat(),
        analyzer_version="bench",
        extra={"usage_layout": "day-row-groups"},
    )
    (out / "meta.json").write_text(json.dumps(asdict(meta), indent=2, sort_keys=True) + "\n")
    return {
        "nodes": len(node_tab),
        "pods": len(pod_tab),
        "pod_usage_rows": n_pod_rows,
        "node_usage_rows": n_node_rows,
    }


def main() -> None:
    """Parse the flags, write the snapshot, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--template-nodes", type=int, default=50)
    parser.add_argument("--chunk-pods", type=int, default=8000)
    args = parser.parse_args()
    wall = time.perf_counter()
    counts = write(args.out, args.nodes, args.days, args.step, args.template_nodes, args.chunk_pods)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    wall_s = round(time.perf_counter() - wall, 1)
    print(json.dumps({"bench": "synth_snapshot", **counts, "wall_s": wall_s, "peak_rss_mb": peak}))


if __name__ == "__main__":
    main()

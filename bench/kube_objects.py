"""Benchmark: what ``collect --kube-objects`` adds, against reading the same snapshot.

A synthetic cluster (``--nodes`` default 500, ``--days`` 1, 5-minute step, zones and pod
constraints on) and its Kubernetes objects (``analyzer generate --kube-objects``). Measured in the
same run:

- *baseline*: ``read_snapshot`` of the cluster's snapshot (written once to a temporary folder),
  what every command over a snapshot pays first;
- *read objects*: ``read_kube_objects`` of the objects file (parse, check every template);
- *enrich*: ``enrich_snapshot`` — every pod matched through its owner chain, its fields and
  sources filled, nodes given their labels and taints, the snapshot rebuilt.

    PYTHONPATH=$PWD .venv/bin/python bench/kube_objects.py [--nodes 500] [--days 1]

Prints a human line and a final JSON line with every figure (seconds), the ratios to the
baseline and this process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from analyzer.collect.enrich import enrich_snapshot
from analyzer.collect.kube_objects import read_kube_objects
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.kube_objects import kube_objects


def _best(fn: object, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = SyntheticSpec(
        seed=1, nodes=args.nodes, days=args.days, step=300, zones=3, pod_constraints=True
    )
    cluster = generate(spec)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "snap"
        write_snapshot(cluster.snapshot, folder)
        listing = kube_objects(cluster)
        path = Path(tmp) / "objects.json"
        path.write_text(json.dumps(listing))
        size = path.stat().st_size
        baseline, snapshot = _best(lambda: read_snapshot(folder), args.repeat)
        read_s, objects = _best(lambda: read_kube_objects(path), args.repeat)
        enrich_s, _ = _best(lambda: enrich_snapshot(snapshot, objects), args.repeat)  # type: ignore[arg-type]
    pods = len(cluster.snapshot.pods)
    result = {
        "bench": "kube_objects",
        "nodes": args.nodes,
        "days": args.days,
        "pods": pods,
        "pod_usage_rows": len(cluster.snapshot.pod_usage),
        "objects": len(listing["items"]),
        "objects_bytes": size,
        "baseline_read_snapshot_s": round(baseline, 3),
        "read_objects_s": round(read_s, 3),
        "enrich_s": round(enrich_s, 3),
        "ratio_read_objects_to_baseline": round(read_s / baseline, 3),
        "ratio_enrich_to_baseline": round(enrich_s / baseline, 3),
        "pods_per_s_enrich": round(pods / enrich_s),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(
        f"{pods:,} pods, {len(listing['items']):,} objects: read snapshot {baseline:.2f} s, "
        f"read objects {read_s:.2f} s, enrich {enrich_s:.2f} s "
        f"({enrich_s / baseline:.2f}x the read)"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()

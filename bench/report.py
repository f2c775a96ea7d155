"""Benchmark: the nightly report of a 5,000-node cluster (target: renders in < 10 s, HTML < 5 MB).

Generates one synthetic day (``analyzer.sources``) — or reuses ``--snapshot`` — then times, for
the full cluster and for a baseline subset of it measured in the same run (default 500 nodes):

- ``analysis_s``: ``run_nightly`` (aggregates, violations, fragmentation, usage tables);
- ``render_s``: ``write_nightly_report`` (charts, HTML, JSON, CSVs, history, index);
- the same two as CPU seconds of the process (``*_cpu_s``), which stay meaningful when other
  jobs share the machine's cores;
- the sizes of ``report.html`` and ``report.json``.

Prints a human summary and, last, one JSON line with every figure. Usage::

    .venv/bin/python bench/report.py [--nodes 5000] [--baseline-nodes 500] [--snapshot DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import generate

HTML_LIMIT = 5 * 1024 * 1024
RENDER_LIMIT_S = 10.0


def subset(snapshot: Snapshot, count: int) -> Snapshot:
    """The first ``count`` nodes with their pods and usage (a smaller cluster of the same kind)."""
    names = set(snapshot.nodes["node"].head(count))
    pods = snapshot.pods[snapshot.pods["node"].isin(names)]
    uids = set(pods["uid"])
    return Snapshot(
        meta=snapshot.meta,
        nodes=snapshot.nodes[snapshot.nodes["node"].isin(names)].reset_index(drop=True),
        pods=pods.reset_index(drop=True),
        node_usage=snapshot.node_usage[snapshot.node_usage["node"].isin(names)].reset_index(
            drop=True
        ),
        pod_usage=snapshot.pod_usage[snapshot.pod_usage["uid"].isin(uids)].reset_index(drop=True),
    )


def measure(snapshot: Snapshot, out: Path) -> dict[str, Any]:
    """Time the analysis and the render of one nightly report."""
    began, cpu_began = time.perf_counter(), time.process_time()
    result = run_nightly(snapshot, NightlySettings())
    analysed, cpu_analysed = time.perf_counter(), time.process_time()
    paths = write_nightly_report(result, out)
    rendered, cpu_rendered = time.perf_counter(), time.process_time()
    return {
        "nodes": len(snapshot.nodes),
        "pods": len(snapshot.pods),
        "usage_rows": len(snapshot.node_usage) + len(snapshot.pod_usage),
        "analysis_s": round(analysed - began, 3),
        "render_s": round(rendered - analysed, 3),
        "total_s": round(rendered - began, 3),
        # CPU seconds of this process: robust when other jobs share the cores.
        "analysis_cpu_s": round(cpu_analysed - cpu_began, 3),
        "render_cpu_s": round(cpu_rendered - cpu_analysed, 3),
        "html_bytes": paths.html_bytes,
        "json_bytes": paths.json.stat().st_size,
        "breaches": result.summary.breaches,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--baseline-nodes", type=int, default=500)
    parser.add_argument("--step", type=int, default=300, help="usage step in seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot", type=Path, help="reuse this snapshot instead of generating")
    parser.add_argument("--keep", type=Path, help="write the generated snapshot here for reuse")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        began = time.perf_counter()
        if args.snapshot:
            snapshot = read_snapshot(args.snapshot)
        else:
            spec = SyntheticSpec(seed=args.seed, nodes=args.nodes, days=1, step=args.step)
            snapshot = generate(spec).snapshot
            if args.keep:
                write_snapshot(snapshot, args.keep)
        prepared = round(time.perf_counter() - began, 1)
        # Warm-up (imports, matplotlib font cache) so neither measured run pays for it.
        measure(subset(snapshot, 20), work / "warmup")
        baseline = measure(subset(snapshot, args.baseline_nodes), work / "baseline")
        full = measure(snapshot, work / "full")

    figures = {
        "bench": "report",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(),
        "snapshot_prepare_s": prepared,
        "full": full,
        "baseline": baseline,
        "render_ratio_full_vs_baseline": round(
            full["render_s"] / max(baseline["render_s"], 1e-9), 2
        ),
        "total_ratio_full_vs_baseline": round(full["total_s"] / max(baseline["total_s"], 1e-9), 2),
        "render_under_10s": full["render_s"] < RENDER_LIMIT_S,
        "total_under_10s": full["total_s"] < RENDER_LIMIT_S,
        "html_under_5mb": full["html_bytes"] < HTML_LIMIT,
    }
    for name in ("baseline", "full"):
        row = figures[name]
        print(
            f"{name:8s} {row['nodes']:5d} nodes: analysis {row['analysis_s']:.2f} s, "
            f"render {row['render_s']:.2f} s, total {row['total_s']:.2f} s "
            f"(CPU {row['analysis_cpu_s'] + row['render_cpu_s']:.2f} s), "
            f"HTML {row['html_bytes'] / 1e6:.2f} MB, JSON {row['json_bytes'] / 1e6:.2f} MB"
        )
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()

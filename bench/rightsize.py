"""Benchmark: ``analyzer rightsize`` on a year of workload history, against reading that history.

A synthetic history store: ``--workloads`` workloads (default 2,000) × ``--history-days`` days
(default 365) of ``workloads/<day>.parquet`` files, written with the store's own writer (random
per-day percentiles, a few workloads missing on some days). Measured in the same run:

- *baseline*: reading every workload file of the history into pandas (``read_workloads``), the
  least any tool over the whole history pays;
- *rightsize*: what ``analyzer rightsize HISTORY --recipe R --days 14 --out FILE`` does: read the
  window's files, recommend, write the CSV — for ``vpa`` and ``krr``;
- *recommend over the year*: ``recommend(..., days=365)`` on the already-read year (the
  recipes' arithmetic alone, on 365 × the rows);
- ``whatif --rightsize`` overhead (``--snapshot-nodes`` > 0, default 200 × 7 days, 5-minute
  step, synthetic generator): building the snapshot's workload days, recommending (vpa) and
  applying, against one kube-default replay of the same snapshot (``prepare`` + ``replay``), the
  unit a what-if repeats per strategy and seed.

    PYTHONPATH=$PWD .venv/bin/python bench/rightsize.py [--workloads 2000] [--history-days 365]

Prints a human line and a final JSON line with every figure (seconds), the ratios to the
baseline and this process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from analyzer.cli.rightsize_cmds import history_workloads
from analyzer.core.atomic import atomic_write_text
from analyzer.history.capacity import read_workloads, write_tables
from analyzer.monthly.rightsize import parse_recipe, recommend
from analyzer.monthly.rightsize_patches import recommendations_csv

MIB = 2**20


def _day_rows(rng: np.random.Generator, day: pd.Timestamp, n: int) -> pd.DataFrame:
    present = rng.random(n) > 0.02
    ids = np.flatnonzero(present)
    k = len(ids)
    base = rng.gamma(2.0, 100.0, k)
    cpu = np.sort(base[:, None] * rng.uniform(0.5, 3.0, (k, 5)), axis=1)
    memory = rng.gamma(3.0, 200.0, k) * MIB
    return pd.DataFrame(
        {
            "day": day,
            "namespace": [f"ns-{i % 40}" for i in ids],
            "owner_kind": np.where(ids % 10 == 0, "StatefulSet", "Deployment"),
            "owner_name": [f"app-{i}" for i in ids],
            "pool": [f"pool-{i % 5}" for i in ids],
            "pods": 3,
            "replicas_mean": 3.0,
            "replicas_max": 3,
            "cpu_request_millicores": 500.0,
            "cpu_limit_millicores": 0.0,
            "memory_request_bytes": 1024.0 * MIB,
            "memory_limit_bytes": 0.0,
            **{
                f"cpu_used_{s}_millicores": cpu[:, j]
                for j, s in enumerate(("p50", "p90", "p95", "p99", "max"))
            },
            "memory_used_p99_bytes": memory * 0.9,
            "memory_used_max_bytes": memory,
            "cpu_samples": 3 * 288,
            "restarts": pd.array([pd.NA] * k, dtype="Int64"),
            "oom_kills": pd.array([pd.NA] * k, dtype="Int64"),
        }
    )


def _whatif_overhead(nodes: int, days: float) -> dict[str, float]:
    from analyzer.core.workloads import apply_recommendations
    from analyzer.nightly.capacity_rollups import workload_days
    from analyzer.replay.engine import replay
    from analyzer.replay.input import prepare
    from analyzer.sources import SyntheticSpec, generate
    from analyzer.whatif.compare import resolve_strategy

    snapshot = generate(SyntheticSpec(seed=7, nodes=nodes, days=days, step=300)).snapshot
    began = time.perf_counter()
    recs = recommend(workload_days(snapshot), parse_recipe("vpa"))
    resized = apply_recommendations(snapshot, recs)
    rightsize_s = time.perf_counter() - began
    began = time.perf_counter()
    replay(prepare(resized), resolve_strategy("kube-default"), 0)
    replay_s = time.perf_counter() - began
    return {
        "snapshot_pods": float(len(snapshot.pods)),
        "snapshot_pod_usage_rows": float(len(snapshot.pod_usage)),
        "whatif_rightsize_s": rightsize_s,
        "one_replay_s": replay_s,
        "ratio_rightsize_to_one_replay": rightsize_s / replay_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--history-days", type=int, default=365)
    parser.add_argument("--snapshot-nodes", type=int, default=200)
    parser.add_argument("--snapshot-days", type=float, default=7.0)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    first = date(2025, 11, 25)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "history"
        for i in range(args.history_days):
            day = first + timedelta(days=i)
            rows = _day_rows(rng, pd.Timestamp(day, tz="UTC"), args.workloads)
            write_tables(root, day, {"pools": pd.DataFrame(), "workloads": rows})
        began = time.perf_counter()
        year = read_workloads(root)
        baseline_s = time.perf_counter() - began
        figures: dict[str, float] = {}
        for name in ("vpa", "krr"):
            began = time.perf_counter()
            recs = recommend(history_workloads(root, 14), parse_recipe(name), days=14)
            atomic_write_text(Path(tmp) / f"{name}.csv", recommendations_csv(recs))
            figures[f"rightsize_{name}_s"] = time.perf_counter() - began
            figures[f"recommended_{name}"] = int((recs["skipped_reason"] == "").sum())
        began = time.perf_counter()
        recommend(year, parse_recipe("vpa"), days=args.history_days)
        figures["recommend_year_vpa_s"] = time.perf_counter() - began
    if args.snapshot_nodes > 0:
        figures.update(_whatif_overhead(args.snapshot_nodes, args.snapshot_days))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "bench": "rightsize",
        "workloads": args.workloads,
        "history_days": args.history_days,
        "rows": len(year),
        "baseline_read_year_s": round(baseline_s, 3),
        **{k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()},
        "ratio_rightsize_vpa_to_baseline": round(figures["rightsize_vpa_s"] / baseline_s, 3),
        "ratio_recommend_year_to_baseline": round(figures["recommend_year_vpa_s"] / baseline_s, 3),
        "peak_rss_mb": round(rss_mb, 1),
    }
    print(
        f"{args.workloads} workloads × {args.history_days} days ({len(year):,} rows): reading the "
        f"year {baseline_s:.2f} s; rightsize --days 14 vpa {figures['rightsize_vpa_s']:.2f} s, "
        f"krr {figures['rightsize_krr_s']:.2f} s; recommend over the year "
        f"{figures['recommend_year_vpa_s']:.2f} s; peak RSS {rss_mb:.0f} MB"
    )
    if args.snapshot_nodes > 0:
        print(
            f"whatif --rightsize on {args.snapshot_nodes} nodes × {args.snapshot_days:g} days "
            f"({figures['snapshot_pod_usage_rows']:,.0f} pod usage rows): "
            f"{figures['whatif_rightsize_s']:.2f} s vs one kube-default replay "
            f"{figures['one_replay_s']:.2f} s"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()

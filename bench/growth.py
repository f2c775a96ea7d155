"""Benchmark: is the month of the first waiting pod of ``whatif --growth`` the real one?

50 seeded growth histories from a small generator of this file's own. Each is a one-pool cluster
of 3–8 identical nodes (4, 8 or 16 cores; 16, 32 or 64 GiB) running two Deployments in two
namespaces for one day (1-hour step: the pods run the whole day, so the step only sets the grid),
each Deployment a seeded pod shape (0.5–2 cores, 0.5–4 GiB) and replica count (together 45–75 %
of the pool's CPU or memory today), growing at a seeded rate of 8–40 % of today's replicas a
month (declared as the config's ``growth:`` rates). The generator's demand in month m is
floor(r0 + g·r0·m + 0.5) replicas of each.

**Truth**, computed independently of the replay: the first month whose demand has no placement at
all — an exact check over every node (dynamic programming over the (pods of A, pods of B) a node
can hold within its CPU, memory and 110 pods). The analyzer's answer is the first month a pod
waits when ``run_growth`` replays the month with kube-default. A history scores when the two are
within ±1 month (a horizon of 12 months; "none within 12" counts as month 13 on both sides).

``--fitted`` also scores the path a user takes: each seed's growth written as a history store
(``bench/growth_history.py``: eight weeks of daily rows on the generator's line, with a weekly
cycle and day-to-day noise), the rates fitted from it by ``analyzer.monthly.growth_rates`` (what
``whatif --growth --history DIR`` runs) and replayed the same way, scored against the same truth
(the TRUE rates). Both figures come from the same run.

    .venv/bin/python bench/growth.py [--histories 50] [--months 12] [--fitted]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.whatif.compare import resolve_strategy
from analyzer.whatif.growth import run_growth
from analyzer.whatif.growth_plan import Change, GrowthPlan, parse_growth

T0 = pd.Timestamp("2026-11-01T00:00:00Z")
GI = 2**30
MAX_PODS = 110


def history(seed: int) -> dict[str, object]:
    """One seeded history: nodes, the two workloads' shapes, replicas and monthly rates."""
    rng = np.random.default_rng(seed)
    cpu = int(rng.choice([4000, 8000, 16000]))
    memory = int(rng.choice([16, 32, 64])) * GI
    nodes = int(rng.integers(3, 9))
    shapes = [
        (int(rng.choice([500, 1000, 1500, 2000])), int(rng.choice([1, 2, 4, 8])) * GI // 2)
        for _ in range(2)
    ]
    load = rng.uniform(0.45, 0.75)
    # replicas so that together they hold ``load`` of the binding resource today
    share = rng.uniform(0.3, 0.7)
    replicas = []
    for (c, m), part in zip(shapes, (share, 1 - share), strict=True):
        per = max(c / (cpu * nodes), m / (memory * nodes))
        replicas.append(max(1, int(load * part / per)))
    rates = [round(float(rng.uniform(0.08, 0.40)), 3) for _ in range(2)]
    return {"cpu": cpu, "memory": memory, "nodes": nodes, "shapes": shapes,
            "replicas": replicas, "rates": rates}  # fmt: skip


def demand(h: dict[str, object], month: int) -> list[int]:
    """The generator's replicas of each workload in ``month``."""
    replicas, rates = h["replicas"], h["rates"]
    assert isinstance(replicas, list) and isinstance(rates, list)
    return [int(r + g * r * month + 0.5) for r, g in zip(replicas, rates, strict=True)]


def fits(h: dict[str, object], wanted: list[int]) -> bool:
    """Whether ``wanted`` pods of the two shapes have any placement on the nodes (exact)."""
    (ca, ma), (cb, mb) = h["shapes"]  # type: ignore[misc]
    cpu, memory, nodes = int(h["cpu"]), int(h["memory"]), int(h["nodes"])  # type: ignore[call-overload]
    a_max, b_max = wanted
    per_node = [
        (x, y)
        for x in range(a_max + 1)
        for y in range(b_max + 1)
        if x * ca + y * cb <= cpu and x * ma + y * mb <= memory and x + y <= MAX_PODS
    ]
    reach = {(0, 0)}
    for _ in range(nodes):
        reach = {(min(a + x, a_max), min(b + y, b_max)) for a, b in reach for x, y in per_node}
        if (a_max, b_max) in reach:
            return True
    return (a_max, b_max) in reach


def truth(h: dict[str, object], months: int) -> int:
    """The first month whose demand does not fit (months + 1: none within the horizon)."""
    return next((m for m in range(months + 1) if not fits(h, demand(h, m))), months + 1)


def snapshot(h: dict[str, object]) -> Snapshot:
    """The history's busiest day as a snapshot: every pod runs the whole day on a real node
    (spread round-robin; the replay places them afresh)."""
    end = T0 + pd.Timedelta(days=1)
    meta = SnapshotMeta(source="bench:growth", start=T0.isoformat(), end=end.isoformat(),
                        step_seconds=3600, collected_at=T0.isoformat(), analyzer_version="bench")  # fmt: skip
    count = int(h["nodes"])  # type: ignore[call-overload]
    names = [f"node-{i}" for i in range(count)]
    nodes = pd.DataFrame({
        "node": names, "pool": ["pool"] * count, "labels": ["{}"] * count,
        "first_seen": [T0] * count, "last_seen": [end] * count,
        "allocatable:cpu": [h["cpu"]] * count, "allocatable:memory": [h["memory"]] * count,
        "allocatable:pods": [MAX_PODS] * count,
    })  # fmt: skip
    rows = []
    for w, ((c, m), r) in enumerate(zip(h["shapes"], h["replicas"], strict=True)):  # type: ignore[call-overload]
        for i in range(r):
            rows.append({
                "uid": f"w{w}-{i}", "namespace": f"ns{w}", "name": f"app{w}-{i}",
                "node": names[(i + w) % count], "owner_kind": "ReplicaSet",
                "owner_name": f"app{w}-rs", "workload_kind": "Deployment",
                "workload_name": f"app{w}", "qos_class": "Burstable", "labels": "{}",
                "created": T0, "scheduled": T0, "started": T0, "last_seen": end,
                "requests:cpu": c, "requests:memory": m, "nonzero_requests:cpu": c,
                "nonzero_requests:memory": m, "limits:cpu": 0, "limits:memory": 0,
            })  # fmt: skip
    empty = pd.DataFrame({"node": [], "timestamp": [], "cpu": [], "memory": []})
    usage = pd.DataFrame({"uid": [], "timestamp": [], "cpu": [], "memory": []})
    return make_snapshot(meta, nodes, pd.DataFrame(rows), empty, usage)


def first_wait(h: dict[str, object], plan: GrowthPlan, months: int) -> int:
    """The analyzer's first waiting month (months + 1: none within the horizon)."""
    strategy = resolve_strategy("kube-default")
    result = run_growth(snapshot(h), plan, strategy, days=1, search_nodes=False,
                        stop_at_first_wait=True)  # fmt: skip
    found = result.first_wait_month()
    return months + 1 if found is None else found


def fitted_plan(h: dict[str, object], seed: int, months: int) -> tuple[GrowthPlan, list[float]]:
    """The plan ``whatif --growth --history`` builds from the seed's history store, and the rates."""
    from growth_history import write  # the bench folder is on sys.path when run as a script

    from analyzer.monthly.growth_rates import namespace_rates

    with tempfile.TemporaryDirectory(prefix="growthfit-") as tmp:
        root = Path(tmp) / "history"
        write(root, h, seed)
        rates = namespace_rates(root)
    fitted = tuple(Change("history", r.namespace, rate=r.rate) for r in rates if r.rate)
    by_ns = {r.namespace: r.rate for r in rates}
    return parse_growth({}, Path(), months, fitted), [by_ns.get(f"ns{w}", 0.0) for w in range(2)]


def score(rows: list[dict[str, object]], key: str) -> dict[str, object]:
    """Within ±1 month, exact and misses of the answers under ``key``."""
    ok = [r for r in rows if abs(int(r[key]) - int(r["truth"])) <= 1]  # type: ignore[call-overload]
    return {
        "within_one_month": len(ok), "share_within_one_month_pct": round(100 * len(ok) / len(rows), 1),
        "exact": sum(r[key] == r["truth"] for r in rows),
        "misses": [r for r in rows if r not in ok],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--histories", type=int, default=50)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--fitted", action="store_true", help="also rates fitted from a history")
    args = parser.parse_args()
    began, cpu0 = time.monotonic(), time.process_time()
    rows: list[dict[str, object]] = []
    for seed in range(args.histories):
        h = history(seed)
        rates = h["rates"]
        assert isinstance(rates, list)
        config = {"growth": [{"namespace": f"ns{w}", "replicas": f"+{g * 100:.1f}%"}
                             for w, g in enumerate(rates)]}  # fmt: skip
        row: dict[str, object] = {"seed": seed, "truth": truth(h, args.months)}
        row["analyzer"] = first_wait(h, parse_growth(config, Path(), args.months), args.months)
        if args.fitted:
            plan, fitted = fitted_plan(h, seed, args.months)
            row["fitted"] = first_wait(h, plan, args.months)
            row["rates"] = rates
            row["fitted_rates"] = [round(f, 4) for f in fitted]
        rows.append(row)
    out: dict[str, object] = {"histories": args.histories, "months": args.months}
    out["declared"] = score(rows, "analyzer")
    if args.fitted:
        out["fitted"] = score(rows, "fitted")
        errors = [f / g - 1 for r in rows
                  for f, g in zip(r["fitted_rates"], r["rates"], strict=True)]  # type: ignore[call-overload]  # fmt: skip
        out["fitted_differs_from_declared"] = [
            {k: r[k] for k in ("seed", "truth", "analyzer", "fitted")}
            for r in rows
            if r["fitted"] != r["analyzer"]
        ]
        out["fitted_rate_error_pct"] = {
            "mean": round(100 * float(np.mean(errors)), 2),
            "median_abs": round(100 * float(np.median(np.abs(errors))), 2),
            "max_abs": round(100 * float(np.max(np.abs(errors))), 2),
        }
    out["truth_months"] = sorted(int(r["truth"]) for r in rows)  # type: ignore[call-overload]
    out["wall_s"] = round(time.monotonic() - began, 1)
    out["cpu_s"] = round(time.process_time() - cpu0, 1)
    out["machine"] = f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}"
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

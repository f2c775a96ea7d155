"""Benchmark (accuracy): the recommendation ledger's adoption detection on 50 seeded histories.

Issue 28 item 1's acceptance: histories where a known 30 % of the recommendations are applied and
10 % partly, on known days; adoption precision ≥ 0.98, recall ≥ 0.95, the day within ±1, and the
realised saving equal to the generator's truth within 2 %.

The generator here is written for the test, not taken from analyzer: per seed a ledger of 200
workload recommendations (CPU, memory or both; 80 % down, 20 % up) and 6 pool decisions, and the
month after the review at **hourly** resolution — replicas that move every hour (a daily cycle and
noise, as under an HPA), requests changed at a random hour of a random day. The daily rows are then
rolled up the way the nightly does it (pod-time-weighted request mean, replicas = pod-time / 24 h),
so the detector sees only what a real history holds. Besides the adopted ones:

- applied: the recommendation rounded the way people write requests (to 10 m / 16 MiB);
- partly: 30–70 % of the way;
- with ``--unrelated 0.05``, 5 % of the others change a request for an unrelated reason (×0.5–2,
  either way) — a real history has such moves, and some look like an adoption (counted against
  precision; the issue's setup has none, so the default is 0);
- 2 % of the workloads are deleted after the review (never "adopted");
- pools: node counts with ±0.2 noise on the daily mean, applied/partly changes on known days.

Truth: the request-hours each adopted recommendation freed, summed over the hours. The realised
figure analyzer reports is compared with it, in total over the seed's detected adoptions.

    .venv/bin/python bench/ledger.py [--seeds 50]

Prints one line per seed and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyzer.monthly.adoption import score_ledger

MIB = 2.0**20
END = date(2026, 9, 30)  # the review's last day of history
DAYS = 31  # the month observed after it


def _history(
    seed: int, unrelated: float
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    hours = DAYS * 24
    workloads, rows, truth = [], [], {}
    for i in range(200):
        key = (f"ns{i % 7}", "Deployment", f"app-{seed}-{i}")
        which = rng.choice(["cpu", "memory", "both"], p=[0.4, 0.3, 0.3])
        c = {"cpu": float(rng.integers(100, 4000)), "memory": float(rng.integers(128, 8192)) * MIB}
        up = rng.random() < 0.2
        t = {}
        for r in ("cpu", "memory"):
            if which in (r, "both"):
                factor = rng.uniform(1.15, 2.0) if up else rng.uniform(0.3, 0.85)
                t[r] = (
                    float(np.ceil(c[r] * factor))
                    if r == "cpu"
                    else float(np.ceil(c[r] * factor / MIB) * MIB)
                )
        base = rng.uniform(1, 20)
        phase = rng.uniform(0, 2 * np.pi)
        h = np.arange(hours)
        replicas = np.maximum(
            1.0, base * (1 + 0.3 * np.sin(2 * np.pi * h / 24 + phase)) + rng.normal(0, 0.3, hours)
        )
        u = rng.random()
        outcome = "applied" if u < 0.3 else "partly" if u < 0.4 else "none"
        deleted = outcome == "none" and rng.random() < 0.02 / 0.6
        distract = outcome == "none" and not deleted and rng.random() < unrelated
        at = int(rng.integers(24, (DAYS - 5) * 24))  # a change between the 2nd and the 26th day
        req = {r: np.full(hours, c[r]) for r in ("cpu", "memory")}
        if outcome == "applied":
            for r, v in t.items():
                step = 10.0 if r == "cpu" else 16 * MIB
                req[r][at:] = max(step, round(v / step) * step)
        elif outcome == "partly":
            p = rng.uniform(0.3, 0.7)
            for r, v in t.items():
                req[r][at:] = c[r] + p * (v - c[r])
        elif distract:
            r = next(iter(t))
            req[r][at:] = c[r] * float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
        alive = hours if not deleted else 0
        truth[key] = {
            "outcome": outcome if not deleted else "deleted",
            "day": END + timedelta(days=1 + at // 24),
            "freed": {
                r: float(np.sum((c[r] - req[r]) * replicas)) / (1000.0 if r == "cpu" else 2.0**30)
                for r in t
            },
        }
        for d in range(DAYS if alive else 0):
            s = slice(d * 24, d * 24 + 24)
            pod_time = replicas[s].sum()
            rows.append(
                {
                    "day": pd.Timestamp(END + timedelta(days=d + 1), tz="UTC"),
                    "namespace": key[0],
                    "owner_kind": key[1],
                    "owner_name": key[2],
                    "pool": f"p{i % 6}",
                    "replicas_mean": pod_time / 24.0,
                    "cpu_request_millicores": float((req["cpu"][s] * replicas[s]).sum() / pod_time),
                    "memory_request_bytes": float(
                        (req["memory"][s] * replicas[s]).sum() / pod_time
                    ),
                }
            )
        workloads.append(
            {
                "namespace": key[0],
                "owner_kind": key[1],
                "owner_name": key[2],
                "pool": f"p{i % 6}",
                "replicas": float(replicas[:24].mean()),  # about what the review saw
                "cpu_request_millicores": c["cpu"],
                "cpu_recommended_millicores": t.get("cpu"),
                "memory_request_bytes": c["memory"],
                "memory_recommended_bytes": t.get("memory"),
            }
        )
    pools, daily = [], []
    for j in range(6):
        n0 = int(rng.integers(5, 60))
        action = "release" if rng.random() < 0.6 else "add"
        n = int(rng.integers(1, min(8, n0 - 1) + 1))
        u = rng.random()
        outcome = "applied" if u < 0.3 else "partly" if u < 0.4 else "none"
        at = int(rng.integers(1, DAYS - 5))
        sign = -1 if action == "release" else 1
        change = n if outcome == "applied" else max(1, n // 2) if outcome == "partly" else 0
        if outcome == "partly" and change >= n:
            outcome = "none" if n == 1 else outcome
            change = 0 if n == 1 else change
        key = ("pool", f"p{j}")
        truth[key] = {"outcome": outcome, "day": END + timedelta(days=1 + at)}
        for d in range(DAYS):
            nodes = n0 + (sign * change if d >= at else 0) + rng.uniform(-0.2, 0.2)
            daily.append({"day": END + timedelta(days=d + 1), "pool": f"p{j}", "nodes_mean": nodes})
        pools.append(
            {
                "pool": f"p{j}",
                "action": action,
                "nodes": n,
                "by_date": None,
                "nodes_at_review": float(n0),
            }
        )
    ledger = {
        "month": "2026-09",
        "history_end": END.isoformat(),
        "workloads": workloads,
        "pools": pools,
        "scheduler": {},
    }
    return ledger, pd.DataFrame(rows), pd.DataFrame(daily), truth


def _score(seed: int, unrelated: float) -> dict[str, Any]:
    ledger, rows, daily, truth = _history(seed, unrelated)
    result = score_ledger(ledger, rows, daily)
    tp = fp = fn = 0
    day_ok = day_n = 0
    freed_true = {"cpu": 0.0, "memory": 0.0}
    freed_seen = {"cpu": 0.0, "memory": 0.0}
    label = {"core-hours": "cpu", "GiB-hours": "memory"}
    found = [((w["namespace"], w["owner_kind"], w["owner_name"]), w) for w in result["workloads"]]
    found += [(("pool", p["pool"]), p) for p in result["pools"]]
    for key, w in found:
        t = truth[key]
        adopted = t["outcome"] in ("applied", "partly")
        seen = w["status"] in ("applied", "partly")
        tp += adopted and seen
        fp += seen and not adopted
        fn += adopted and not seen
        if adopted and seen:
            day_n += 1
            day_ok += abs((date.fromisoformat(w["day"]) - t["day"]).days) <= 1
        if key[0] != "pool":
            if adopted:
                for r, v in t["freed"].items():
                    freed_true[r] += v
            if seen:
                for lab, v in w["realised"].items():
                    freed_seen[label[lab]] += v
    return {
        "seed": seed,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "day_within_1": day_ok / day_n if day_n else 1.0,
        "saving_error_pct": {
            r: 100.0 * (freed_seen[r] - freed_true[r]) / abs(freed_true[r]) for r in freed_true
        },
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument(
        "--unrelated",
        type=float,
        default=0.0,
        help="share of the not-adopted workloads whose request changes for an "
        "unrelated reason (0: the issue's setup; 0.05: a harder, realistic one)",
    )
    args = parser.parse_args()
    results = [_score(seed, args.unrelated) for seed in range(args.seeds)]
    for r in results:
        print(
            f"seed {r['seed']:2d}: precision {r['precision']:.3f} recall {r['recall']:.3f} "
            f"day±1 {r['day_within_1']:.3f} saving error cpu {r['saving_error_pct']['cpu']:+.2f} % "
            f"memory {r['saving_error_pct']['memory']:+.2f} % (tp {r['tp']} fp {r['fp']} fn {r['fn']})"
        )
    tp = sum(r["tp"] for r in results)
    fp = sum(r["fp"] for r in results)
    fn = sum(r["fn"] for r in results)
    worst = max(abs(e) for r in results for e in r["saving_error_pct"].values())
    summary = {
        "seeds": args.seeds,
        "unrelated": args.unrelated,
        "precision": tp / (tp + fp),
        "recall": tp / (tp + fn),
        "min_precision": min(r["precision"] for r in results),
        "min_recall": min(r["recall"] for r in results),
        "day_within_1": min(r["day_within_1"] for r in results),
        "worst_saving_error_pct": worst,
        "seeds_saving_within_2pct": sum(
            all(abs(e) <= 2 for e in r["saving_error_pct"].values()) for r in results
        ),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

"""The what-if report's tables, in the units of the page's convention.

Counts are integers with thousands separators, shares are % (0–100), CPU in cores, memory in
GiB, durations human-readable on the page ("2 h 14 min") and in seconds in the CSV/JSON, with the
unit in the key (``wait_p99_s``, ``allocation_cpu_pct``). The comparison table shows the figures
the verdict uses (``analyzer.whatif.compare.VERDICT_RULE``: the worst seed); with one seed it has
no spread column and no "worst seed" qualifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.report import format as fmt
from analyzer.report.views import Cell, Column, TableView, json_value
from analyzer.whatif.compare import WhatIfResult

DURATION = "duration"  # a column kind shown as "2 h 14 min", sorted and exported in seconds


def human_duration(seconds: float) -> str:
    """``8040`` → ``2 h 14 min``: the two largest units, rounded down to the second (a wait never
    reads longer than it was); ``0 s`` for none."""
    return fmt.duration(max(seconds, 0.0), floor=True, zero="0 s")


@dataclass
class WhatIfTable(TableView):
    """A ``TableView`` that also shows ``duration`` columns (seconds) as human durations."""

    def rows(self) -> list[tuple[bool, list[Cell]]]:
        """The HTML rows; duration cells read "2 h 14 min" and sort by seconds."""
        out = super().rows()
        durations = [i for i, c in enumerate(self.columns) if c.kind == DURATION]
        if not durations:
            return out
        frame = self.frame.head(self.shown)
        for (_, cells), (_, row) in zip(out, frame.iterrows(), strict=True):
            for i in durations:
                raw = json_value(row[self.columns[i].key])
                if raw is not None:
                    cells[i] = Cell(human_duration(float(raw)), repr(float(raw)), True)
        return out


def _several(result: WhatIfResult) -> bool:
    return any(len(c.outcomes) > 1 for c in result.strategies)


def _pct(value: Any) -> float:
    number = float(value) if value is not None else float("nan")
    return number * 100.0


def comparison_table(result: WhatIfResult) -> WhatIfTable:
    """One row per strategy (observed first): the verdict's figures, then descriptive means."""
    several = _several(result)
    priced = all(c.priced for c in result.strategies)
    currency = result.prices["currency"] if result.prices and priced else None
    rows = []
    for c in result.strategies:
        row: dict[str, Any] = {"strategy": c.name, "seeds": len(c.outcomes)}
        for key in c.compared():
            if key != "moved_share":  # a share, shown as moved_pct below
                row[key] = c.worst(key)
        row["pool_mix"] = "pool-mix shift" if c.pool_mix(result.strategies[0]) else ""
        peak = c.stat("active_nodes_peak")
        row["active_nodes_peak_spread"] = peak["max"] - peak["min"]
        for key, out in (
            ("allocation_cpu", "allocation_cpu_pct"),
            ("allocation_memory", "allocation_memory_pct"),
            ("frag_ratio_cpu", "frag_ratio_cpu_pct"),
            ("moved_share", "moved_pct"),
        ):
            values = np.array([o.summary().get(key, np.nan) for o in c.outcomes], dtype=float)
            row[out] = _pct(np.nanmean(values)) if not np.all(np.isnan(values)) else np.nan
        imbalance = np.array([o.imbalance.get("cpu", np.nan) for o in c.outcomes], dtype=float)
        row["imbalance_cpu_pp"] = (
            float(np.nanmean(imbalance)) if not np.all(np.isnan(imbalance)) else np.nan
        )
        row["best"] = c.name == result.best
        rows.append(row)
    worst = " (worst seed)" if several else ""
    mean = " (mean)" if several else ""
    columns = [
        Column("strategy", "Strategy"),
        *([Column("seeds", "Seeds", "int")] if several else []),
        Column("core_hours_released", f"Core-hours released{worst}", "num", 0),
        Column("core_hours_released_pct", f"Core-hours released %{worst}", "num", 1),
        Column("gib_hours_released", f"GiB-hours released{worst}", "num", 0),
        Column("gib_hours_released_pct", f"GiB-hours released %{worst}", "num", 1),
        *(
            [Column("cost_released", f"Money released, {currency}{worst}", "num", 2)]
            if currency
            else []
        ),
        Column("active_core_hours", f"Active core-hours{worst}", "num", 0),
        Column("active_nodes_peak", f"Peak active nodes{worst}", "int"),
        *(
            [Column("active_nodes_peak_spread", "Peak spread over seeds (max − min)", "int")]
            if several
            else []
        ),
        Column("active_nodes_mean", f"Mean active nodes{worst}", "num"),
        Column("node_hours_released", f"Node-hours released{worst}", "num", 0),
        Column("waited", f"Pods waited{worst}", "int"),
        Column("never_placed", f"Pods never placed{worst}", "int"),
        Column("violations", f"Violations{worst}", "int"),
        Column("nodes_with_violations", f"Nodes in violation{worst}", "int"),
        Column("allocation_cpu_pct", f"CPU allocated{mean}", "pct"),
        Column("allocation_memory_pct", f"Memory allocated{mean}", "pct"),
        Column("frag_ratio_cpu_pct", f"Free CPU fragmented (FGD){mean}", "pct"),
        Column("imbalance_cpu_pp", f"CPU imbalance, pp{mean}", "num"),
        Column("moved_pct", f"Pods moved{mean}", "pct"),
        Column("pool_mix", "Pool-mix shift"),
    ]
    frame = pd.DataFrame(rows)
    return WhatIfTable(
        "comparison", "Comparison (observed first)", columns, frame, limit=None, hot="best"
    )


def seeds_table(result: WhatIfResult) -> WhatIfTable:
    """Per strategy (and seed, when several): pods, waits, nodes, violations."""
    several = _several(result)
    frame = pd.DataFrame([o.summary() for c in result.strategies for o in c.outcomes])
    frame["moved_pct"] = frame["moved_share"] * 100.0
    keys = [
        ("strategy", "Strategy", "text", 1),
        *([("seed", "Seed", "int", 0)] if several else []),
        ("placed", "Pods placed", "int", 0),
        ("waited", "Pods waited", "int", 0),
        ("never_placed", "Pods never placed", "int", 0),
        ("pending_at_end", "Pods pending at end", "int", 0),
        ("evicted", "Pods evicted (node left)", "int", 0),
        ("preempted", "Pods preempted", "int", 0),
        ("wait_p50_s", "Wait p50", DURATION, 0),
        ("wait_p99_s", "Wait p99", DURATION, 0),
        ("wait_max_s", "Wait max", DURATION, 0),
        ("active_nodes_peak", "Peak active nodes", "int", 0),
        ("active_nodes_mean", "Mean active nodes", "num", 1),
        ("active_node_hours", "Active node-hours", "num", 0),
        ("violations", "Violations", "int", 0),
        ("violation_minutes", "Breach minutes", "num", 0),
        ("moved_pct", "Pods moved", "pct", 1),
    ]
    columns = [Column(k, label, kind, digits) for k, label, kind, digits in keys]
    title = "Per strategy and seed" if several else "Per strategy"
    return WhatIfTable("seeds", title, columns, frame, limit=None)


def headroom_table(result: WhatIfResult) -> WhatIfTable:
    """More pods of each common shape that would still fit (mean over time, first seed)."""
    rows = [
        {
            "strategy": c.name,
            "shape": shape,
            "pods_fit_mean": fit,
            "stranded_cpu_pct": _pct(c.outcomes[0].fragmentation.get("stranded_cpu")),
        }
        for c in result.strategies
        for shape, fit in c.outcomes[0].headroom.items()
    ]
    columns = [
        Column("strategy", "Strategy"),
        Column("shape", "Pod shape (requests)"),
        Column("pods_fit_mean", "More pods that fit (mean over time)", "num"),
        Column("stranded_cpu_pct", "Free CPU stranded", "pct"),
    ]
    frame = pd.DataFrame(rows, columns=[c.key for c in columns])
    return WhatIfTable("headroom", "Headroom per common pod shape", columns, frame, limit=None)


def _first_seed_rows(result: WhatIfResult, attribute: str, keys: list[str]) -> pd.DataFrame:
    """One outcome frame (``wait_reasons`` or ``moves``) of every strategy's first seed, stacked."""
    frames = [
        getattr(c.outcomes[0], attribute).assign(strategy=c.name)
        for c in result.strategies
        if len(getattr(c.outcomes[0], attribute))
    ]
    return pd.concat(frames, ignore_index=True)[keys] if frames else pd.DataFrame(columns=keys)


def wait_reasons_table(result: WhatIfResult) -> WhatIfTable:
    """Why pods waited (first seed): strategy, the pods' pool, refusal reason, pods, nodes."""
    columns = [
        Column("strategy", "Strategy"),
        Column("pool", "Pool the pods ran in"),
        Column("reason", "Refusal reason (last attempt)"),
        Column("pods", "Pods", "int"),
        Column("nodes_refusing_median", "Nodes refusing for it (median)", "int"),
    ]
    frame = _first_seed_rows(result, "wait_reasons", [c.key for c in columns])
    return WhatIfTable(
        "wait_reasons", "Why pods waited (first seed)", columns, frame, limit=60,
        note="one row per strategy, pool and reason",
    )  # fmt: skip


def moves_table(result: WhatIfResult) -> WhatIfTable:
    """Pods moved between pools (first seed): strategy, from pool, to pool, pods."""
    columns = [
        Column("strategy", "Strategy"),
        Column("from_pool", "Ran in pool"),
        Column("to_pool", "Replayed in pool"),
        Column("pods", "Pods", "int"),
    ]
    frame = _first_seed_rows(result, "moves", [c.key for c in columns])
    return WhatIfTable(
        "moves", "Pods moved to another pool (first seed)", columns, frame, limit=60,
        note="pods placed in another pool than they ran in, by pool",
    )  # fmt: skip


def listings(result: WhatIfResult) -> dict[str, pd.DataFrame]:
    """The per-pod CSV files: every waiting pod (all seeds), every moved pod (first seed)."""
    waiting = [
        o.waiting_pods.assign(strategy=c.name, seed=o.seed)
        for c in result.strategies
        for o in c.outcomes
    ]
    moved = [c.outcomes[0].moved_pods.assign(strategy=c.name) for c in result.strategies]
    out = {}
    for name, frames in (("waiting_pods", waiting), ("moved_pods", moved)):
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        lead = [k for k in ("strategy", "seed") if k in frame.columns]
        out[name] = frame[lead + [k for k in frame.columns if k not in lead]]
    return out

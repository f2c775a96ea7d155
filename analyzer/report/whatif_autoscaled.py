"""The what-if page's node-autoscaler part: rows "strategy + autoscaler", why nodes stayed, and
the node count over time against the observed (``analyzer.whatif.autoscaled``).

The sentence above the table is written from the table's own first row (the first strategy's
first seed), so the two always agree.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from analyzer.report import format as fmt
from analyzer.report.views import Column
from analyzer.report.whatif_tables import DURATION, WhatIfTable
from analyzer.whatif.compare import WhatIfResult


def autoscaled_table(result: WhatIfResult) -> WhatIfTable | None:
    """One row per strategy + autoscaler and seed (None: no ``--autoscaler``)."""
    if not result.autoscaled:
        return None
    priced = all(o.total.cost is not None for o in result.autoscaled)
    currency = result.prices["currency"] if result.prices and priced else None
    rows = []
    for o in result.autoscaled:
        t = o.total
        rows.append(
            {
                "strategy": f"{o.strategy} + {o.autoscaler}",
                "seed": o.seed,
                "node_hours": t.node_hours,
                "observed_node_hours": t.observed_node_hours,
                "node_hours_released": t.observed_node_hours - t.node_hours,
                "core_hours": t.core_hours,
                "gib_hours": t.gib_hours,
                "cost": t.cost,
                "peak_nodes": int(o.series["nodes"].max()) if len(o.series) else 0,
                "nodes_added": t.nodes_added,
                "nodes_removed": t.nodes_removed,
                "pods_evicted": t.pods_evicted,
                "evicted_twice": o.evicted_twice_within_hour,
                "ordered_for_evicted": o.ordered_for_evicted,
                "scale_up_wait_s": o.pending_pod_seconds_scale_up,
                "pending_at_end": o.pending_pods_at_end,
            }
        )
    columns = [
        Column("strategy", "Strategy + autoscaler"),
        Column("seed", "Seed", "int"),
        Column("node_hours", "Node-hours", "num", 1),
        Column("observed_node_hours", "Observed node-hours", "num", 1),
        Column("node_hours_released", "Node-hours released", "num", 1),
        Column("core_hours", "Core-hours", "num", 0),
        Column("gib_hours", "GiB-hours", "num", 0),
        *([Column("cost", f"Money, {currency}", "num", 2)] if currency else []),
        Column("peak_nodes", "Peak nodes", "int"),
        Column("nodes_added", "Nodes added", "int"),
        Column("nodes_removed", "Nodes removed", "int"),
        Column("pods_evicted", "Pods evicted by scale-down or consolidation", "int"),
        Column("evicted_twice", "Pods evicted twice within 1 h", "int"),
        Column("ordered_for_evicted", "Nodes for pods it just evicted", "int"),
        Column("scale_up_wait_s", "Pending waiting for a new node (pod-time)", DURATION),
        Column("pending_at_end", "Pods pending at end", "int"),
    ]
    return WhatIfTable(
        "autoscaled", "Strategy + autoscaler", columns, pd.DataFrame(rows), limit=None
    )


# the page shows the autoscaled table in two parts, each narrow enough not to scroll sideways at
# a laptop's width (one table of 16 columns did, hiding its last ones); its CSV and JSON keep
# every column in one table
CAPACITY = ("node_hours", "observed_node_hours", "node_hours_released", "core_hours",
            "gib_hours", "cost", "peak_nodes")  # fmt: skip
CHURN = ("nodes_added", "nodes_removed", "pods_evicted", "evicted_twice", "ordered_for_evicted",
         "scale_up_wait_s", "pending_at_end")  # fmt: skip


def autoscaled_parts(table: WhatIfTable) -> list[WhatIfTable]:
    """``table`` (``autoscaled_table``) as the page shows it: the capacity the autoscaled
    replay ran (``data-table="autoscaled"``), then its churn and waiting
    (``"autoscaled_churn"``); each with the row's strategy and seed, both linking the one CSV."""
    key_columns = [c for c in table.columns if c.key in ("strategy", "seed")]
    parts = []
    for name, title, keys in (
        ("autoscaled", "Strategy + autoscaler: capacity", CAPACITY),
        ("autoscaled_churn", "Strategy + autoscaler: nodes added and removed, evictions, waiting",
         CHURN),
    ):  # fmt: skip
        columns = key_columns + [c for c in table.columns if c.key in keys]
        parts.append(replace(table, name=name, title=title, columns=columns, csv=table.name))
    return parts


def reasons_table(result: WhatIfResult) -> WhatIfTable | None:
    """Node-hours per cluster-autoscaler reason a node stayed, per strategy + autoscaler."""
    if not result.autoscaled:
        return None
    rows = [
        {"strategy": f"{o.strategy} + {o.autoscaler}", "seed": o.seed, "reason": reason,
         "node_hours": hours}
        for o in result.autoscaled
        for reason, hours in sorted(o.reasons_node_hours.items(), key=lambda kv: -kv[1])
    ]  # fmt: skip
    columns = [
        Column("strategy", "Strategy + autoscaler"),
        Column("seed", "Seed", "int"),
        Column("reason", "Reason (the autoscaler's name)"),
        Column("node_hours", "Node-hours", "num", 1, tiny=True),
    ]
    frame = pd.DataFrame(rows, columns=["strategy", "seed", "reason", "node_hours"])
    return WhatIfTable("autoscaler_reasons", "Why nodes stayed", columns, frame, limit=None)


def autoscaled_sentence(table: WhatIfTable, result: WhatIfResult) -> str:
    """The first row in words (the same figures the table shows); when its pools' minSize kept
    under-used nodes, how long (the reasons table's ``NodeGroupMinSizeReached``); with several
    tie-break seeds, the node-hours of that strategy's rows from least to most."""
    row = table.frame.iloc[0]
    autoscaler = row["strategy"].split(" + ")[1]
    by = "consolidation" if autoscaler == "karpenter" else "scale-down"
    released = float(row["node_hours_released"])
    shown = fmt.number(abs(released), 1)
    if shown == fmt.number(0.0, 1):
        change = "as many as"
    else:
        change = f"{shown} fewer than" if released > 0 else f"{shown} more than"
    return (
        f"Under {row['strategy'].split(' + ')[1]}, {row['strategy'].split(' + ')[0]} would have "
        f"run {fmt.number(row['node_hours'], 1)} node-hours, {change} the "
        f"{fmt.number(row['observed_node_hours'], 1)} observed, peaking at "
        f"{fmt.count(row['peak_nodes'])} nodes: {fmt.count(row['nodes_added'])} added, "
        f"{fmt.count(row['nodes_removed'])} removed, {fmt.count(row['pods_evicted'])} "
        f"pod{'' if int(row['pods_evicted']) == 1 else 's'} evicted by {by}."
        f"{_seeds(table.frame, row)}{_relaunched(row, by)}{_held(result)}"
    )


def _seeds(frame: pd.DataFrame, row: Any) -> str:
    """The node-hours over the tie-break seeds of ``row``'s strategy + autoscaler, in words (""
    with one seed): under an autoscaler, where kube-scheduler's random tie-breaks fall decides
    which nodes go under the threshold, so one seed's row is one draw of several."""
    same = frame[frame["strategy"] == row["strategy"]]
    if len(same) < 2:
        return ""
    low, high = (
        fmt.number(float(v), 1) for v in (same["node_hours"].min(), same["node_hours"].max())
    )
    return (
        f" That is tie-break seed {int(row['seed'])}; over its {fmt.count(len(same))} seeds it "
        f"would have run {low} to {high} node-hours: kube-scheduler breaks score ties at random, "
        "and where they fall decides which nodes the autoscaler finds under-used "
        '(docs/autoscaling.md, "Tie-breaks").'
    )


def _relaunched(row: Any, by: str) -> str:
    """The row's nodes ordered for pods the autoscaler had just evicted, in words ("" when
    none): its own drains left pods no room, which its simulation had counted on."""
    count = int(row["ordered_for_evicted"])
    if not count:
        return ""
    loop = (
        "the delete-and-relaunch loop upstream's users report of Karpenter "
        "(aws/karpenter-provider-aws#3921)"
        if by == "consolidation"
        else "a scale-down and scale-up loop"
    )
    return (
        f" {fmt.count(count)} node{' was' if count == 1 else 's were'} ordered for pods its own "
        f"{by} had evicted in the 10 minutes before, which then found no room: the scheduler "
        f"placed the evicted pods otherwise than its simulation did. Repeated, this is {loop}; "
        "the figures above include it."
    )


def _held(result: WhatIfResult) -> str:
    """The first row's node-hours kept at a pool's minSize, in words ("" when none)."""
    hours = result.autoscaled[0].reasons_node_hours.get("NodeGroupMinSizeReached", 0.0)
    if fmt.number(hours, 1) == fmt.number(0.0, 1):
        return ""
    return (
        f" Nodes it found under-used stayed {fmt.number(hours, 1)} node-hours because their pool "
        "was at its minSize (NodeGroupMinSizeReached; each pool's bounds are listed below)."
    )


def node_count_series(result: WhatIfResult) -> dict[str, tuple[Any, Any]]:
    """Observed and each strategy + autoscaler's first seed: nodes present at each grid point."""
    if not result.autoscaled:
        return {}
    first = result.autoscaled[0].series
    out: dict[str, tuple[Any, Any]] = {"observed": (first["time"], first["observed_nodes"])}
    for o in result.autoscaled:
        name = f"{o.strategy} + {o.autoscaler}"
        if name not in out:
            out[name] = (o.series["time"], o.series["nodes"])
    return out

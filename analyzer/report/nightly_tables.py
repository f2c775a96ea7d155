"""The nightly report's tables (``analyzer.report.context`` builds the rest of the page): each a
``TableView`` named by its CSV file stem and HTML id, its amounts in the page's units (cores,
GiB, devices) with a ``unit`` column where a table mixes resources.
"""

from __future__ import annotations

import pandas as pd

from analyzer.nightly.run import NightlyResult
from analyzer.report import format as fmt
from analyzer.report.headroom_view import NAME, headroom_table, hourly_table
from analyzer.report.views import HTML_ROW_LIMIT, Column, TableView


def free_table(result: NightlyResult) -> pd.DataFrame:
    """``result.free_capacity`` in the page's units (cores, GiB, devices) with a ``unit`` column."""
    return _in_units(result.free_capacity, "resource", ["allocatable", "free", "stranded"])


def _pct_columns(resource: str, stats: tuple[str, ...]) -> list[Column]:
    return [Column(f"{resource}_{s}_pct", f"{resource} {s}", "pct") for s in stats]


def _in_units(frame: pd.DataFrame, resource_column: str, columns: list[str]) -> pd.DataFrame:
    """Raw amounts (millicores, bytes, devices) → cores / GiB / devices, with a ``unit`` column."""
    out = frame.copy()
    resources = out[resource_column].astype(str)
    divisor = resources.map(lambda r: fmt.resource_unit(r).divisor).astype("float64")
    for column in columns:
        out[column] = pd.to_numeric(out[column], errors="coerce") / divisor
    out.insert(out.columns.get_loc(resource_column) + 1, "unit", resources.map(fmt.unit_label))
    return out


def _fragmentation_frame(result: NightlyResult) -> pd.DataFrame:
    over = result.fragmentation.over_time
    columns = ["time", "resource", "allocatable", "requested", "free", "stranded", "frag_ratio",
               "stranded_share", "nodes"]  # fmt: skip
    if over.empty:
        return pd.DataFrame(columns=[*columns, "unit", "frag_pct", "stranded_pct"])
    frame = _in_units(
        over[columns].reset_index(drop=True),
        "resource",
        ["allocatable", "requested", "free", "stranded"],
    )
    frame["frag_pct"] = frame["frag_ratio"] * 100.0
    frame["stranded_pct"] = frame["stranded_share"] * 100.0
    return frame


def _shapes_frame(result: NightlyResult) -> pd.DataFrame:
    shapes = result.fragmentation.shapes.copy()
    shapes["share_pct"] = shapes["share"] * 100.0
    considered = result.fragmentation.pods_considered
    shapes["pods_pct"] = shapes["pods"] / considered * 100.0 if considered else float("nan")
    if "cpu" in shapes:
        shapes["cpu_cores"] = shapes["cpu"] / 1000.0
    if "memory" in shapes:
        shapes["memory_gib"] = shapes["memory"] / fmt.GIB
    return shapes


def build_tables(result: NightlyResult) -> dict[str, TableView]:
    """Every table of the report (name = CSV file stem and HTML id)."""
    v = result.violations
    breaches = v.breaches.sort_values(["start", "node", "resource"]).reset_index(drop=True)
    breaches = breaches.assign(duration_seconds=breaches["minutes"] * 60.0)
    per_node = v.per_node[v.per_node["breaches"] > 0] if len(v.per_node) else v.per_node
    per_node = per_node.assign(breach_seconds=per_node["breach_minutes"] * 60.0)
    nodes = result.nodes.sort_values(["cpu_p95_pct", "node"], ascending=[False, True])
    nodes = nodes.assign(
        hot=nodes["breach_minutes"] > 0,
        breach_seconds=nodes["breach_minutes"] * 60.0,
        cpu_idle_requested_cores=nodes["cpu_idle_requested"] / 1000.0,
        memory_idle_requested_gib=nodes["memory_idle_requested"] / fmt.GIB,
    ).reset_index(drop=True)
    pools = result.pools.assign(
        cpu_idle_requested_cores=result.pools["cpu_idle_requested"] / 1000.0
    )
    stats = ("avg", "p50", "p90", "p95", "p99")
    shapes = _shapes_frame(result)
    coverage = result.quality.per_node.sort_values(["coverage", "node"]).reset_index(drop=True)
    coverage = coverage.assign(coverage_pct=coverage["coverage"] * 100.0)
    head = result.headroom
    head_title = "Headroom: more pods of each common shape that fit"
    if head.at is not None:
        at = "24:00" if head.at == result.end else f"{head.at:%H:%M}"
        head_title += f", at {at} UTC"
        head_title += " (end of the day)" if head.at == result.end else " (last instant with data)"
    free = free_table(result)
    tables = {
        "free_capacity": TableView(
            "free_capacity",
            "Free capacity per resource (mean over the day)",
            [
                Column("resource", "Resource"), Column("unit", "Unit"),
                Column("allocatable", "Allocatable", "num"), Column("free", "Free", "num"),
                Column("frag_pct", "Unusable by common shapes (FGD)", "pct"),
                Column("asking_pct", "Pods of common shapes requesting it", "pct"),
                Column("stranded", "Stranded (amount)", "num"),
                Column("stranded_pct", "Stranded (% of free)", "pct"),
                Column("reason", "What the FGD share means"),
            ],
            free,
            limit=None,
        ),
        "breaches": TableView(
            "breaches",
            "Threshold breaches",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("resource", "Resource"),
                Column("kind", "Kind"), Column("stat", "Stat"), Column("window", "Window"),
                Column("start", "Start (UTC)", "time"), Column("end", "End (UTC)", "time"),
                Column("duration_seconds", "Duration", "duration"),
                Column("peak_pct", "Peak", "pct", 0),
                Column("threshold", "Threshold", "pct", 0), Column("source", "Threshold from"),
            ],
            breaches,
            limit=200,
        ),
        "breach_nodes": TableView(
            "breach_nodes",
            "Nodes over threshold",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("breaches", "Breaches", "int"),
                Column("breach_seconds", "Time over threshold", "duration"),
                Column("worst_pct", "Worst", "pct", 0), Column("worst_resource", "Resource"),
                Column("worst_kind", "Kind"), Column("source", "Thresholds from"),
            ],
            per_node.reset_index(drop=True),
        ),
        "pools": TableView(
            "pools",
            "Usage percentiles and requests per pool (% of the pool's allocatable)",
            [
                Column("pool", "Pool"), Column("nodes", "Nodes", "int"),
                Column("cpu_requested_pct", "cpu requested", "pct"),
                *_pct_columns("cpu", stats),
                Column("cpu_idle_requested_cores", "cpu idle req. (cores)", "num"),
                Column("memory_requested_pct", "memory requested", "pct"),
                *_pct_columns("memory", stats),
                Column("overcommitted_nodes", "Over-committed nodes", "int"),
            ],
            pools,
            limit=None,
        ),
        "nodes": TableView(
            "nodes",
            "Usage and requests per node (% of the node's allocatable)",
            [
                Column("node", "Node"), Column("pool", "Pool"),
                Column("cpu_requested_pct", "cpu req.", "pct"),
                *_pct_columns("cpu", ("avg", "p95", "p99")),
                Column("cpu_idle_requested_cores", "cpu idle req. (cores)", "num", 2),
                Column("memory_requested_pct", "mem req.", "pct"),
                *_pct_columns("memory", ("avg", "p95", "p99")),
                Column("memory_idle_requested_gib", "mem idle req. (GiB)", "num", 2),
                Column("cpu_overcommitted", "cpu over-committed", "bool"),
                Column("memory_overcommitted", "mem over-committed", "bool"),
                Column("breach_seconds", "Time over threshold", "duration"),
            ],
            nodes,
            note="hottest first by CPU p95",
            hot="hot",
        ),
        "shapes": TableView(
            "shapes",
            "Common pod shapes (target workload)",
            [
                Column("label", "Shape (requests)"), Column("pods", "Pods", "int"),
                Column("pods_pct", "Of pods considered", "pct"),
                Column("share_pct", "Weight in FGD", "pct"),
                *([Column("cpu_cores", "cpu (cores)", "num", 3)] if "cpu_cores" in shapes else []),
                *([Column("memory_gib", "memory (GiB)", "num", 2)] if "memory_gib" in shapes else []),
            ],
            shapes,
            limit=None,
            note=f"of {fmt.count(result.fragmentation.pods_considered)} pods considered "
            "(DaemonSet, static and request-less pods left out)",
        ),
        "headroom": TableView(
            "headroom",
            head_title,
            [
                Column("label", "Shape (requests)"), Column("share_pct", "Weight in FGD", "pct"),
                Column("fit", "More pods that fit", "int"),
            ],
            head.table.assign(share_pct=head.table["share"] * 100.0),
            limit=None,
            note="each shape alone, summed over nodes; – = no data",
        ),
        "fragmentation": TableView(
            "fragmentation",
            "Free capacity, stranded and fragmented, hour by hour",
            [
                Column("time", "Time (UTC)", "time"), Column("resource", "Resource"),
                Column("unit", "Unit"),
                Column("allocatable", "Allocatable", "num"), Column("requested", "Requested", "num"),
                Column("free", "Free", "num"), Column("stranded", "Stranded", "num"),
                Column("frag_pct", "FGD (of free)", "pct"),
                Column("nodes", "Nodes", "int"),
            ],
            _fragmentation_frame(result),
            limit=None,
        ),
        "coverage": TableView(
            "coverage",
            "Nodes with incomplete usage data",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("expected", "Expected samples", "int"),
                Column("observed", "Observed", "int"), Column("coverage_pct", "Coverage", "pct", 1),
            ],
            coverage,
            limit=min(int((coverage["coverage"] < 1.0).sum()), HTML_ROW_LIMIT),
            note="nodes below full coverage, least complete first",
        ),
        "hourly_usage": TableView(
            "hourly_usage",
            "Hourly mean usage per node (% of allocatable)",
            [
                Column("node", "Node"), Column("pool", "Pool"), Column("hour", "Hour (UTC)", "time"),
                Column("cpu_pct", "cpu", "pct"), Column("memory_pct", "memory", "pct"),
            ],
            result.hourly.rename(columns={"cpu": "cpu_pct", "memory": "memory_pct"}),
            limit=0,  # CSV only: the heatmap shows its hottest rows (numbers in "charts")
            in_json=False,
        ),
    }  # fmt: skip
    tables[NAME] = headroom_table(result.shape_headroom)
    tables["shape_headroom_hourly"] = hourly_table(result.shape_headroom)
    return tables

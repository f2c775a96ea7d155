"""The fleet's month across clusters, computed with DuckDB over the clusters' parquet histories.

Per cluster and pool, for one calendar month (``docs/fleet.md``), the monthly review's own figures
(``monthly/aggregate.py``, ``docs/monthly.md``) so the two pages agree for any cluster:

- **allocatable** = mean over the month's days of ``*_allocatable_mean_*``; **requested** = mean of
  ``*_requested_mean_*``; **requested peak** = the largest ``*_requested_peak_*``;
- **used p95** = nearest-rank p95 (koordlet's index ``int(float32(n)·0.95) − 1``) over the days'
  ``*_used_p95_*``;
- **idle** = allocatable − max(requested, used p95); **slack** = requested − used p95.

A cluster's row is the sum over its pools, the fleet's the sum over clusters (a used p95 summed
over pools is an upper bound of the whole's p95: they peak at different times; the page says so).
CPU in cores, memory in GiB, never added together.

The worst violations are the cluster-days with the most node-time over the thresholds (the nightly
run's ``breach_node_seconds`` in ``summary/DAY.json``) and the node-days whose daily p95 usage is
the largest share of their allocatable (``rollups/DAY.parquet``). Forecasts and decisions are the
month's stored ``forecasts/MONTH.json`` (written by ``report monthly``), when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.structured import parse_json_text
from analyzer.core.text import one_line
from analyzer.history.fleet_checks import (
    POOL_QUANTITIES,
    ROLLUP_QUANTITIES,
    check_footers,
    check_rows,
)
from analyzer.history.fleet_source import ClusterHistory, FleetSource

GIB = float(2**30)
RESOURCES = {"cpu": ("millicores", 1000.0, "cores"), "memory": ("bytes", GIB, "GiB")}
FIGURES = ("allocatable", "requested", "requested_peak", "used_p95", "idle", "slack")
WORST = 10  # rows of each worst-violations table
_SUMMARY_COLUMNS = (
    ", columns={day: 'VARCHAR', breaches: 'BIGINT', nodes_with_breaches: 'BIGINT', "
    "breach_node_seconds: 'DOUBLE'}, format='auto'"
)


@dataclass
class FleetMonth:
    """Everything the fleet page shows, as frames with unit-named columns."""

    month: str
    clusters: list[ClusterHistory]
    pools: pd.DataFrame  # cluster, pool, days, nodes_mean, <figure>_<cpu_cores|memory_gib>
    totals: pd.DataFrame  # one row per cluster (sum of its pools) and the last row "(fleet)"
    breaches: pd.DataFrame  # worst cluster-days: cluster, day, breaches, nodes, breach_node_hours
    hottest: (
        pd.DataFrame
    )  # worst node-days: cluster, pool, node, day, resource, p95_pct_of_allocatable
    forecasts: pd.DataFrame  # cluster, pool, forecast_date, requested_cpu_cores mean/hi95, decision
    missing: dict[str, list[str]] = field(default_factory=dict)  # what a cluster lacks, shown


def _list(paths: list[str], source: FleetSource) -> str:
    return "[" + ", ".join("'" + source.url(p).replace("'", "''") + "'" for p in paths) + "]"


def _relation(
    source: FleetSource, clusters: list[ClusterHistory], table: str, reader: str, options: str = ""
) -> str:
    """SQL over every cluster's ``table`` files with a ``cluster`` column: the hive folders through
    one ``hive_partitioning`` read (the column from ``cluster=KEY``), each legacy folder through
    its own read with the key as a constant."""
    hive = [p for c in clusters if c.hive for p in c.files.get(table, [])]
    parts = []
    if hive:
        parts.append(
            f"SELECT * FROM {reader}({_list(hive, source)}, hive_partitioning=true{options})"
        )
    for c in clusters:
        if not c.hive and c.files.get(table):
            key = c.key.replace("'", "''")
            parts.append(
                f"SELECT '{key}' AS cluster, * FROM {reader}({_list(c.files[table], source)}"
                f"{options})"
            )
    return " UNION ALL BY NAME ".join(parts)


def _query(con: Any, sql: str, root: str) -> pd.DataFrame:
    import duckdb

    try:
        return con.execute(sql).df()
    except duckdb.Error as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"HISTORY_ROOT {one_line(root)}: a history file cannot be read: {one_line(text, 300)}; "
            "re-run `analyzer history backfill` for that day (with --force) or delete that file"
        ) from None


def _p95(column: str) -> str:
    # koordlet's nearest rank, as usage/percentiles.py: index int(float32(n) * float32(0.95)) - 1,
    # clamped at 0; DuckDB lists are 1-based, hence greatest(…, 1) without the − 1.
    return (
        f"list_sort(list({column}) FILTER (WHERE {column} IS NOT NULL))"
        f"[greatest(CAST(trunc(CAST(count({column}) AS FLOAT) * CAST(0.95 AS FLOAT)) AS BIGINT), 1)]"
    )


def latest_month(source: FleetSource, clusters: list[ClusterHistory]) -> str:
    """The month of the newest day file in the fleet (from the file names)."""
    days = [p.rsplit("/", 1)[-1][:10] for c in clusters for p in c.files.get("pools", [])]
    return max(days)[:7]


def fleet_month(source: FleetSource, month: str | None = None) -> FleetMonth:
    """The fleet's figures for ``month`` (``YYYY-MM``; default the newest month with data)."""
    clusters = source.clusters()
    month = month or latest_month(source, clusters)
    start = date.fromisoformat(f"{month}-01")
    end = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    # Only the month's day files reach DuckDB (by their names, which the listing checked): a
    # quarter of history is read as one month, not three.
    prefix = f"{month}-"
    in_month = [
        replace(c, files={
            t: [p for p in paths if t == "forecasts" or p.rsplit("/", 1)[-1].startswith(prefix)]
            for t, paths in c.files.items()
        })
        for c in clusters
    ]  # fmt: skip
    in_month = [c for c in in_month if c.files["pools"]]
    if not in_month:
        raise InputError(
            f"--month {month}: no cluster under HISTORY_ROOT {one_line(source.root)} has a day of "
            "that month; give a month with history (default: the newest)"
        )
    con = source.connect()
    # The store's per-file checks (version, stamp, day, bounds) before any figure (docs/fleet.md)
    check_footers(source, in_month)
    for table, columns in (("pools", POOL_QUANTITIES), ("rollups", ROLLUP_QUANTITIES)):
        relation = _relation(source, in_month, table, "read_parquet",
                             ", union_by_name=true, filename=true")  # fmt: skip
        check_rows(con, relation, columns, lambda c, sql: _query(c, sql, source.root))
    names = {c.key: c.name for c in in_month}
    pools = _pools(con, source, in_month, start, end)
    pools.insert(0, "cluster", pools.pop("cluster_key").map(names))
    pools = pools.sort_values(["cluster", "pool"], kind="stable").reset_index(drop=True)
    return FleetMonth(
        month=month,
        clusters=in_month,
        pools=pools,
        totals=_totals(pools),
        breaches=_breaches(con, source, in_month, start, end, names),
        hottest=_hottest(con, source, in_month, start, end, names),
        forecasts=_forecasts(source, in_month, month),
        missing={
            c.name: [t for t in ("summary", "rollups", "forecasts") if not c.files.get(t)]
            for c in in_month
        },
    )


def _pools(
    con: Any, source: FleetSource, clusters: list[ClusterHistory], start: date, end: date
) -> pd.DataFrame:
    columns = []
    for r, (unit, div, _shown) in RESOURCES.items():
        key = f"{r}_{'cores' if r == 'cpu' else 'gib'}"
        columns += [
            f"avg({r}_allocatable_mean_{unit}) / {div} AS allocatable_{key}",
            f"avg({r}_requested_mean_{unit}) / {div} AS requested_{key}",
            f"max({r}_requested_peak_{unit}) / {div} AS requested_peak_{key}",
            f"{_p95(f'{r}_used_p95_{unit}')} / {div} AS used_p95_{key}",
        ]
    sql = (
        f"SELECT cluster AS cluster_key, pool, count(*) AS days, avg(nodes_mean) AS nodes_mean, "
        f"{', '.join(columns)} FROM "
        f"({_relation(source, clusters, 'pools', 'read_parquet', ', union_by_name=true')}) "
        f"WHERE day >= TIMESTAMPTZ '{start} 00:00:00+00' AND day < TIMESTAMPTZ '{end} 00:00:00+00' "
        "GROUP BY cluster, pool"
    )
    frame = _query(con, sql, source.root)
    for key in ("cpu_cores", "memory_gib"):
        alloc, req, used = (frame[f"{f}_{key}"] for f in ("allocatable", "requested", "used_p95"))
        busy = req.where(used.isna() | (req >= used), used)
        frame[f"idle_{key}"] = alloc - busy
        frame[f"slack_{key}"] = req - used
    return frame


def _totals(pools: pd.DataFrame) -> pd.DataFrame:
    """One row per cluster (Σ its pools) and the fleet's ("(fleet)", Σ clusters)."""
    numbers = ["nodes_mean"] + [f"{f}_{k}" for f in FIGURES for k in ("cpu_cores", "memory_gib")]
    # min_count=1: a figure no pool has stays missing (NaN) rather than becoming 0
    per = pools.groupby("cluster", sort=True)[numbers].sum(min_count=1)
    per.insert(0, "pools", pools.groupby("cluster", sort=True).size())
    fleet = per.sum(min_count=1).to_frame().T
    fleet.index = pd.Index(["(fleet)"], name="cluster")
    out = pd.concat([per, fleet]).reset_index()
    out["pools"] = out["pools"].astype("int64")
    return out


def _breaches(
    con: Any, source: FleetSource, clusters: list[ClusterHistory], start: date, end: date,
    names: dict[str, str],
) -> pd.DataFrame:  # fmt: skip
    # explicit columns: a summary's own "cluster" stamp must not meet the partition's column
    relation = _relation(source, clusters, "summary", "read_json", _SUMMARY_COLUMNS)
    if not relation:
        return pd.DataFrame(columns=["cluster", "day", "breaches", "nodes_with_breaches",
                                     "breach_node_hours"])  # fmt: skip
    sql = (
        "SELECT cluster AS cluster_key, day, breaches, nodes_with_breaches, "
        "breach_node_seconds / 3600 AS breach_node_hours "
        f"FROM ({relation}) WHERE day >= '{start}' AND day < '{end}' "
        f"AND breach_node_seconds > 0 ORDER BY breach_node_hours DESC, cluster, day LIMIT {WORST}"
    )
    frame = _query(con, sql, source.root)
    frame.insert(0, "cluster", frame.pop("cluster_key").map(names))
    return frame


def _hottest(
    con: Any, source: FleetSource, clusters: list[ClusterHistory], start: date, end: date,
    names: dict[str, str],
) -> pd.DataFrame:  # fmt: skip
    relation = _relation(source, clusters, "rollups", "read_parquet", ", union_by_name=true")
    if not relation:
        return pd.DataFrame(columns=["cluster", "pool", "node", "day", "resource",
                                     "used_p95_pct_of_allocatable"])  # fmt: skip
    sql = (
        "SELECT cluster AS cluster_key, pool, node, CAST(CAST(day AS DATE) AS VARCHAR) AS day, "
        "resource, 100 * value / allocatable AS used_p95_pct_of_allocatable "
        f"FROM ({relation}) WHERE stat = 'p95' AND allocatable > 0 AND value IS NOT NULL "
        f"AND day >= TIMESTAMPTZ '{start} 00:00:00+00' AND day < TIMESTAMPTZ '{end} 00:00:00+00' "
        f"ORDER BY used_p95_pct_of_allocatable DESC, cluster, node, day LIMIT {WORST}"
    )
    frame = _query(con, sql, source.root)
    frame.insert(0, "cluster", frame.pop("cluster_key").map(names))
    return frame


def _forecasts(source: FleetSource, clusters: list[ClusterHistory], month: str) -> pd.DataFrame:
    """The month's stored forecast per cluster and pool: the requested-CPU series' last point
    (cores) and the pool's decision when the review stored one."""
    rows: list[dict[str, Any]] = []
    for c in clusters:
        path = next((p for p in c.files.get("forecasts", []) if p.endswith(f"/{month}.json")), None)
        if path is None:
            continue
        fix = "delete that file (the next `report monthly` stores a new one)"
        try:  # core.structured's parser: bounded nesting, one line naming the file
            data = parse_json_text(source.read_text(path), f"HISTORY_ROOT: {one_line(path)}")
        except InputError as exc:
            raise InputError(f"{exc}; {fix}") from None
        except OSError as exc:
            raise InputError(
                f"HISTORY_ROOT: {one_line(path)} cannot be read ({one_line(str(exc), 120)}); {fix}"
            ) from None
        pools = data.get("pools") if isinstance(data, dict) else None
        decisions = data.get("decisions") if isinstance(data, dict) else None
        for pool, series in (pools or {}).items():
            entry = series.get("requested_cpu_cores") if isinstance(series, dict) else None
            points = entry.get("series") if isinstance(entry, dict) else None
            last = points[-1] if isinstance(points, list) and points else {}
            decision = (decisions or {}).get(pool) if isinstance(decisions, dict) else None
            rows.append(
                {
                    "cluster": c.name,
                    "pool": str(pool),
                    "forecast_date": last.get("date") if isinstance(last, dict) else None,
                    "requested_cpu_cores_mean": _finite(last, "mean"),
                    "requested_cpu_cores_hi95": _finite(last, "hi95"),
                    "decision": decision.get("sentence") if isinstance(decision, dict) else None,
                }
            )
    return pd.DataFrame(
        rows,
        columns=["cluster", "pool", "forecast_date", "requested_cpu_cores_mean",
                 "requested_cpu_cores_hi95", "decision"],
    )  # fmt: skip


def _finite(point: object, key: str) -> float | None:
    value = point.get(key) if isinstance(point, dict) else None
    if isinstance(value, int | float) and value == value and abs(value) < 1e18:
        return float(value)
    return None

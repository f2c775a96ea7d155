"""Pool and workload daily rollups in the history store (docs/history.md), on a hand-built day.

The day 2026-11-01, 5-minute samples (the first at 00:05, 288 in the day):

- pool ``a``: ``a-small`` (2000m, 8 GiB) and ``a-big`` (8000m, 32 GiB), the whole day;
  pool ``b``: ``b-1`` (4000m, 16 GiB), from 12:00 (first_seen).
- DaemonSet ``agent``: one pod per node requesting 100m / 128 MiB (on b-1 from 12:00).
- Deployment ``web`` (ReplicaSet ``web-7d9f``), requests 1000m / 2 GiB, limits 2000m / 4 GiB:
  web-1 on a-big all day; web-2 on a-big 00:00-12:00; web-3 on b-1 12:00-24:00 (it replaces
  web-2 at the same instant); web-4 on a-small 06:00-09:00 requesting 2000m.
- a bare pod ``debug`` (no controller) on b-1 12:00-24:00, no requests.
- node cpu: a-small 500m, a-big 1000m except its last 4 samples (5000m), b-1 2000m from 12:05;
  memory a-small 2 GiB, a-big 4 GiB, b-1 1 GiB.
- pod cpu: web-1 100m, web-2 300m, web-3 200m, web-4 900m at each of their samples; memory
  1 GiB, web-4 3 GiB.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from report_snapshots import ending_early

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.history.capacity import (
    METADATA_KEY,
    SCHEMA_VERSION,
    read_pools,
    read_workloads,
)
from analyzer.history.store import HistoryStore
from analyzer.nightly.capacity_rollups import interval_mean_peak
from analyzer.nightly.run import NightlyResult, NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report
from analyzer.usage.percentiles import STAT_QUANTILES, grouped_stats, nearest_rank_index

GIB = 2**30
MIB = 2**20
DAY = date(2026, 11, 1)
T0 = pd.Timestamp("2026-11-01T00:00:00Z")


def _at(hours: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(hours=hours)


def _cluster(*, with_web4: bool = True) -> Snapshot:
    end = T0 + pd.Timedelta(days=1)
    stamps = pd.date_range(T0 + pd.Timedelta(minutes=5), end, freq="5min")
    nodes = pd.DataFrame(
        {
            "node": ["a-small", "a-big", "b-1"],
            "pool": ["a", "a", "b"],
            "labels": "{}",
            "annotations": "{}",
            "first_seen": [T0, T0, _at(12)],
            "allocatable:cpu": [2000, 8000, 4000],
            "allocatable:memory": [8 * GIB, 32 * GIB, 16 * GIB],
            "capacity:cpu": [2000, 8000, 4000],
            "capacity:memory": [8 * GIB, 32 * GIB, 16 * GIB],
        }
    )
    big_cpu = np.full(len(stamps), 1000.0)
    big_cpu[-4:] = 5000.0
    late = stamps[stamps > _at(12)]
    node_usage = pd.concat(
        [
            pd.DataFrame(
                {"node": "a-small", "timestamp": stamps, "cpu": 500.0, "memory": 2.0 * GIB}
            ),
            pd.DataFrame(
                {"node": "a-big", "timestamp": stamps, "cpu": big_cpu, "memory": 4.0 * GIB}
            ),
            pd.DataFrame({"node": "b-1", "timestamp": late, "cpu": 2000.0, "memory": 1.0 * GIB}),
        ],
        ignore_index=True,
    )
    # name, node, kind, owner kind/name, workload kind/name, from, to (hours), cpu request
    specs = [
        ("agent-1", "a-small", "DaemonSet", "agent", "DaemonSet", "agent", 0, None, 100),
        ("agent-2", "a-big", "DaemonSet", "agent", "DaemonSet", "agent", 0, None, 100),
        ("agent-3", "b-1", "DaemonSet", "agent", "DaemonSet", "agent", 12, None, 100),
        ("web-1", "a-big", "ReplicaSet", "web-7d9f", "Deployment", "web", 0, None, 1000),
        ("web-2", "a-big", "ReplicaSet", "web-7d9f", "Deployment", "web", 0, 12, 1000),
        ("web-3", "b-1", "ReplicaSet", "web-7d9f", "Deployment", "web", 12, None, 1000),
        ("web-4", "a-small", "ReplicaSet", "web-7d9f", "Deployment", "web", 6, 9, 2000),
        ("debug", "b-1", "", "", "", "", 12, None, 0),
    ]
    if not with_web4:
        specs = [s for s in specs if s[0] != "web-4"]
    rows = []
    for name, node, okind, oname, wkind, wname, begin, finish, cpu in specs:
        agent = name.startswith("agent")
        rows.append(
            {
                "uid": f"uid-{name}",
                "namespace": "kube-system" if agent else "shop",
                "name": name,
                "node": node,
                "owner_kind": okind,
                "owner_name": oname,
                "workload_kind": wkind,
                "workload_name": wname,
                "priority": 0,
                "qos_class": "Burstable",
                "phase": "Running",
                "labels": "{}",
                "created": _at(begin),
                "scheduled": _at(begin),
                "started": _at(begin),
                "finished": _at(finish) if finish is not None else pd.NaT,
                "requests:cpu": cpu,
                "requests:memory": 128 * MIB if agent else (0 if name == "debug" else 2 * GIB),
                "limits:cpu": 0 if agent or name == "debug" else 2000,
                "limits:memory": 0 if agent or name == "debug" else 4 * GIB,
                "nonzero_requests:cpu": max(cpu, 100),
                "nonzero_requests:memory": 200 * MIB,
            }
        )
    pods = pd.DataFrame(rows)
    pod_cpu = {"web-1": 100.0, "web-2": 300.0, "web-3": 200.0, "web-4": 900.0}
    frames = []
    for name, _, _, _, _, _, begin, finish, _ in specs:
        if name not in pod_cpu:
            continue
        stop = _at(finish) if finish is not None else end
        mine = stamps[(stamps > _at(begin)) & (stamps <= stop)]
        memory = 3.0 * GIB if name == "web-4" else 1.0 * GIB
        frames.append(
            pd.DataFrame(
                {"uid": f"uid-{name}", "timestamp": mine, "cpu": pod_cpu[name], "memory": memory}
            )
        )
    meta = SnapshotMeta(
        source="test:history",
        start=T0.isoformat(),
        end=end.isoformat(),
        step_seconds=300,
        collected_at=end.isoformat(),
        analyzer_version="test",
    )
    return make_snapshot(meta, nodes, pods, node_usage, pd.concat(frames, ignore_index=True))


@pytest.fixture(scope="module")
def result() -> NightlyResult:
    return run_nightly(_cluster(), NightlySettings())


def _pool(result: NightlyResult, name: str) -> pd.Series:
    table = result.pool_days.set_index("pool")
    row: pd.Series = table.loc[name]
    return row


def _workload(result: NightlyResult, kind: str, name: str) -> pd.Series:
    table = result.workload_days.set_index(["owner_kind", "owner_name"])
    row: pd.Series = table.loc[(kind, name)]
    return row


def test_pool_nodes_and_allocatable_are_time_weighted(result: NightlyResult) -> None:
    a, b = _pool(result, "a"), _pool(result, "b")
    assert (a["nodes_mean"], a["nodes_max"]) == (2.0, 2)
    # b-1 exists from noon: half a node on average, one at the peak.
    assert (b["nodes_mean"], b["nodes_max"]) == (0.5, 1)
    assert a["cpu_allocatable_mean_millicores"] == 10000
    assert (b["cpu_allocatable_mean_millicores"], b["cpu_allocatable_peak_millicores"]) == (
        2000,
        4000,
    )


def test_pool_requested_mean_and_peak(result: NightlyResult) -> None:
    a, b = _pool(result, "a"), _pool(result, "b")
    # a-big: agent 100 + web-1 1000 all day + web-2 1000 for 12 h = 1600 on average;
    # a-small: agent 100 + web-4 2000 for 3 h = 350. Peak 06-09: 100+1000+1000+100+2000 = 4200.
    assert a["cpu_requested_mean_millicores"] == pytest.approx(1950.0)
    assert a["cpu_requested_peak_millicores"] == 4200
    # b from noon: agent 100 + web-3 1000 (+ debug 0): 550 on average over the day, 1100 at peak.
    assert b["cpu_requested_mean_millicores"] == pytest.approx(550.0)
    assert b["cpu_requested_peak_millicores"] == 1100
    # memory peak 06-09: two agents (128 MiB) + web-1, web-2, web-4 (2 GiB each).
    assert a["memory_requested_peak_bytes"] == 2 * 128 * MIB + 3 * 2 * GIB


def test_daemonset_overhead_is_the_requests_of_daemonset_pods(result: NightlyResult) -> None:
    a, b = _pool(result, "a"), _pool(result, "b")
    assert (
        a["cpu_daemonset_requested_mean_millicores"],
        a["cpu_daemonset_requested_peak_millicores"],
    ) == (200, 200)
    assert b["cpu_daemonset_requested_mean_millicores"] == pytest.approx(50.0)
    assert b["memory_daemonset_requested_peak_bytes"] == 128 * MIB


def test_pool_used_stats_are_of_the_pool_total_over_the_grid(result: NightlyResult) -> None:
    a, b = _pool(result, "a"), _pool(result, "b")
    # Pool a's total is 1500m at 284 samples and 5500m at the last 4. Nearest rank (koordlet):
    # p95 = the 273rd smallest of 288 (1500), p99 = the 285th (5500).
    assert a["used_samples"] == 288
    assert a["cpu_used_avg_millicores"] == pytest.approx((284 * 1500 + 4 * 5500) / 288)
    assert (a["cpu_used_p95_millicores"], a["cpu_used_p99_millicores"]) == (1500, 5500)
    assert a["cpu_used_max_millicores"] == 5500
    assert a["memory_used_max_bytes"] == 6 * GIB
    assert b["used_samples"] == 144 and b["cpu_used_avg_millicores"] == 2000


def test_report_pool_table_and_history_rows_show_the_same_pool_usage(result: NightlyResult) -> None:
    # one computation of each pool's total over the day serves both (tables.pool_usage): the
    # report's pool p95 of pool a is the history row's, 1500m as worked out above
    table = result.pools.set_index("pool")
    for pool in ("a", "b"):
        row = _pool(result, pool)
        for stat in ("avg", "p95", "p99"):
            assert table.loc[pool, f"cpu_{stat}"] == row[f"cpu_used_{stat}_millicores"]
            assert table.loc[pool, f"memory_{stat}"] == row[f"memory_used_{stat}_bytes"]
    assert table.loc["a", "cpu_p95"] == 1500


def test_largest_node_of_each_pool(result: NightlyResult) -> None:
    a, b = _pool(result, "a"), _pool(result, "b")
    assert a["largest_node"] == "a-big"
    assert a["largest_node_cpu_allocatable_millicores"] == 8000
    assert a["largest_node_memory_allocatable_bytes"] == 32 * GIB
    assert b["largest_node"] == "b-1"


def test_workload_owner_replicas_and_pool(result: NightlyResult) -> None:
    web = _workload(result, "Deployment", "web")
    assert web["namespace"] == "shop" and web["pods"] == 4
    # 2 replicas all day (web-3 replaces web-2 at 12:00 exactly), 3 during 06-09.
    assert web["replicas_mean"] == pytest.approx((24 * 2 + 3 * 1) / 24)
    assert web["replicas_max"] == 3
    # pod-time: 39 h in pool a (web-1 24 h, web-2 12 h, web-4 3 h), 12 h in b.
    assert web["pool"] == "a"
    # per-pod requests weighted by pod-time: (48 h × 1000m + 3 h × 2000m) / 51 h.
    assert web["cpu_request_millicores"] == pytest.approx((48 * 1000 + 3 * 2000) / 51)
    assert web["memory_limit_bytes"] == 4 * GIB
    debug = _workload(result, "Pod", "debug")
    assert (debug["pool"], debug["replicas_mean"], debug["replicas_max"]) == ("b", 0.5, 1)
    agent = _workload(result, "DaemonSet", "agent")
    assert agent["replicas_max"] == 3 and agent["pool"] == "a"


def test_workload_usage_percentiles_cover_all_its_pods_samples(result: NightlyResult) -> None:
    web = _workload(result, "Deployment", "web")
    # 612 samples: 288 × 100m (web-1), 144 × 200m (web-3), 144 × 300m (web-2), 36 × 900m (web-4).
    assert web["cpu_samples"] == 288 + 144 + 144 + 36
    # Nearest rank: p50 = the 306th smallest (200m), p90 = the 550th (300m), p95 = the 581st (900m).
    assert web["cpu_used_p50_millicores"] == 200
    assert web["cpu_used_p90_millicores"] == 300
    assert web["cpu_used_p95_millicores"] == 900
    assert web["cpu_used_max_millicores"] == 900
    assert web["memory_used_p99_bytes"] == 3 * GIB
    assert pd.isna(web["restarts"]) and pd.isna(web["oom_kills"])  # not in the snapshot
    # The agent has no pod usage rows: no percentile, never a zero.
    agent = _workload(result, "DaemonSet", "agent")
    assert agent["cpu_samples"] == 0 and np.isnan(agent["cpu_used_p99_millicores"])


def test_rollups_hold_no_impossible_value(result: NightlyResult) -> None:
    pools, workloads = result.pool_days, result.workload_days
    for table in (pools, workloads):
        numbers = table.select_dtypes("number")
        assert (numbers.fillna(0) >= 0).all().all()
    assert (pools["nodes_mean"] <= pools["nodes_max"]).all()
    assert (pools["cpu_requested_mean_millicores"] <= pools["cpu_requested_peak_millicores"]).all()
    assert (pools["cpu_used_p95_millicores"] <= pools["cpu_used_max_millicores"]).all()
    assert (workloads["replicas_mean"] <= workloads["replicas_max"]).all()
    assert (workloads["replicas_max"] <= workloads["pods"]).all()


def test_interval_peak_applies_ends_before_starts() -> None:
    groups = np.array([0, 0, 1])
    starts = np.array([0, 10, 0])
    ends = np.array([10, 20, 5])
    mean, peak = interval_mean_peak(
        groups, starts, ends, np.array([3, 3, 1]), lo=0, hi=20, n_groups=3
    )
    assert list(peak) == [3, 1, 0]
    assert list(mean) == [3.0, 0.25, 0.0]


def test_nightly_run_writes_both_tables_with_their_version(tmp_path: Path) -> None:
    result = run_nightly(_cluster(), NightlySettings())
    paths = write_nightly_report(result, tmp_path)
    for name in ("pools", "workloads"):
        path = paths.history / name / f"{DAY.isoformat()}.parquet"
        assert path.is_file()
        assert pq.read_schema(path).metadata[METADATA_KEY] == str(SCHEMA_VERSION).encode()
    pools = read_pools(paths.history)
    assert list(pools["pool"]) == ["a", "b"]
    assert set(pools["schema_version"]) == {SCHEMA_VERSION}
    assert pools.loc[0, "cpu_requested_peak_millicores"] == 4200
    workloads = read_workloads(paths.history, DAY, DAY)
    assert set(workloads["owner_name"]) == {"agent", "web", "debug"}


def test_second_run_of_the_same_day_replaces_its_rows(tmp_path: Path) -> None:
    write_nightly_report(run_nightly(_cluster(), NightlySettings()), tmp_path)
    write_nightly_report(run_nightly(_cluster(with_web4=False), NightlySettings()), tmp_path)
    pools = read_pools(tmp_path / "history")
    assert len(pools) == 2  # one row per pool, not two runs' worth
    # Without web-4 pool a peaks at 100 + 1000 + 1000 + 100.
    assert pools.set_index("pool").loc["a", "cpu_requested_peak_millicores"] == 2200
    web = read_workloads(tmp_path / "history").set_index("owner_name").loc["web"]
    assert web["replicas_max"] == 2


def _old_history(root: Path, day: date) -> None:
    """History as nightly runs wrote it before issue 16: rollups/ and summary/ only."""
    rollups = pd.DataFrame({"node": ["n"], "resource": ["cpu"], "stat": ["avg"], "value": [1.0]})
    HistoryStore(root).write_day(day, rollups, {"nodes": 1})


def test_old_history_reads_as_no_rows_and_is_extended(tmp_path: Path) -> None:
    history = tmp_path / "history"
    _old_history(history, date(2026, 10, 31))
    assert read_pools(history).empty and read_workloads(history).empty
    assert list(read_pools(history).columns)[:3] == ["schema_version", "day", "pool"]
    paths = write_nightly_report(run_nightly(_cluster(), NightlySettings()), tmp_path)
    pools = read_pools(paths.history, date(2026, 10, 1), date(2026, 11, 30))
    assert set(pools["day"].dt.date) == {DAY}  # the old day contributes no rows
    assert HistoryStore(history).days() == [date(2026, 10, 31), DAY]
    assert read_pools(history, date(2026, 10, 31), date(2026, 10, 31)).empty


def test_a_newer_schema_is_refused_with_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "pools"
    folder.mkdir()
    table = pa.table({"schema_version": [SCHEMA_VERSION + 1], "pool": ["a"]})
    table = table.replace_schema_metadata({METADATA_KEY: str(SCHEMA_VERSION + 1).encode()})
    pq.write_table(table, folder / "2026-11-01.parquet")
    with pytest.raises(InputError, match=r"2026-11-01\.parquet.*newer.*upgrade analyzer"):
        read_pools(tmp_path)


def test_days_outside_the_range_and_stray_files_are_not_read(tmp_path: Path) -> None:
    write_nightly_report(run_nightly(_cluster(), NightlySettings()), tmp_path)
    history = tmp_path / "history"
    (history / "pools" / "notes.parquet").write_text("not a day")
    assert read_pools(history, date(2026, 11, 2)).empty
    assert len(read_pools(history, DAY, DAY)) == 2


def test_duckdb_runs_the_query_docs_history_md_shows(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extra")
    write_nightly_report(run_nightly(_cluster(), NightlySettings()), tmp_path)
    doc = (Path(__file__).parents[1] / "docs" / "history.md").read_text()
    query = doc.split("```sql\n", 1)[1].split("```", 1)[0]
    query = query.replace("OUT/history", str(tmp_path / "history")).rstrip().rstrip(";")
    rows = duckdb.sql(query).fetchall()
    # requested peak 4200m / 1100m; requested mean over allocatable mean 1950/10000, 550/2000.
    assert rows == [
        (DAY, "a", 4.2, pytest.approx(19.5)),
        (DAY, "b", 1.1, pytest.approx(27.5)),
    ]


@pytest.mark.parametrize("method", ["nearest-rank", "linear"])
def test_grouped_percentiles_match_a_per_group_reference(method: str) -> None:
    """The workload percentiles come from ``grouped_stats``' one-pass (group, value) sort; each
    group's figures equal those of that group's samples sorted on their own."""
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 40, 3000)
    values = np.round(rng.random(3000) * 100)  # many ties
    values[::9] = np.nan
    fast = grouped_stats(ids, values, 45, method)  # groups 40-44 have no sample
    for group in range(40):
        own = np.sort(values[(ids == group) & ~np.isnan(values)])
        assert fast["count"][group] == len(own)
        for stat, q in STAT_QUANTILES.items():
            if method == "nearest-rank":
                want = own[min(int(nearest_rank_index(np.array([len(own)]), q)[0]), len(own) - 1)]
            else:
                want = np.quantile(own, q)
            assert fast[stat][group] == pytest.approx(want, rel=1e-12), (group, stat)
    for group in (0, 17, 39):
        assert fast["max"][group] == np.nanmax(values[ids == group])
    assert np.isnan(fast["max"][42]) and np.isnan(fast["p99"][42])


@pytest.mark.parametrize("block", [1, 50, 333, 10**9])
def test_grouped_stats_in_blocks_equal_one_sort(block: int) -> None:
    """Bounded memory (memstream): groups taken in blocks of ~``block`` samples give exactly
    the figures of one sort of everything — a group's samples all land in one block, in the
    same value order; blocks smaller than a group (1, 50) and empty groups included."""
    rng = np.random.default_rng(11)
    ids = rng.integers(0, 40, 3000)
    ids[ids == 5] = 6  # group 5 empty amid full ones
    values = np.round(rng.random(3000) * 100)  # ties
    values[::7] = np.nan
    whole = grouped_stats(ids, values, 45, "nearest-rank", block_samples=10**9)
    for method in ("nearest-rank", "linear"):
        blocked = grouped_stats(ids, values, 45, method, block_samples=block)
        reference = grouped_stats(ids, values, 45, method, block_samples=10**9)
        assert set(blocked) == set(reference)
        for name, column in reference.items():
            np.testing.assert_array_equal(blocked[name], column, err_msg=name)
    assert whole["count"][5] == 0 and np.isnan(whole["p50"][5])


def test_a_day_whose_data_stops_at_2355_still_counts_whole_nodes_and_pods() -> None:
    # Collected just after midnight: every node and pod last seen at 23:55, no sample after.
    # Nothing is known to have left, so nothing leaves (else 2 nodes would read 1.9965).
    result = run_nightly(ending_early(_cluster(), "2026-11-01T23:55:00Z"), NightlySettings())
    a = result.pool_days.set_index("pool").loc["a"]
    assert (a["nodes_mean"], a["cpu_allocatable_mean_millicores"]) == (2.0, 10000)
    assert a["cpu_requested_mean_millicores"] == pytest.approx(1950.0)
    web = result.workload_days.set_index("owner_name").loc["web"]
    assert web["replicas_mean"] == pytest.approx((24 * 2 + 3 * 1) / 24)

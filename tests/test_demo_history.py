"""The demo's months of history: a growing synthetic cluster, rolled up like the nightly run.

One module fixture builds what ``analyzer demo`` builds, at 50 nodes: 83 days before the snapshot
generated a week at a time at a 1-hour step (``write_synthetic_history``), then the 7 snapshot days
at 5 minutes rolled up with the nightly run's own functions (``day_rows``, checked below to equal
``run_nightly``'s rows). The demo's growth: the memory pool's session caches +15 %/month, the
workloads free to run anywhere +3 %/month, the GPU pool's +5 %/month, ``renderer`` +20 %/month; app
cpu usage −30 % on weekends; the media and analytics teams use a quarter of what others use.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import date, timedelta
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.cli.demo import demo_crowded, demo_spec
from analyzer.core.errors import InputError
from analyzer.history.capacity import read_pools, read_workloads, write_tables
from analyzer.history.headroom import read_headroom
from analyzer.monthly.forecast import forecast
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.nightly.synthetic_history import day_rows, write_synthetic_history
from analyzer.sources.history_chunks import chunk_specs
from analyzer.sources.lifecycle import replicas_at, rounding_offset, scale_ups
from analyzer.sources.placement import crowding_place
from analyzer.sources.spec import MONTH_SECONDS, SyntheticSpec
from analyzer.sources.synthetic import generate

GIB = 2**30
NODES = 50
FIRST = date(2026, 8, 10)  # 83 coarse days, then the snapshot's 2026-11-01..07
SNAPSHOT_DAY = date(2026, 11, 1)
LAST = date(2026, 11, 7)
SPEC = demo_spec(42, NODES, 7, 300)


@cache
def snapshot_cluster():  # type: ignore[no-untyped-def]
    return generate(SPEC, place=crowding_place(demo_crowded(SPEC)))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history")
    place = crowding_place(demo_crowded(SPEC))
    written = write_synthetic_history(
        SPEC, root, FIRST, SNAPSHOT_DAY - timedelta(days=1), place=place, workers=2
    )
    assert written == [FIRST + timedelta(days=k) for k in range(83)]
    snapshot = snapshot_cluster().snapshot
    for k in range(7):
        day = SNAPSHOT_DAY + timedelta(days=k)
        pools, workloads = day_rows(snapshot, day)
        write_tables(root, day, {"pools": pools, "workloads": workloads})
    return root


def _pool_series(pools: pd.DataFrame, pool: str, column: str) -> pd.Series:
    rows = pools[pools["pool"] == pool]
    index = pd.DatetimeIndex(rows["day"]).tz_convert("UTC").tz_localize(None)
    return pd.Series(rows[column].to_numpy(dtype=float), index=index)


def test_replicas_follow_the_growth_curve_and_scale_ups_are_where_it_steps() -> None:
    # 10 replicas at +10 %/month: 11 one month later, 10 / 1.1 = 9.09 → 9 a month before.
    assert replicas_at(10, 0.10, 1.0) == 11
    assert replicas_at(10, 0.10, -1.0) == 9
    assert replicas_at(1, 0.10, -12.0) == 1  # never below one replica
    offset = rounding_offset("search-3")
    assert 0 < offset < 1
    anchor, t0, t1 = 0, -60 * 86400, 60 * 86400
    ups = scale_ups(8, 0.2, anchor, t0, t1, offset)
    months = [(t - anchor) / MONTH_SECONDS for t in (t0, t1)]
    count = [replicas_at(8, 0.2, m, offset) for m in months]
    assert len(ups) == count[1] - count[0] > 0  # one pod per replica gained
    for t in ups:  # the count rises exactly at each instant
        before = replicas_at(8, 0.2, (t - 1 - anchor) / MONTH_SECONDS, offset)
        at = replicas_at(8, 0.2, (t - anchor) / MONTH_SECONDS, offset)
        assert at == before + 1


def test_growth_fields_at_their_defaults_stay_out_of_the_snapshot_meta() -> None:
    plain = generate(SyntheticSpec(seed=1, nodes=4, days=1, step=3600)).snapshot
    recorded = plain.meta.extra["generator"]
    for name in ("growth", "fast_growth", "growth_anchor", "weekend_dip", "team_usage"):
        assert name not in recorded
    assert "growth" in snapshot_cluster().snapshot.meta.extra["generator"]


def test_bad_growth_settings_name_the_field_and_the_fix() -> None:
    with pytest.raises(InputError, match=r"growth of memory: -0.1 must be a fraction per month"):
        SyntheticSpec(growth=(("memory", -0.1),))
    with pytest.raises(InputError, match=r"weekend_dip: 1.5 must be a fraction"):
        SyntheticSpec(weekend_dip=1.5)
    with pytest.raises(InputError, match=r"the step 7000s must divide a day"):
        chunk_specs(SPEC, FIRST, LAST, step=7000)


def test_chunks_cover_the_days_once_in_order_with_one_anchor() -> None:
    chunks = chunk_specs(SPEC, FIRST, SNAPSHOT_DAY - timedelta(days=1), chunk_days=7)
    days = [d for chunk_days, _ in chunks for d in chunk_days]
    assert days == [FIRST + timedelta(days=k) for k in range(83)]
    assert {c.growth_anchor for _, c in chunks} == {SPEC.start}
    assert [len(d) for d, _ in chunks] == [7] * 11 + [6]


def test_day_rows_are_what_the_nightly_run_stores() -> None:
    snapshot = snapshot_cluster().snapshot
    day = SNAPSHOT_DAY + timedelta(days=3)
    result = run_nightly(snapshot, NightlySettings(day=day))
    pools, workloads = day_rows(snapshot, day)
    pd.testing.assert_frame_equal(pools, result.pool_days)
    pd.testing.assert_frame_equal(workloads, result.workload_days)


def test_history_holds_90_consecutive_days_of_every_pool(history: Path) -> None:
    pools = read_pools(history)
    days = sorted({pd.Timestamp(d).date() for d in pools["day"]})
    assert days == [FIRST + timedelta(days=k) for k in range(90)]
    assert (
        pools.groupby("day")["pool"].apply(set) == {"general", "compute", "memory", "gpu"}
    ).all()
    # the step shows: 24 hourly samples a coarse day, 288 five-minute ones a snapshot day
    coarse = pools["day"] < pd.Timestamp(SNAPSHOT_DAY, tz="UTC")
    assert set(pools.loc[coarse, "used_samples"]) == {24}
    assert set(pools.loc[~coarse, "used_samples"]) == {288}
    workloads = read_workloads(history)
    assert len(workloads) > 0 and workloads["day"].nunique() == 90
    # no impossible value: requests within allocatable, usage p95 ≤ max, shares of a whole ≤ 1
    assert (pools["memory_requested_peak_bytes"] <= pools["memory_allocatable_peak_bytes"]).all()
    assert (pools["cpu_used_p95_millicores"] <= pools["cpu_used_max_millicores"]).all()
    assert pools.drop(columns=["day", "pool", "largest_node"]).notna().all().all()


def test_memory_pool_requests_grow_at_the_configured_rate(history: Path) -> None:
    """Its only app workload is the session caches (+15 %/month); the fitted monthly growth of its
    requested memory must be 15 % within 2 points: the replica counts are whole (about 30 pods in a
    few StatefulSets at 50 nodes) and the DaemonSet's requests do not grow."""
    requested = _pool_series(read_pools(history), "memory", "memory_requested_mean_bytes")
    slope = np.polyfit(np.arange(len(requested)), np.log(requested.to_numpy()), 1)[0]
    monthly = math.expm1(slope * 30)
    assert 0.13 <= monthly <= 0.17, monthly
    # the pools free to anyone grow too, but slower (+3 %/month, renderer +20 % on a small share)
    for pool in ("general", "compute"):
        cpu = _pool_series(read_pools(history), pool, "cpu_requested_mean_millicores")
        slope = np.polyfit(np.arange(len(cpu)), np.log(cpu.to_numpy()), 1)[0]
        assert 0.01 <= math.expm1(slope * 30) <= 0.08, pool


def _exhaustion(pools: pd.DataFrame, pool: str, resource: str) -> date | None:
    unit = "millicores" if resource == "cpu" else "bytes"
    requested = _pool_series(pools, pool, f"{resource}_requested_mean_{unit}")
    allocatable = _pool_series(pools, pool, f"{resource}_allocatable_mean_{unit}")
    largest = _pool_series(pools, pool, f"largest_node_{resource}_allocatable_{unit}")
    found = forecast(requested, allocatable - largest, horizon_days=180)
    return found.exhaustion.expected_date


def test_the_memory_pool_runs_out_within_the_horizon_and_the_gpu_pool_does_not(
    history: Path,
) -> None:
    """The review's N+1 rule (requested vs allocatable minus the largest node, 180 days): the
    memory pool starts the snapshot with 3 session caches of 12 GiB per 58 GiB node (62 %) and
    gains 15 %/month, so it crosses 90 % (10 nodes, one in reserve) in about 3–4 months; the GPU
    pool holds about 15 % of its cpu and memory."""
    pools = read_pools(history)
    ran_out = _exhaustion(pools, "memory", "memory")
    assert ran_out is not None and LAST < ran_out <= LAST + timedelta(days=180)
    for resource in ("cpu", "memory"):
        assert _exhaustion(pools, "gpu", resource) is None


def test_usage_dips_on_weekends(history: Path) -> None:
    """App pods lose 30 % of their cpu on Saturdays and Sundays; they are most of the nodes' cpu,
    so the cluster's weekend days average well below its weekdays (growth is spread evenly over
    both, weekends being every seventh and sixth day)."""
    pools = read_pools(history)
    total = pools.groupby("day")["cpu_used_avg_millicores"].sum()
    weekend = pd.DatetimeIndex(total.index).day_of_week >= 5
    ratio = total[weekend].mean() / total[~weekend].mean()
    assert ratio < 0.85, ratio
    assert ratio > 0.70 - 0.05  # no more than the dip itself (node overhead does not dip)


def test_coarse_and_detailed_days_join_without_a_step_in_requested(history: Path) -> None:
    """The last coarse day (1 h step, its own chunk) and the first snapshot day (5 min) are the same
    cluster a day apart: their requested may differ no more than consecutive coarse days do."""
    pools = read_pools(history)
    last_coarse = pd.Timestamp(SNAPSHOT_DAY - timedelta(days=1))
    for pool in ("general", "compute", "memory", "gpu"):
        for column in ("cpu_requested_mean_millicores", "memory_requested_mean_bytes"):
            series = _pool_series(pools, pool, column)
            coarse = series[series.index <= last_coarse]
            usual = coarse.pct_change().abs().dropna()
            join = abs(series[pd.Timestamp(SNAPSHOT_DAY)] / coarse.iloc[-1] - 1)
            assert join <= usual.max(), (pool, column, join, usual.max())


def test_over_requesting_teams_use_a_small_share_of_their_requests(history: Path) -> None:
    """renderer (media) requests 750m a pod (500m + the Kata overhead) and uses about a tenth;
    web-frontend (shop) requests 300m and uses about a third to a half."""
    workloads = read_workloads(history)
    deployments = workloads[workloads["owner_kind"] == "Deployment"]
    share = deployments["cpu_used_p95_millicores"] / deployments["cpu_request_millicores"]
    media = share[deployments["namespace"] == "media"]
    web = share[deployments["owner_name"].str.startswith("web-frontend")]
    assert len(media) and len(web)
    assert media.median() < 0.2 < 0.3 < web.median()


def test_demo_writes_history_days_before_its_nightly_days(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--nodes", "12", "--days", "2", "--step", "600"]
    # other settings than the default demo's (and --regenerate-history, accepted): generated
    # by this run, so neither the terminal nor the history's record says "shipped"
    run = CliRunner().invoke(
        main, [*args, "--history-days", "10", "--regenerate-history"], catch_exceptions=False
    )
    assert run.exit_code == 0, run.output
    assert "history:       10 day(s)" in run.output
    assert "shipped" not in run.output
    [span] = json.loads((out / "reports" / "history" / "generated.json").read_text())["spans"]
    assert "note" not in span and span["step_seconds"] == 3600
    pools = read_pools(out / "reports" / "history")
    days = sorted({pd.Timestamp(d).date() for d in pools["day"]})
    assert days == [date(2026, 10, 24) + timedelta(days=k) for k in range(10)]
    samples = pools.groupby("day")["used_samples"].max().to_list()
    assert samples == [24] * 8 + [144] * 2  # 1 h before the snapshot, then its 10-minute step
    # the nightly reports and their index cover the snapshot's days only
    summaries = sorted(p.stem for p in (out / "reports" / "history" / "summary").glob("*.json"))
    assert summaries == ["2026-11-01", "2026-11-02"]
    report = json.loads((out / "reports" / "2026-11-01" / "report.json").read_text())
    assert report["previous_day"] is None


def test_growth_is_off_unless_asked() -> None:
    spec = replace(SPEC, growth=(), fast_growth=())
    assert not spec.grows and SPEC.grows
    assert spec.growth_rate("search", None) == 0.0
    assert SPEC.growth_rate("session-cache", "memory") == 0.15
    assert SPEC.growth_rate("renderer", None) == 0.20
    assert SPEC.growth_rate("web-frontend", None) == 0.03


def test_the_synthetic_days_record_headroom_per_pod_shape(history: Path) -> None:
    """Every coarse day has the chunk's three common shapes (docs/headroom.md), whole counts,
    and the day's fewest never above its last point's (the fewest is over points that include
    it); the snapshot days, written here without it, have none."""
    frame = read_headroom(history)
    days = sorted({pd.Timestamp(d).date() for d in frame["day"]})
    assert days == [FIRST + timedelta(days=k) for k in range(83)]
    assert (frame.groupby("day").size() == 3).all()
    assert (frame["copies_min"] >= 0).all()
    assert (frame["copies_min"] <= frame["copies_now"]).all()
    assert set(frame["source"]) == {"common"}


def test_rollouts_set_apart_from_churn_change_the_rollouts_only() -> None:
    """``rollouts`` replaces ``churn`` as the Deployments' rollout rate only (the demo's coarse
    days may roll out less, docs/monthly.md "The demo"): at the churn's own value it is the same
    cluster; at 0
    every Deployment keeps its one ReplicaSet, while the hourly CronJob still runs every hour
    (48 Jobs over 2 days) and the ETL Jobs still arrive."""
    base = SyntheticSpec(seed=3, nodes=8, days=2, step=3600, churn=0.5)
    pods = generate(base).snapshot.pods
    same = generate(replace(base, rollouts=0.5)).snapshot.pods
    pd.testing.assert_frame_equal(pods, same)
    still = generate(replace(base, rollouts=0.0)).snapshot.pods
    for frame, rolled in ((pods, True), (still, False)):
        deployments = frame[frame["workload_kind"] == "Deployment"]
        sets = deployments.groupby("workload_name")["owner_name"].nunique()
        assert bool(sets.max() > 1) == rolled
        crons = frame[frame["workload_kind"] == "CronJob"]["owner_name"].nunique()
        assert crons == 48
        assert (frame["workload_kind"] == "Job").sum() > 0
    assert "rollouts" not in generate(base).snapshot.meta.extra["generator"]
    with pytest.raises(InputError, match=r"rollouts: -1.0 must be >= 0"):
        SyntheticSpec(rollouts=-1.0)

"""NodeMetric aggregates: percentile rules, windows, cold-start rule, rollups, NodeMetric export."""

from __future__ import annotations

import io
import json
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from h4_snapshots import GI, T0, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import write_snapshot
from analyzer.usage.aggregate import (
    daily_rollups,
    rolling_aggregates,
    to_nodemetrics,
    window_aggregates,
)
from analyzer.usage.grid import STATS
from analyzer.usage.koord import koord_priority_class, koord_qos
from analyzer.usage.percentiles import STAT_QUANTILES, nearest_rank_index, quantile

MIN = timedelta(minutes=1)


def _value(frame: pd.DataFrame, **where: object) -> float:
    rows = frame
    for key, value in where.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, where
    return float(rows["value"].iloc[0])


def test_koordlet_nearest_rank_vector() -> None:
    # research/koordinator.md §4: 9 samples 0..800 → p90 = 700, p50 = 300.
    samples = [800, 0, 500, 100, 700, 200, 600, 300, 400]
    assert quantile(samples, 0.9) == 700
    assert quantile(samples, 0.5) == 300
    # idx = int(9 * 0.95) - 1 = 7 and int(9 * 0.99) - 1 = 7: both the 8th smallest.
    assert quantile(samples, 0.95) == 700
    assert quantile(samples, 0.99) == 700


def test_nearest_rank_index_clamps_and_truncates() -> None:
    # int(1 * 0.5) - 1 = -1 → clamped to 0; int(100 * 0.99) - 1 = 98; int(10 * 0.5) - 1 = 4.
    assert nearest_rank_index(1, 0.5) == 0
    assert nearest_rank_index(100, 0.99) == 98
    assert nearest_rank_index(10, 0.5) == 4


def test_linear_matches_numpy_default_quantile() -> None:
    rng = np.random.default_rng(7)
    samples = rng.uniform(0, 4000, size=37)
    for q in (0.5, 0.9, 0.95, 0.99):
        assert quantile(samples, q, "linear") == pytest.approx(np.quantile(samples, q), rel=1e-12)


def test_window_aggregates_on_nine_samples() -> None:
    snap = build(
        nodes=[{"node": "n1"}], node_usage={"n1": [0, 100, 200, 300, 400, 500, 600, 700, 800]}
    )
    frame = window_aggregates(
        snap.node_usage, at=snap.end, durations=[9 * MIN], method="nearest-rank"
    )
    assert _value(frame, resource="cpu", stat="p90") == 700
    assert _value(frame, resource="cpu", stat="p50") == 300
    assert _value(frame, resource="cpu", stat="avg") == 400
    assert _value(frame, resource="memory", stat="p99") == GI
    assert set(frame["samples"]) == {9}
    assert not frame["missing"].any()
    linear = window_aggregates(snap.node_usage, at=snap.end, durations=[9 * MIN], method="linear")
    # Linear rank 0.9 * 8 = 7.2 → 700 + 0.2 * 100 = 720; p50 rank 4 → 400.
    assert _value(linear, resource="cpu", stat="p90") == pytest.approx(720)
    assert _value(linear, resource="cpu", stat="p50") == pytest.approx(400)


def test_window_is_half_open_at_the_start() -> None:
    # Samples at 1..9 min; a 3-minute window ending at 9 min holds 7, 8, 9 min (not 6 min).
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [10, 20, 30, 40, 50, 60, 70, 80, 90]})
    frame = window_aggregates(snap.node_usage, at=snap.end, durations=[3 * MIN])
    assert _value(frame, resource="cpu", stat="avg") == 80
    assert int(frame["samples"].iloc[0]) == 3


def test_half_covered_window_is_missing_not_guessed() -> None:
    # 10-minute window: 4 samples cover 4 min < 5 → missing; 5 samples cover exactly half → kept.
    four = build(nodes=[{"node": "n1"}], node_usage={"n1": [None] * 6 + [10, 20, 30, 40]})
    frame = window_aggregates(four.node_usage, at=four.end, durations=[10 * MIN])
    assert frame["missing"].all()
    assert frame["value"].isna().all()
    assert set(frame["samples"]) == {4}
    five = build(nodes=[{"node": "n1"}], node_usage={"n1": [None] * 5 + [10, 20, 30, 40, 50]})
    frame = window_aggregates(five.node_usage, at=five.end, durations=[10 * MIN])
    assert not frame["missing"].any()
    assert _value(frame, resource="cpu", stat="avg") == 30


def test_gaps_are_absent_not_zero() -> None:
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [100, None, 300, None, 500, 600]})
    frame = window_aggregates(snap.node_usage, at=snap.end, durations=[6 * MIN])
    # Four samples (4 min ≥ 3 min): mean of 100, 300, 500, 600.
    assert _value(frame, resource="cpu", stat="avg") == 375
    assert int(frame["samples"].iloc[0]) == 4


def test_bad_duration_is_input_error() -> None:
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [1, 2]})
    with pytest.raises(InputError, match="durations"):
        window_aggregates(snap.node_usage, at=snap.end, durations=[timedelta(0)])


def test_rolling_equals_a_window_at_every_point() -> None:
    rng = np.random.default_rng(3)
    values = list(rng.uniform(0, 1000, size=40))
    values[17] = None
    snap = build(
        nodes=[{"node": "n1"}, {"node": "n2"}], node_usage={"n1": values, "n2": values[::-1]}
    )
    for stat, method in (("p95", "nearest-rank"), ("p90", "linear"), ("avg", "nearest-rank")):
        rolled = rolling_aggregates(snap.node_usage, duration=7 * MIN, stat=stat, method=method)
        for at in (T0 + 3 * MIN, T0 + 4 * MIN, T0 + 20 * MIN, snap.end):
            single = window_aggregates(snap.node_usage, at=at, durations=[7 * MIN], method=method)
            for node in ("n1", "n2"):
                expected = _value(single, node=node, resource="cpu", stat=stat)
                got = rolled[(rolled["node"] == node) & (rolled["timestamp"] == at)]["cpu"].iloc[0]
                if np.isnan(expected):
                    assert np.isnan(got)
                else:
                    assert got == pytest.approx(expected, rel=1e-12)


def test_daily_rollups_values_and_requested() -> None:
    # Hourly samples over two days: day 1 all 1000m, day 2 all 3000m. A 2-cpu pod runs from
    # 12:00 on day 1 to 12:00 on day 2: half of each day → time-averaged 1000m requested on both.
    usage = [1000.0] * 24 + [3000.0] * 24
    snap = build(
        nodes=[{"node": "n1", "pool": "web"}],
        pods=[
            {
                "cpu": 2000,
                "scheduled": T0 + pd.Timedelta("12h"),
                "finished": T0 + pd.Timedelta("36h"),
            }
        ],
        node_usage={"n1": usage},
        step="1h",
    )
    rollups = daily_rollups(snap)
    day1 = rollups[(rollups["day"] == T0) & (rollups["resource"] == "cpu")]
    day2 = rollups[(rollups["day"] == T0 + pd.Timedelta("1D")) & (rollups["resource"] == "cpu")]
    assert set(day1["value"]) == {1000.0}  # the sample at midnight ends day 1
    assert set(day2["value"]) == {3000.0}
    assert day1["requested"].iloc[0] == pytest.approx(1000)
    assert day2["requested"].iloc[0] == pytest.approx(1000)
    assert set(rollups["allocatable"][rollups["resource"] == "cpu"]) == {4000}
    assert set(rollups["pool"]) == {"web"}
    assert len(rollups) == 2 * 2 * 5  # days × resources × stats
    assert not rollups["missing"].any()


def test_pods_running_at_the_end_stay_open() -> None:
    snap = build(nodes=[{"node": "n1"}], pods=[{}], node_usage={"n1": [1, 2, 3]})
    intervals = pod_intervals(snap)
    assert intervals["end"].iloc[0] > snap.end


def test_nodemetric_export_shape() -> None:
    snap = build(
        nodes=[{"node": "n1"}],
        pods=[
            {"name": "web", "qos_class": "Burstable"},
            {"name": "batch", "qos_class": "BestEffort", "cpu": 0, "memory": 0},
            {"name": "mid", "priority": 7500},
            {"name": "free", "labels": {"koordinator.sh/priority-class": "koord-free"}},
        ],
        node_usage={"n1": [0, 100, 200, 300, 400, 500, 600, 700, 800]},
        pod_usage={"u0": [10, 10, 10, 10, 10, 20, 20, 20, 20], "u1": [5] * 9},
    )
    aggregates = window_aggregates(snap.node_usage, at=snap.end, durations=[5 * MIN, 30 * MIN])
    (nodemetric,) = to_nodemetrics(snap, aggregates, at=snap.end)
    assert nodemetric["apiVersion"] == "slo.koordinator.sh/v1alpha1"
    assert nodemetric["kind"] == "NodeMetric"
    assert nodemetric["metadata"]["name"] == "n1"
    status = nodemetric["status"]
    assert status["updateTime"] == "2026-11-01T00:09:00Z"
    # nodeUsage: mean of the last 5 samples 400..800 = 600m.
    assert status["nodeMetric"]["nodeUsage"]["resources"] == {"cpu": "600m", "memory": str(GI)}
    five, thirty = status["nodeMetric"]["aggregatedNodeUsages"]
    assert five["duration"] == "5m0s"
    assert thirty["duration"] == "30m0s"
    # 5 samples 400..800: nearest-rank p90 idx int(4.5) - 1 = 3 → 700; p50 idx int(2.5) - 1 = 1 → 500.
    assert five["usage"]["p90"]["resources"]["cpu"] == "700m"
    assert five["usage"]["p50"]["resources"]["cpu"] == "500m"
    # 9 minutes of data cannot cover half of 30 minutes: left empty as koordlet does.
    assert all(entry["resources"] == {} for entry in thirty["usage"].values())
    pods = {p["name"]: p for p in status["podsMetric"]}
    assert set(pods) == {"web", "batch"}  # only pods with usage samples are reported
    # Samples at 5..9 min: 10, 20, 20, 20, 20 → mean 18m (memory in the fixture = cpu × 1000).
    assert pods["web"]["podUsage"]["resources"] == {"cpu": "18m", "memory": "18000"}
    assert pods["web"]["priority"] == "koord-prod"
    assert pods["web"]["qos"] == "LS"
    assert pods["batch"]["priority"] == "koord-batch"
    assert pods["batch"]["qos"] == "BE"


def test_koordinator_priority_bands() -> None:
    snap = build(
        nodes=[{"node": "n1"}],
        pods=[
            {"qos_class": "Guaranteed"},  # LSR → prod
            {"qos_class": "BestEffort"},  # BE → batch
            {"priority": 7000, "qos_class": "Guaranteed"},  # mid by priority
            {"priority": 5999},  # batch by priority
            {"priority": 3500},  # free
            {"priority": 10000, "qos_class": "BestEffort"},  # outside the bands → by QoS
            {"labels": {"koordinator.sh/priority-class": "koord-batch"}, "priority": 9500},
            {"labels": {"koordinator.sh/qosClass": "BE"}, "qos_class": "Guaranteed"},
        ],
    )
    classes = list(koord_priority_class(snap.pods))
    assert classes == [
        "koord-prod", "koord-batch", "koord-mid", "koord-batch", "koord-free", "koord-batch",
        "koord-batch", "koord-batch",
    ]  # fmt: skip
    assert list(koord_qos(snap.pods))[:2] == ["LSR", "BE"]
    assert list(koord_qos(snap.pods))[-1] == "BE"


def test_aggregates_match_the_generator_ground_truth() -> None:
    from analyzer.sources import SyntheticSpec, generate

    cluster = generate(SyntheticSpec(seed=5, nodes=8, days=1, step=300))
    snap = cluster.snapshot
    durations = [timedelta(hours=1), timedelta(days=1)]
    nearest = window_aggregates(snap.node_usage, at=snap.end, durations=durations)
    linear = window_aggregates(snap.node_usage, at=snap.end, durations=durations, method="linear")
    assert not nearest["missing"].any()
    for i, node in enumerate(cluster.nodes):
        for duration in durations:
            points = int(duration.total_seconds()) // 300  # the window (end - d, end]
            for resource, truth in (
                ("cpu", cluster.usage.node_cpu),
                ("memory", cluster.usage.node_memory),
            ):
                window = np.sort(truth[i, -points:].astype(np.float64))
                where = {
                    "node": node.name,
                    "resource": resource,
                    "duration": pd.Timedelta(duration),
                }
                assert _value(nearest, stat="avg", **where) == pytest.approx(
                    window.mean(), rel=1e-12
                )
                # koordlet: the (int(n × 0.95) − 1)-th smallest.
                assert _value(nearest, stat="p95", **where) == window[int(points * 0.95) - 1]
                assert _value(linear, stat="p99", **where) == pytest.approx(
                    np.quantile(window, 0.99), rel=1e-12
                )


@pytest.mark.prometheus
def test_linear_aggregates_agree_with_prometheus(
    prometheus_from_openmetrics: Any, tmp_path: Path
) -> None:
    """``linear`` on a snapshot == Prometheus ``quantile_over_time``/``avg_over_time`` on a subquery."""
    import small_cluster as sc

    server = prometheus_from_openmetrics(sc.write_small_cluster(tmp_path / "small.om"))
    start = pd.Timestamp(sc.T0, unit="s", tz="UTC")
    ks = range(1, sc.K)  # k = 0 has no rate
    snap = build(
        nodes=[{"node": node} for node in sc.NODES],
        node_usage={n: [sc.expected_node_cpu(n, k) for k in ks] for n in sc.NODES},
        memory_usage={n: [float(sc.expected_node_memory(n, k)) for k in ks] for n in sc.NODES},
        start=start,
    )
    assert snap.end == pd.Timestamp(sc.END, unit="s", tz="UTC")
    expressions = {
        "cpu": '1000 * sum by (instance) (irate(node_cpu_seconds_total{mode!~"idle|iowait|steal"}[2m]))',
        "memory": "max by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)",
    }
    durations = [timedelta(minutes=5), timedelta(minutes=10), timedelta(minutes=30)]
    ours = window_aggregates(snap.node_usage, at=snap.end, durations=durations, method="linear")
    for duration in durations:
        # Prometheus 2.x ranges include the left end; 1 s less gives the window (end - d, end].
        seconds = int(duration.total_seconds()) - 1
        for resource, expr in expressions.items():
            for stat in STATS:
                inner = f"({expr})[{seconds}s:1m]"
                query = (
                    f"avg_over_time({inner})"
                    if stat == "avg"
                    else f"quantile_over_time({STAT_QUANTILES[stat]}, {inner})"
                )
                theirs = _prom_query(server.url, query, sc.END)
                assert set(theirs) == set(sc.NODES)
                for node, value in theirs.items():
                    where = {"node": node, "resource": resource, "duration": pd.Timedelta(duration)}
                    assert _value(ours, stat=stat, **where) == pytest.approx(value, rel=1e-9), (
                        node, resource, duration, stat,
                    )  # fmt: skip


def _prom_query(url: str, query: str, at: int) -> dict[str, float]:
    params = urllib.parse.urlencode({"query": query, "time": str(at)})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=30) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return {r["metric"]["instance"]: float(r["value"][1]) for r in body["data"]["result"]}


@pytest.mark.prometheus
def test_cli_aggregate_straight_from_prometheus(
    prometheus_from_openmetrics: Any, tmp_path: Path
) -> None:
    import small_cluster as sc

    server = prometheus_from_openmetrics(sc.write_small_cluster(tmp_path / "small.om"))
    end = pd.Timestamp(sc.END, unit="s", tz="UTC").isoformat()
    args = ["aggregate", "--prometheus", server.url, "--at", end, "--durations", "30m,2h"]
    out = CliRunner().invoke(main, [*args, "--format", "csv"])
    assert out.exit_code == 0, out.output
    rows = pd.read_csv(io.StringIO(out.output))
    avg = rows[(rows["stat"] == "avg") & (rows["duration"] == "30m")].set_index(
        ["node", "resource"]
    )
    # k = 31..60: node-a cycles 1500/1700/1900m ten times each → 1700m; node-b 1600m flat;
    # node-a memory GI + k MiB → GI + 45.5 MiB on average.
    assert avg.loc[("node-a", "cpu"), "value"] == pytest.approx(1700)
    assert avg.loc[("node-b", "cpu"), "value"] == pytest.approx(1600)
    assert avg.loc[("node-a", "memory"), "value"] == pytest.approx(sc.GI + 45.5 * sc.MI)
    # 60 one-minute samples cover exactly half of 2h: kept (only less than half is missing).
    assert not rows[rows["duration"] == "2h"]["missing"].any()
    yaml_out = CliRunner().invoke(main, args)
    assert yaml_out.exit_code == 0, yaml_out.output
    docs = list(yaml.safe_load_all(yaml_out.output))
    assert {d["metadata"]["name"] for d in docs} == set(sc.NODES)
    missing = CliRunner().invoke(main, ["aggregate"])
    assert missing.exit_code == 2


def test_cli_aggregate_formats(tmp_path: Path) -> None:
    snap = build(
        nodes=[{"node": "n1"}], node_usage={"n1": [0, 100, 200, 300, 400, 500, 600, 700, 800]}
    )
    path = write_snapshot(snap, tmp_path / "snap")
    runner = CliRunner()
    as_yaml = runner.invoke(main, ["aggregate", str(path), "--durations", "9m,1h"])
    assert as_yaml.exit_code == 0, as_yaml.output
    (doc,) = yaml.safe_load_all(as_yaml.stdout)  # stderr: the 1h window's warning
    nine, hour = doc["status"]["nodeMetric"]["aggregatedNodeUsages"]
    assert (nine["duration"], hour["duration"]) == ("9m0s", "1h0m0s")
    assert nine["usage"]["p90"]["resources"]["cpu"] == "700m"
    assert hour["usage"]["p90"]["resources"] == {}  # 9 min of data: under half an hour
    as_json = json.loads(runner.invoke(main, ["aggregate", str(path), "--format", "json"]).stdout)
    assert as_json["kind"] == "List"
    assert as_json["items"][0]["kind"] == "NodeMetric"
    csv = runner.invoke(
        main, ["aggregate", str(path), "--durations", "9m", "--format", "csv", "--method", "linear"]
    )
    rows = pd.read_csv(io.StringIO(csv.stdout))
    p90 = rows[(rows["resource"] == "cpu") & (rows["stat"] == "p90")]
    assert p90["value"].tolist() == [pytest.approx(720)]  # linear: 700 + 0.2 × 100
    assert set(rows["method"]) == {"linear"}
    assert set(rows["duration"]) == {"9m"}
    bad = runner.invoke(main, ["aggregate", str(path), "--durations", "5q"])
    assert bad.exit_code == 2
    assert "--durations" in bad.output

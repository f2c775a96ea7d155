"""Threshold violations: Go rounding, strict boundary, overrides, prod and aggregated thresholds."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from h4_snapshots import T0, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import write_snapshot
from analyzer.usage.thresholds import ANNOTATION, AggregatedThreshold, ThresholdConfig
from analyzer.usage.violations import find_violations, go_round, usage_percent

MIN = pd.Timedelta("1min")


def test_go_round_is_half_away_from_zero() -> None:
    values = np.array([64.5, 65.5, 2.5, -2.5, 0.49999999999999994, 64.49])
    # Python's round() would give 64, 66, 2, -2 (half to even); Go's math.Round does not.
    assert list(go_round(values)) == [65, 66, 3, -3, 0, 64]


def test_usage_percent_boundaries() -> None:
    alloc = np.array([4000.0])
    # 2600/4000 = 65 % exactly; 2580 → 64.5 → 65; 2620 → 65.5 → 66; 2619 → 65.475 → 65.
    got = [usage_percent(np.array([u]), alloc)[0] for u in (2600, 2580, 2620, 2619)]
    assert got == [65, 65, 66, 65]


def _flat(node_cpu: float, minutes: int = 10, **node: object) -> object:
    return build(nodes=[{"node": "n1", **node}], node_usage={"n1": [node_cpu] * minutes})


@pytest.mark.parametrize(
    ("used", "breach"),
    [(2600, False), (2580, False), (2620, True), (2619, False), (2700, True)],
)
def test_breach_iff_rounded_percent_strictly_above(used: float, breach: bool) -> None:
    result = find_violations(_flat(used), ThresholdConfig())
    assert (result.count > 0) is breach


def test_breach_run_times_and_summary() -> None:
    # 1-minute samples at 1..10 min; 5-minute averages exceed 65 % (2600m) from the point where
    # the hot samples dominate. Samples: 2000 ×4 then 4000 ×6.
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [2000] * 4 + [4000] * 6})
    result = find_violations(snap, ThresholdConfig())
    (breach,) = result.breaches.to_dict(orient="records")
    # 5m avg at 5 min = (2000*4+4000)/5 = 2400 (60 %); at 6 min = (2000*3+8000)/5 = 2800 (70 %).
    assert breach["kind"] == "instant"
    assert breach["resource"] == "cpu"
    assert breach["start"] == T0 + 5 * MIN  # the point at 6 min stands for (5, 6]
    assert breach["end"] == T0 + 10 * MIN
    assert breach["minutes"] == 5
    assert breach["peak_pct"] == 100
    assert breach["threshold"] == 65
    row = result.per_node.iloc[0]
    assert row["breaches"] == 1
    assert row["breach_minutes"] == 5
    assert row["worst_pct"] == 100
    assert row["max_cpu_pct"] == 100


def test_annotation_replaces_the_whole_section() -> None:
    # cpu at 90 % would breach 65, but the annotation's usageThresholds has only memory: cpu is
    # no longer checked on this node; memory 60 % breaches the annotation's 50.
    annotation = {ANNOTATION: json.dumps({"usageThresholds": {"memory": 50}})}
    snap = build(
        nodes=[
            {"node": "n1", "annotations": annotation, "memory": 100},
            {"node": "n2", "memory": 100},
        ],
        node_usage={"n1": [3600] * 5, "n2": [3600] * 5},
        memory_usage={"n1": [60] * 5, "n2": [60] * 5},
    )
    result = find_violations(snap, ThresholdConfig())
    by_node = dict(list(result.breaches.groupby("node")))
    assert list(by_node["n1"]["resource"]) == ["memory"]
    assert list(by_node["n1"]["threshold"]) == [50]
    assert list(by_node["n1"]["source"]) == ["annotation"]
    assert list(by_node["n2"]["resource"]) == ["cpu"]  # cluster: cpu 90 > 65, memory 60 ≤ 95
    assert set(result.per_node["source"]) == {"annotation", "cluster"}
    json.dumps(result.to_dict())  # every number serialisable for the report's JSON


def test_config_node_thresholds_and_annotation_precedence() -> None:
    annotation = {ANNOTATION: json.dumps({"usageThresholds": {"cpu": 95}})}
    snap = build(
        nodes=[{"node": "n1", "annotations": annotation}, {"node": "n2"}],
        node_usage={"n1": [3000] * 5, "n2": [3000] * 5},  # 75 %
    )
    overrides = {"n1": {"usageThresholds": {"cpu": 10}}, "n2": {"usageThresholds": {"cpu": 80}}}
    config = ThresholdConfig.from_config({"node_thresholds": overrides})
    result = find_violations(snap, config)
    # n1: the annotation (95) wins over node_thresholds (10); n2: node_thresholds 80 → no breach.
    assert result.count == 0
    assert list(result.per_node["source"]) == ["annotation", "node_thresholds"]


def test_invalid_annotation_keeps_cluster_thresholds_and_warns() -> None:
    snap = build(
        nodes=[{"node": "n1", "annotations": {ANNOTATION: "{not json"}}],
        node_usage={"n1": [3000] * 5},
    )
    result = find_violations(snap, ThresholdConfig())
    assert result.count == 1  # 75 % > 65
    assert result.warnings and "not valid JSON" in result.warnings[0]
    # A fractional percent is not an int64 in Go's JSON: the annotation is ignored too.
    bad = {ANNOTATION: json.dumps({"usageThresholds": {"cpu": 80.5}})}
    snap = build(nodes=[{"node": "n1", "annotations": bad}], node_usage={"n1": [3000] * 5})
    assert find_violations(snap, ThresholdConfig()).count == 1


def test_prod_thresholds_use_prod_pods_usage_only() -> None:
    # Node 4000m: a prod (Burstable, no priority) pod uses 1500m, a BestEffort (batch) pod 2000m.
    # prod % = 1500/4000 = 37.5 → 38.
    snap = build(
        nodes=[{"node": "n1"}],
        pods=[{"uid": "prod"}, {"uid": "batch", "qos_class": "BestEffort", "cpu": 0, "memory": 0}],
        node_usage={"n1": [3600] * 6},
        pod_usage={"prod": [1500] * 6, "batch": [2000] * 6},
    )
    cluster_off = {"cpu": 0, "memory": 0}
    result = find_violations(snap, ThresholdConfig(usage=cluster_off, prod={"cpu": 37}))
    (breach,) = result.breaches.to_dict(orient="records")
    assert breach["kind"] == "prod"
    assert breach["peak_pct"] == 38
    assert find_violations(snap, ThresholdConfig(usage=cluster_off, prod={"cpu": 38})).count == 0


def test_aggregated_threshold_along_the_period() -> None:
    # Two 3000m samples (at 4 and 5 min) among 1000s: the 5m average peaks at 1800m (45 %), but
    # the 5m p95 (nearest-rank idx int(5 × 0.95) − 1 = 3, the 4th smallest of 5) is 3000m (75 %)
    # while both spikes are inside the window.
    usage = [1000, 1000, 1000, 3000, 3000, 1000, 1000, 1000, 1000, 1000]
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": usage})
    agg = AggregatedThreshold({"cpu": 65}, "p95", timedelta(minutes=5))
    result = find_violations(snap, ThresholdConfig(usage={"cpu": 65}, aggregated=agg))
    (breach,) = result.breaches.to_dict(orient="records")
    assert breach["kind"] == "aggregated"
    assert breach["stat"] == "p95"
    assert breach["window"] == "5m"
    # Windows ending at 5..8 min hold both 3000s; at 4 min (n = 4, idx int(3.8) − 1 = 2) and
    # 9 min (one spike) the 4th/3rd smallest is 1000. The point at 5 min stands for (4, 5].
    assert breach["start"] == T0 + 4 * MIN
    assert breach["end"] == T0 + 8 * MIN
    assert breach["peak_pct"] == 75


def test_aggregated_cold_start_is_not_a_breach() -> None:
    # Only 2 samples (2 min < half of 5 min): the aggregated value is missing, never a breach.
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [4000, 4000]})
    agg = AggregatedThreshold({"cpu": 65}, "p95", timedelta(minutes=5))
    result = find_violations(snap, ThresholdConfig(usage={"cpu": 0}, aggregated=agg))
    assert result.count == 0


def test_threshold_config_from_file_sections() -> None:
    config = ThresholdConfig.from_config({"thresholds": {"cpu": 70}})
    assert dict(config.usage) == {"cpu": 70, "memory": 95}  # shorthand keeps other defaults
    config = ThresholdConfig.from_config({"thresholds": {"usageThresholds": {"cpu": 70}}})
    assert dict(config.usage) == {"cpu": 70}  # Koordinator form replaces the defaults
    config = ThresholdConfig.from_config(
        {"thresholds": {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p90",
                                       "usageAggregatedDuration": "30m0s"}}}
    )  # fmt: skip
    assert config.aggregated == AggregatedThreshold({"cpu": 60}, "p90", timedelta(minutes=30))
    with pytest.raises(InputError, match=r"thresholds\.cpu"):
        ThresholdConfig.from_config({"thresholds": {"cpu": 150}})
    with pytest.raises(InputError, match=r"node_thresholds\.n9"):
        ThresholdConfig.from_config({"node_thresholds": {"n9": {"usageThresholds": {"cpu": "x"}}}})


def test_cli_violations_formats_and_exit_codes(tmp_path: Path) -> None:
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [3000] * 6})
    path = write_snapshot(snap, tmp_path / "snap")
    runner = CliRunner()
    ok = runner.invoke(main, ["violations", str(path), "--format", "json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert len(data["breaches"]) == 1
    assert data["breaches"][0]["peak_pct"] == 75
    failing = runner.invoke(main, ["violations", str(path), "--fail-on-violations"])
    assert failing.exit_code == 4
    raised = runner.invoke(main, ["violations", str(path), "--cpu", "80", "--fail-on-violations"])
    assert raised.exit_code == 0
    config = tmp_path / "analyzer.yaml"
    config.write_text("thresholds:\n  cpu: 80\n")
    from_file = runner.invoke(
        main, ["--config", str(config), "violations", str(path), "--fail-on-violations"]
    )
    assert from_file.exit_code == 0, from_file.output
    flag_wins = runner.invoke(
        main,
        ["--config", str(config), "violations", str(path), "--cpu", "70", "--fail-on-violations"],
    )
    assert flag_wins.exit_code == 4
    bad = runner.invoke(main, ["violations", str(path), "--aggregated", "p42:5m"])
    assert bad.exit_code == 2
    assert "--aggregated" in bad.output


def test_generator_hot_nodes_are_found() -> None:
    from analyzer.sources import SyntheticSpec, generate

    cluster = generate(SyntheticSpec(seed=3, nodes=12, days=1, step=300, hot_nodes=0.2))
    assert cluster.hot_nodes  # the generator promises hot nodes above 65 % cpu for hours
    result = find_violations(cluster.snapshot, ThresholdConfig())
    per_node = result.per_node.set_index("node")
    for node in cluster.hot_nodes:
        assert per_node.loc[node, "breach_minutes"] >= 60
        assert per_node.loc[node, "max_cpu_pct"] > 65
    # Every breach row is consistent with its node summary.
    for node, rows in result.breaches.groupby("node"):
        assert per_node.loc[node, "worst_pct"] == rows["peak_pct"].max()
        assert (rows["peak_pct"] > rows["threshold"]).all()


def test_a_data_gap_splits_a_breach() -> None:
    # Samples at 1–3 and 14–16 min. The 5-minute nodeUsage at t averages the samples in
    # (t − 5m, t]: points 4–7 still see samples 1–3, points 8–13 see none (not evaluated).
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [3000] * 3 + [None] * 10 + [3000] * 3})
    result = find_violations(snap, ThresholdConfig())
    first, second = result.breaches.to_dict(orient="records")
    assert (first["start"], first["end"]) == (T0, T0 + 7 * MIN)
    assert (second["start"], second["end"]) == (T0 + 13 * MIN, T0 + 16 * MIN)
    assert result.per_node["breach_minutes"].iloc[0] == 7 + 3


def test_long_windows_on_a_stride_still_find_the_breach(monkeypatch: pytest.MonkeyPatch) -> None:
    import analyzer.usage.violations as violations

    # Force evaluation every 3rd point (the last point always included): 12 points → 2, 5, 8, 11.
    monkeypatch.setattr(violations, "MAX_WINDOW_ELEMENTS", 12 * 2 // 3 + 1)
    snap = build(nodes=[{"node": "n1"}], node_usage={"n1": [1000] * 6 + [4000] * 6})
    agg = AggregatedThreshold({"cpu": 65}, "p50", timedelta(minutes=2))
    result = find_violations(snap, ThresholdConfig(usage={"cpu": 0}, aggregated=agg))
    (breach,) = result.breaches.to_dict(orient="records")
    # p50 of the 2 samples in (t − 2m, t] (idx int(1.0) − 1 = 0: the smaller) is 4000 from the
    # point at 8 min (samples 7, 8); evaluated points 9 and 12 min (indices 8, 11) breach; each
    # stands for the 3 minutes before it → (6, 12].
    assert (breach["start"], breach["end"]) == (T0 + 6 * MIN, T0 + 12 * MIN)
    assert breach["minutes"] == 6


def test_raw_allocatable_annotation_overrides_allocatable() -> None:
    # Koordinator EstimateNode: with amplification the raw allocatable (here 5 cpu) is the base.
    # 3000m of 4000m = 75 % breaches; of 5000m = 60 % does not. An invalid value is ignored.
    raw = {"node.koordinator.sh/raw-allocatable": json.dumps({"cpu": "5", "memory": "16Gi"})}
    bad = {"node.koordinator.sh/raw-allocatable": "{not json"}
    snap = build(
        nodes=[{"node": "n1", "annotations": raw}, {"node": "n2", "annotations": bad}],
        node_usage={"n1": [3000] * 5, "n2": [3000] * 5},
    )
    result = find_violations(snap, ThresholdConfig())
    assert list(result.breaches["node"]) == ["n2"]
    assert result.per_node.set_index("node").loc["n1", "max_cpu_pct"] == 60

"""Right-sizing recipes (analyzer/monthly/rightsize.py, docs/rightsizing.md) on hand-built
workload days, applying them to a snapshot, the YAML patches and the two commands.

Every expected value below is worked out by hand in the comment beside it from the published
rules: VPA's p90 + 15 % with bounds p50/p95 × (1 + 0.001/c)^-2 and × (1 + 1/c) for c days, krr's
CPU p95 and memory max × 1.15, krr's OOM bump (× 1.25 of the limit); results rounded up to whole
millicores and whole MiB. Nearest rank over n days takes the ⌊n·p⌋-th smallest value.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.core.workloads import apply_recommendations
from analyzer.history.capacity import write_tables
from analyzer.monthly.rightsize import COLUMNS, KRR, VPA, parse_recipe, recommend
from analyzer.monthly.rightsize_patches import patches_yaml
from analyzer.nightly.capacity_rollups import workload_days, workload_rollups

MIB = 2**20
GIB = 2**30
D0 = pd.Timestamp("2026-11-01T00:00:00Z")


def _day(
    i: int,
    *,
    name: str = "api",
    kind: str = "Deployment",
    cpu: tuple[float, float, float, float, float] = (10, 20, 30, 35, 40),
    mem_max: float = 300 * MIB,
    samples: int = 288,
    oom: float | None = None,
    cpu_request: float = 1000,
    memory_request: float = 2 * GIB,
    memory_limit: float = 0,
) -> dict[str, object]:
    """One workload-day row (history/capacity.py WORKLOAD_SCHEMA) for day D0 + i."""
    p50, p90, p95, p99, top = cpu
    return {
        "day": D0 + pd.Timedelta(days=i),
        "namespace": "shop",
        "owner_kind": kind,
        "owner_name": name,
        "pool": "general",
        "pods": 2,
        "replicas_mean": 2.0,
        "replicas_max": 2,
        "cpu_request_millicores": cpu_request,
        "cpu_limit_millicores": 0.0,
        "memory_request_bytes": memory_request,
        "memory_limit_bytes": memory_limit,
        "cpu_used_p50_millicores": p50,
        "cpu_used_p90_millicores": p90,
        "cpu_used_p95_millicores": p95,
        "cpu_used_p99_millicores": p99,
        "cpu_used_max_millicores": top,
        "memory_used_p99_bytes": mem_max,
        "memory_used_max_bytes": mem_max,
        "cpu_samples": samples,
        "restarts": None,
        "oom_kills": oom,
    }


def _frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def _one(recommendations: pd.DataFrame, name: str = "api") -> pd.Series:
    row: pd.Series = recommendations.set_index("owner_name").loc[name]
    return row


# ---------------------------------------------------------------- VPA


def test_vpa_one_day_bounds_are_wide() -> None:
    # One day: cpu p50 100, p90 200, p95 300 m; the memory peak 400 MiB. c = 1 day.
    rows = _frame([_day(0, cpu=(100, 200, 300, 350, 400), mem_max=400 * MIB)])
    row = _one(recommend(rows, VPA))
    assert row["days"] == 1 and row["skipped_reason"] == ""
    assert row["cpu_recommended_millicores"] == 230  # 200 × 1.15
    # lower: 100 × 1.15 × (1 + 0.001/1)^-2 = 115 / 1.002001; upper: 300 × 1.15 × (1 + 1/1)
    assert row["cpu_lower_bound_millicores"] == pytest.approx(115 / 1.002001)
    assert row["cpu_upper_bound_millicores"] == pytest.approx(690)
    # memory: p90 of one daily peak = 400 MiB × 1.15 = 460 MiB (above the observed 400 MiB)
    assert row["memory_recommended_bytes"] == 460 * MIB
    assert row["memory_upper_bound_bytes"] == pytest.approx(400 * MIB * 1.15 * 2)
    assert row["memory_lower_bound_bytes"] == pytest.approx(460 * MIB / 1.002001)


def test_vpa_eight_days_bounds_narrow() -> None:
    # Day i = 1..8: cpu p50 10i, p90 20i, p95 30i; memory peak 300 + 10i MiB (310..380).
    rows = _frame(
        [
            _day(i, cpu=(10 * i, 20 * i, 30 * i, 35 * i, 40 * i), mem_max=(300 + 10 * i) * MIB)
            for i in range(1, 9)
        ]
    )
    row = _one(recommend(rows, VPA))
    assert row["days"] == 8
    # cpu: the largest daily p90 is 160 → 184; p50 80 and p95 240 for the bounds, c = 8:
    assert row["cpu_recommended_millicores"] == 184
    assert row["cpu_lower_bound_millicores"] == pytest.approx(80 * 1.15 / 1.000125**2)
    assert row["cpu_upper_bound_millicores"] == pytest.approx(240 * 1.15 * 1.125)
    # memory over the 8 daily peaks by nearest rank: p90 = 7th smallest (⌊7.2⌋) = 370 MiB,
    # × 1.15 = 425.5 MiB → 426 MiB; p50 = 4th = 340 MiB; p95 = 7th (⌊7.6⌋) = 370 MiB.
    assert row["memory_recommended_bytes"] == 426 * MIB
    assert row["memory_lower_bound_bytes"] == pytest.approx(340 * MIB * 1.15 / 1.000125**2)
    assert row["memory_upper_bound_bytes"] == pytest.approx(370 * MIB * 1.15 * 1.125)
    # The upper bound's confidence factor falls from ×2 at one day to ×1.125 at eight.
    assert row["memory_basis_bytes"] == 370 * MIB


def test_vpa_floors_and_memory_never_below_the_observed_max() -> None:
    # Tiny usage: floors 25 m and 250 MiB. Then a spiky workload whose p90 of daily peaks
    # (× 1.15) stays below its largest peak: the observed max wins.
    tiny = _one(recommend(_frame([_day(0, cpu=(1, 2, 3, 4, 5), mem_max=10 * MIB)]), VPA))
    assert tiny["cpu_recommended_millicores"] == 25
    assert tiny["memory_recommended_bytes"] == 250 * MIB
    assert "cpu floor" in tiny["rules"]
    peaks = [300] * 9 + [900]  # MiB; p90 of 10 days = 9th smallest = 300 → 345 < 900
    spiky = _one(recommend(_frame([_day(i, mem_max=m * MIB) for i, m in enumerate(peaks)]), VPA))
    assert spiky["memory_recommended_bytes"] == 900 * MIB
    assert "observed max" in spiky["rules"]


# ---------------------------------------------------------------- krr


def test_krr_memory_max_plus_15_and_cpu_p95() -> None:
    # Daily memory peaks 1, 2, 1.5 GiB → 2 GiB × 1.15 = 2355.2 MiB → 2356 MiB.
    # Daily cpu p95 120, 80, 150 m → the largest, 150 m, no headroom.
    rows = _frame(
        [
            _day(0, cpu=(1, 2, 120, 130, 140), mem_max=1 * GIB),
            _day(1, cpu=(1, 2, 80, 90, 100), mem_max=2 * GIB),
            _day(2, cpu=(1, 2, 150, 160, 170), mem_max=1.5 * GIB),
        ]
    )
    row = _one(recommend(rows, KRR))
    assert row["memory_recommended_bytes"] == 2356 * MIB
    assert row["cpu_recommended_millicores"] == 150
    assert row["cpu_change_millicores"] == 150 - 1000
    assert row["cpu_change_pct"] == pytest.approx(-85.0)
    assert row["cpu_lower_bound_millicores"] is None or math.isnan(
        row["cpu_lower_bound_millicores"]
    )


def test_oom_bump_on_the_limit_and_without_one() -> None:
    # Peak 900 MiB, one OOM kill: krr gives max(900 × 1.15, 1.25 × limit).
    limited = _frame([_day(0, mem_max=900 * MIB, oom=1, memory_limit=1 * GIB)])
    row = _one(recommend(limited, KRR))
    assert row["memory_recommended_bytes"] == 1280 * MIB  # 1.25 × 1024 MiB > 1035 MiB
    assert row["oom"] == "OOM-killed: bumped" and row["oom_kills"] == 1
    # No limit: 1.25 × the observed 900 MiB = 1125 MiB.
    unlimited = _one(recommend(_frame([_day(0, mem_max=900 * MIB, oom=2)]), KRR))
    assert unlimited["memory_recommended_bytes"] == 1125 * MIB
    # Zero kills: no bump (1035 MiB); null kills: not exported, no bump either.
    none = _one(recommend(_frame([_day(0, mem_max=900 * MIB, oom=0, memory_limit=GIB)]), KRR))
    assert none["memory_recommended_bytes"] == 1035 * MIB and none["oom"] == "none"
    unknown = _one(recommend(_frame([_day(0, mem_max=900 * MIB)]), KRR))
    assert unknown["oom"] == "not exported" and pd.isna(unknown["oom_kills"])


# ---------------------------------------------------------------- guard, HPA, kinds


def test_guard_skips_with_the_reason() -> None:
    rows = _frame(
        [
            _day(0, name="short", samples=40),  # 40 < 100 samples
            _day(0, name="gone"),  # not on the window's last day
            _day(1, name="idle", samples=0),
            _day(1, name="ok"),
            _day(0, name="ok"),
            _day(1, name="short", samples=40),
        ]
    )
    out = recommend(rows, KRR)
    reasons = out.set_index("owner_name")["skipped_reason"]
    assert reasons["short"] == "80 usage samples, fewer than --min-samples 100"
    assert reasons["gone"].startswith("not running on 2026-11-02")
    assert reasons["idle"] == "no usage samples in the window"
    assert reasons["ok"] == ""
    skipped = out[out["skipped_reason"] != ""]
    assert skipped["cpu_recommended_millicores"].isna().all()
    assert skipped["memory_recommended_bytes"].isna().all()
    days = recommend(rows, KRR, min_days=3).set_index("owner_name")["skipped_reason"]
    assert days["ok"] == "2 day(s) of usage history, fewer than --min-days 3"
    # --days 1 keeps only the last day: "gone" disappears from the window.
    assert "gone" not in set(recommend(rows, KRR, days=1)["owner_name"])
    assert list(out.columns) == COLUMNS


def test_hpa_flagged_never_skipped() -> None:
    rows = _frame([_day(0), _day(0, name="web")])
    assert set(recommend(rows, KRR)["hpa"]) == {"unknown"}
    hpa = pd.DataFrame({"namespace": ["shop"], "owner_kind": ["Deployment"], "owner_name": ["web"]})
    flagged = recommend(rows, KRR, hpa=hpa).set_index("owner_name")
    assert flagged.loc["web", "hpa"] == "yes" and flagged.loc["api", "hpa"] == "no"
    assert flagged.loc["web", "skipped_reason"] == ""


# ---------------------------------------------------------------- recipe syntax


def test_percentile_recipe_parses_per_resource() -> None:
    recipe = parse_recipe("cpu=percentile:99,headroom:10; memory=percentile:max,headroom:15")
    assert recipe.cpu is not None and recipe.memory is not None
    assert (recipe.cpu.stat, recipe.cpu.headroom) == ("p99", pytest.approx(0.10))
    assert (recipe.memory.stat, recipe.memory.headroom) == ("max", pytest.approx(0.15))
    both = parse_recipe("percentile:99")  # no resource: both (memory keeps only 99 and max)
    assert both.cpu is not None and both.cpu.stat == "p99" and both.cpu.headroom == 0
    assert both.memory is not None and both.memory.stat == "p99"
    cpu_only = parse_recipe("cpu=percentile:90,headroom:20")
    assert cpu_only.memory is None
    # cpu p90 over days 100, 200 → 200 × 1.2 = 240; memory keeps its request (NaN).
    rows = _frame([_day(0, cpu=(1, 100, 1, 1, 1)), _day(1, cpu=(1, 200, 1, 1, 1))])
    row = _one(recommend(rows, cpu_only))
    assert row["cpu_recommended_millicores"] == 240
    assert math.isnan(row["memory_recommended_bytes"])


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("vpx", "'vpx' is not a recipe"),
        ("percentile:97", "percentile:97 is not kept for cpu"),
        ("memory=percentile:95", "percentile:95 is not kept for memory"),
        ("gpu=percentile:95", "'gpu' is not a resource"),
        ("cpu=percentile:95,headroom:-5", "headroom:-5 must be a percentage"),
        ("cpu=percentile:95,headroom:lots", "headroom:lots must be a percentage"),
        ("cpu=percentile:95;cpu=percentile:99", "cpu is given twice"),
        ("cpu=percentile:95,headroom:10,extra:1", "is not a recipe"),
        ("", "is not a recipe"),
    ],
)
def test_bad_recipes_fail_in_one_line(text: str, names: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_recipe(text)
    message = str(caught.value)
    assert message.startswith("--recipe: ") and names in message and "\n" not in message


# ---------------------------------------------------------------- a tiny snapshot

T0 = pd.Timestamp("2026-11-01T00:00:00Z")


def _snapshot() -> Snapshot:
    """Two 2000 m / 4 GiB nodes, one day at 5 min. Deployment web: two pods (one per node)
    requesting 1500 m / 1 GiB, limits 1600 m / 0, using 100 m / 500 MiB; a bare pod ``tool``
    (100 m / 100 MiB) on n1 using 50 m / 50 MiB."""
    end = T0 + pd.Timedelta(days=1)
    stamps = pd.date_range(T0 + pd.Timedelta(minutes=5), end, freq="5min")
    nodes = pd.DataFrame(
        {
            "node": ["n1", "n2"],
            "pool": "p",
            "labels": "{}",
            "annotations": "{}",
            "allocatable:cpu": 2000,
            "allocatable:memory": 4 * GIB,
            "allocatable:pods": 110,
            "capacity:cpu": 2000,
            "capacity:memory": 4 * GIB,
            "capacity:pods": 110,
        }
    )
    pods = pd.DataFrame(
        {
            "uid": ["u-web-1", "u-web-2", "u-tool"],
            "namespace": "shop",
            "name": ["web-1", "web-2", "tool"],
            "node": ["n1", "n2", "n1"],
            "owner_kind": ["ReplicaSet", "ReplicaSet", ""],
            "owner_name": ["web-5f", "web-5f", ""],
            "workload_kind": ["Deployment", "Deployment", ""],
            "workload_name": ["web", "web", ""],
            "priority": 0,
            "qos_class": "Burstable",
            "phase": "Running",
            "labels": "{}",
            "created": T0,
            "scheduled": T0,
            "started": T0,
            "requests:cpu": [1500, 1500, 100],
            "requests:memory": [GIB, GIB, 100 * MIB],
            "limits:cpu": [1600, 1600, 0],
            "limits:memory": 0,
            "nonzero_requests:cpu": [1500, 1500, 100],
            "nonzero_requests:memory": [GIB, GIB, 100 * MIB],
        }
    )
    usage = {
        "u-web-1": (100.0, 500 * MIB),
        "u-web-2": (100.0, 500 * MIB),
        "u-tool": (50.0, 50 * MIB),
    }
    pod_usage = pd.concat(
        [
            pd.DataFrame({"uid": uid, "timestamp": stamps, "cpu": cpu, "memory": float(mem)})
            for uid, (cpu, mem) in usage.items()
        ],
        ignore_index=True,
    )
    node_usage = pd.concat(
        [
            pd.DataFrame({"node": n, "timestamp": stamps, "cpu": c, "memory": float(m)})
            for n, c, m in (("n1", 150.0, 550 * MIB), ("n2", 100.0, 500 * MIB))
        ],
        ignore_index=True,
    )
    meta = SnapshotMeta(
        source="test:rightsize",
        start=T0.isoformat(),
        end=end.isoformat(),
        step_seconds=300,
        collected_at=end.isoformat(),
        analyzer_version="test",
    )
    return make_snapshot(meta, nodes, pods, node_usage, pod_usage)


def test_apply_recommendations_sets_requests_of_the_workloads_pods_only() -> None:
    snapshot = _snapshot()
    recs = pd.DataFrame(
        {
            "namespace": ["shop", "shop"],
            "owner_kind": ["Deployment", "Deployment"],
            "owner_name": ["web", "absent"],
            "cpu_recommended_millicores": [1700.0, 5.0],
            "memory_recommended_bytes": [np.nan, 1.0],
        }
    )
    after = apply_recommendations(snapshot, recs).pods.set_index("name")
    # web: cpu 1700 (and its nonzero request); its 1600 m limit is below → raised to 1700.
    assert list(after.loc[["web-1", "web-2"], "requests:cpu"]) == [1700, 1700]
    assert list(after.loc[["web-1", "web-2"], "nonzero_requests:cpu"]) == [1700, 1700]
    assert list(after.loc[["web-1", "web-2"], "limits:cpu"]) == [1700, 1700]
    # memory NaN: kept.
    assert list(after.loc[["web-1", "web-2"], "requests:memory"]) == [GIB, GIB]
    # the bare pod is its own workload (Pod/tool): untouched.
    assert after.loc["tool", "requests:cpu"] == 100
    # the input snapshot is not modified; usage is the same object.
    assert list(snapshot.pods["requests:cpu"]) == [1500, 1500, 100]
    assert apply_recommendations(snapshot, recs).pod_usage is snapshot.pod_usage


def test_apply_recommendations_refuses_duplicates() -> None:
    recs = pd.DataFrame(
        {
            "namespace": ["shop"] * 2,
            "owner_kind": ["Deployment"] * 2,
            "owner_name": ["web"] * 2,
            "cpu_recommended_millicores": [1.0, 2.0],
            "memory_recommended_bytes": [1.0, 2.0],
        }
    )
    with pytest.raises(InputError, match="shop/Deployment/web appears twice"):
        apply_recommendations(_snapshot(), recs)


def test_workload_days_of_a_snapshot_are_its_nightly_rows() -> None:
    snapshot = _snapshot()
    days = workload_days(snapshot)
    one = workload_rollups(snapshot, T0, T0 + pd.Timedelta(days=1))
    assert set(days["day"]) == {T0}  # the sample at midnight closes 2026-11-01
    pd.testing.assert_frame_equal(days.reset_index(drop=True), one.reset_index(drop=True))
    web = days.set_index("owner_name").loc["web"]
    assert web["cpu_samples"] == 2 * 288 and web["memory_used_max_bytes"] == 500 * MIB


# ---------------------------------------------------------------- YAML patches


def test_yaml_patches_round_trip() -> None:
    rows = _frame(
        [
            _day(0, cpu=(100, 200, 300, 350, 400), mem_max=400 * MIB),
            _day(0, name="agent", kind="DaemonSet", cpu=(1, 2, 3, 4, 5), mem_max=10 * MIB),
            _day(0, name="debug", kind="Pod"),
            _day(0, name="db", kind="StatefulSet", samples=10),  # skipped: too few samples
        ]
    )
    recs = recommend(rows, VPA)
    text = patches_yaml(recs)
    documents = list(yaml.safe_load_all(text))
    assert [(d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("DaemonSet", "agent"),
        ("Deployment", "api"),
    ]
    api = documents[1]
    assert api["apiVersion"] == "apps/v1" and api["metadata"]["namespace"] == "shop"
    (container,) = api["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "api"
    assert container["resources"] == {"requests": {"cpu": "230m", "memory": "460Mi"}}
    agent = documents[0]["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert agent["requests"] == {"cpu": "25m", "memory": "250Mi"}  # VPA's floors
    assert "kubectl patch deployment api -n shop --type strategic" in text


def test_yaml_patch_raises_a_limit_below_the_new_request() -> None:
    # memory limit 1 GiB, peak 1 GiB: krr → 1177.6 MiB → 1178 MiB, above the limit.
    recs = recommend(_frame([_day(0, mem_max=GIB, memory_limit=GIB)]), KRR)
    (document,) = yaml.safe_load_all(patches_yaml(recs))
    resources = document["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"]["memory"] == "1178Mi"
    assert resources["limits"] == {"memory": "1178Mi"}


# ---------------------------------------------------------------- commands


def _history(tmp_path: Path) -> Path:
    root = tmp_path / "history"
    for i in range(3):
        day = _frame([_day(i, cpu=(10, 20, 30 + i, 40, 50), mem_max=(200 + 100 * i) * MIB)])
        write_tables(
            root, (D0 + pd.Timedelta(days=i)).date(), {"pools": pd.DataFrame(), "workloads": day}
        )
    return root


def test_rightsize_command_csv_and_yaml(tmp_path: Path) -> None:
    root = _history(tmp_path)
    runner = CliRunner()
    out = tmp_path / "r.csv"
    done = runner.invoke(main, ["rightsize", str(root), "--recipe", "krr", "--out", str(out)])
    assert done.exit_code == 0, done.output
    table = pd.read_csv(out)
    row = table.iloc[0]
    # krr over 3 days: cpu p95 max(30, 31, 32) = 32 m; memory 400 MiB × 1.15 = 460 MiB.
    assert (row["cpu_recommended_millicores"], row["memory_recommended_bytes"]) == (32, 460 * MIB)
    assert row["days"] == 3 and row["samples"] == 3 * 288
    assert "1 of 1 workloads recommended" in done.output
    shown = runner.invoke(main, ["rightsize", str(tmp_path), "--recipe", "vpa", "--format", "yaml"])
    assert shown.exit_code == 0, shown.output
    (document,) = yaml.safe_load_all(shown.output)
    assert document["kind"] == "Deployment"


def test_rightsize_command_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["rightsize", str(_history(tmp_path)), "--recipe", "p95"])
    assert bad.exit_code == 2
    assert bad.output.count("\n") == 1 and "--recipe: 'p95' is not a recipe" in bad.output
    empty = tmp_path / "empty"
    empty.mkdir()
    none = runner.invoke(main, ["rightsize", str(empty), "--recipe", "krr"])
    assert none.exit_code == 2 and "no workload history" in none.output


def test_whatif_rightsize_lets_the_replay_pack_onto_one_node(tmp_path: Path) -> None:
    """web's two 1500 m pods cannot share a 2000 m node; right-sized by krr (p95 100 m, memory
    500 MiB × 1.15 = 575 MiB) they can, so most-allocated needs one node at peak, not two."""
    from analyzer.core.snapshot import write_snapshot

    path = write_snapshot(_snapshot(), tmp_path / "snap")
    runner = CliRunner()
    args = ["whatif", str(path), "--strategy", "most-allocated", "--workers", "1"]
    plain = runner.invoke(main, [*args, "--format", "json"])
    resized = runner.invoke(main, [*args, "--format", "json", "--rightsize", "krr"])
    assert plain.exit_code == 0 and resized.exit_code == 0, resized.output
    import json

    before, after = json.loads(plain.output), json.loads(resized.output)

    def peak(result: dict[str, object]) -> float:
        (packed,) = [s for s in result["strategies"] if s["name"] == "most-allocated"]  # type: ignore[attr-defined]
        return float(packed["worst_seed"]["active_nodes_peak"])

    assert before["rightsized"] is None and peak(before) == 2
    assert after["rightsized"]["recipe"] == "krr" and peak(after) == 1
    # requests × peak replicas: cpu 1500 + 1500 + 100 m → 100 + 100 + 50 m (krr floor 10 m).
    assert after["rightsized"]["cpu_requested_cores_before"] == pytest.approx(3.1)
    assert after["rightsized"]["cpu_requested_cores_after"] == pytest.approx(0.25)
    assert after["notes"][0].startswith("Requests right-sized before every replay, recipe krr")
    table = runner.invoke(main, [*args, "--rightsize", "vpa"])
    assert table.exit_code == 0 and table.output.startswith("Requests right-sized")
    lonely = runner.invoke(main, [*args, "--rightsize-history", str(tmp_path)])
    assert lonely.exit_code == 2 and "only with --rightsize" in lonely.output


def test_yaml_leaves_out_unchanged_requests() -> None:
    # krr: cpu p95 30 m (request 30 m: unchanged); memory 300 MiB × 1.15 = 345 MiB (was 2 GiB).
    recs = recommend(_frame([_day(0, cpu_request=30)]), KRR)
    (document,) = yaml.safe_load_all(patches_yaml(recs))
    resources = document["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"memory": "345Mi"}}
    same = recommend(_frame([_day(0, cpu_request=30, memory_request=345 * MIB)]), KRR)
    assert list(yaml.safe_load_all(patches_yaml(same))) == []  # a comment only


def test_rightsize_command_reads_only_the_window(tmp_path: Path) -> None:
    # --days 1: only 2026-11-03's file: cpu p95 32 m, memory 400 MiB × 1.15 = 460 MiB, 1 day.
    root = _history(tmp_path)
    out = tmp_path / "one.csv"
    args = ["rightsize", str(root), "--recipe", "krr", "--days", "1", "--out", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    row = pd.read_csv(out).iloc[0]
    assert (row["days"], row["first_day"], row["samples"]) == (1, "2026-11-03", 288)
    bad = CliRunner().invoke(main, ["rightsize", str(root), "--recipe", "krr", "--days", "0"])
    assert bad.exit_code == 2 and "--days: 0 must be at least 1" in bad.output


def test_report_whatif_page_says_requests_were_right_sized(tmp_path: Path) -> None:
    import json

    from analyzer.core.snapshot import write_snapshot

    path = write_snapshot(_snapshot(), tmp_path / "snap")
    out = tmp_path / "page"
    args = ["report", "whatif", str(path), "--strategy", "most-allocated", "--workers", "1"]
    done = CliRunner().invoke(main, [*args, "--rightsize", "vpa", "--out", str(out)])
    assert done.exit_code == 0, done.output
    html = (out / "report.html").read_text()
    assert "requests right-sized by recipe vpa" in html
    assert "Requests right-sized before every replay, recipe vpa" in html
    facts = json.loads((out / "report.json").read_text())["comparison"]["rightsized"]
    # No impossible value: counts add up; totals finite, non-negative, in the stated units.
    assert facts["recommended"] + facts["skipped"] == facts["workloads"] == 2
    for key in (
        "cpu_requested_cores_before",
        "cpu_requested_cores_after",
        "memory_requested_gib_before",
        "memory_requested_gib_after",
    ):
        assert math.isfinite(facts[key]) and facts[key] >= 0, key
    # vpa: web 100 m × 1.15 = 115 m × 2 pods; tool 50 m × 1.15 = 57.5 → 58 m: 0.288 cores.
    assert facts["cpu_requested_cores_after"] == pytest.approx(0.288)

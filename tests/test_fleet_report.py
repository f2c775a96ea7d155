"""``analyzer report fleet`` (issue 27 item 2): three synthetic clusters, one page.

The histories are written by the store's own writers (``sources/fleet_history.py``): two clusters
in ``cluster=NAME/history`` folders and one in an older ``OUT/history`` folder (the reader of
both). Every figure is checked against an independent computation — the monthly review's own
``report.json`` for a cluster's pools, pandas over the parquet files for sums and the hottest
node-day — and against impossible values; the page is opened in headless Chromium.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

import fsspec
import numpy as np
import pandas as pd
import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner, Result
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.atomic import atomic_write_text
from analyzer.history.identity import IDENTITY_FILE, ClusterIdentity
from analyzer.report.format import number
from analyzer.sources.fleet_history import FleetSpec, write_cluster, write_fleet

SPEC = FleetSpec(clusters=2, nodes=8, pools=2, days=12, seed=3)
FIGURES = ("allocatable", "requested", "requested_peak", "used_p95", "idle", "slack")
KEYS = ("cpu_cores", "memory_gib")


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root, SPEC)
    legacy = root / "old-out" / "history"  # an OUT folder written before cluster=NAME folders
    legacy.mkdir(parents=True)
    atomic_write_text(legacy / IDENTITY_FILE, ClusterIdentity("legacy", None, True).to_json())
    write_cluster(legacy, SPEC, np.random.default_rng(99))
    # cluster-00's monthly review stores its forecast and decisions for the fleet page
    review = _run("report", "monthly", str(root / "cluster=cluster-00"), "--out",
                  str(tmp_path_factory.mktemp("monthly")), "--month", "2026-10")  # fmt: skip
    assert review.exit_code == 0, review.output
    (root / "review.json").write_text(
        (Path(review.output.split("json:")[1].split()[0])).read_text()
    )
    return root


@pytest.fixture(scope="module")
def page(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "fleet"
    result = _run("report", "fleet", str(fleet), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def _json(page: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((page / "report.json").read_text())


def test_a_clusters_pools_equal_its_monthly_review(fleet: Path, page: Path) -> None:
    review = json.loads((fleet / "review.json").read_text())
    rows = {r["pool"]: r for r in _json(page)["pools"] if r["cluster"] == "cluster-00"}
    assert sorted(rows) == sorted(p["name"] for p in review["pools"]) == ["pool-a", "pool-b"]
    for pool in review["pools"]:
        for figure in FIGURES:
            for key in KEYS:
                assert rows[pool["name"]][f"{figure}_{key}"] == pytest.approx(
                    pool[figure][key], rel=1e-9
                ), (pool["name"], figure, key)


def test_the_three_clusters_old_and_new_folders_are_all_read(page: Path) -> None:
    data = _json(page)
    assert data["clusters"] == ["cluster-00", "cluster-01", "legacy"]
    # same pool and node names in every cluster: three clusters' rows, never merged
    assert [(r["cluster"], r["pool"]) for r in data["pools"]] == [
        (c, p) for c in data["clusters"] for p in ("pool-a", "pool-b")
    ]
    assert all(r["days"] == SPEC.days for r in data["pools"])


def test_totals_are_sums_and_the_sentence_is_the_fleet_row(fleet: Path, page: Path) -> None:
    data = _json(page)
    pools = pd.read_csv(page / "pools.csv")
    totals = {r["cluster"]: r for r in data["totals"]}
    columns = [f"{f}_{k}" for f in FIGURES for k in KEYS] + ["nodes_mean"]
    for cluster, rows in pools.groupby("cluster"):
        for column in columns:
            assert totals[cluster][column] == pytest.approx(rows[column].sum(), rel=1e-12)
    fleet_row = totals["(fleet)"]
    for column in columns:
        assert fleet_row[column] == pytest.approx(pools[column].sum(), rel=1e-12)
    # allocatable from the parquet files themselves (pandas, not DuckDB): 8 nodes x 16 cores x 3
    assert fleet_row["allocatable_cpu_cores"] == pytest.approx(3 * SPEC.nodes * 16.0)
    sentence = data["sentence"]
    share = 100 * fleet_row["requested_cpu_cores"] / fleet_row["allocatable_cpu_cores"]
    for shown in (
        f"3 clusters with {fleet_row['pools']} pools",
        f"offered {number(fleet_row['allocatable_cpu_cores'])} cores",
        f"{number(fleet_row['allocatable_memory_gib'])} GiB",
        f"{number(fleet_row['requested_cpu_cores'])} cores ({number(share)} %) were requested",
        f"{number(fleet_row['idle_cpu_cores'])} cores sat idle",
    ):
        assert shown in sentence, (shown, sentence)


def test_no_impossible_value(page: Path) -> None:
    data = _json(page)
    for table in ("pools", "totals"):
        for row in data[table]:
            for figure in ("allocatable", "requested", "requested_peak", "used_p95"):
                for key in KEYS:
                    value = row[f"{figure}_{key}"]
                    assert value is not None and math.isfinite(value) and value >= 0, (row, figure)
            for key in KEYS:  # requests never exceed what the nodes offer; idle within allocatable
                assert row[f"requested_{key}"] <= row[f"allocatable_{key}"]
                assert row[f"idle_{key}"] <= row[f"allocatable_{key}"]
                assert row[f"requested_{key}"] <= row[f"requested_peak_{key}"]
            assert row["nodes_mean"] > 0
    for row in data["breaches"]:
        assert row["breach_node_hours"] > 0 and row["breaches"] >= row["nodes_with_breaches"] >= 1
        assert row["breach_node_hours"] <= 24 * row["nodes_with_breaches"]
    for row in data["hottest"]:
        assert 0 <= row["used_p95_pct_of_allocatable"] <= 200


def test_the_hottest_node_day_is_the_largest_p95_share(fleet: Path, page: Path) -> None:
    frames = []
    for path in fleet.glob("*/history/rollups/*.parquet"):
        frame = pd.read_parquet(path)
        name = json.loads((path.parents[1] / IDENTITY_FILE).read_text())["cluster"]
        frames.append(frame.assign(cluster=name))
    rollups = pd.concat(frames, ignore_index=True)
    p95 = rollups[rollups["stat"] == "p95"]
    share = 100 * p95["value"] / p95["allocatable"]
    top = p95.loc[share.idxmax()]
    first = _json(page)["hottest"][0]
    assert (first["cluster"], first["node"], first["resource"]) == (
        top["cluster"], top["node"], top["resource"],
    )  # fmt: skip
    assert first["used_p95_pct_of_allocatable"] == pytest.approx(share.max(), rel=1e-12)


def test_the_stored_forecast_and_decisions_are_shown(page: Path) -> None:
    rows = _json(page)["forecasts"]
    assert {(r["cluster"], r["pool"]) for r in rows} == {
        ("cluster-00", "pool-a"),
        ("cluster-00", "pool-b"),
    }
    # 12 days is under the review's 21-day minimum: its decision says so and there is no series
    assert all(r["decision"].startswith("No action: no forecast yet") for r in rows)
    assert all(r["requested_cpu_cores_mean"] is None for r in rows)


def test_json_and_csv_agree(page: Path) -> None:
    data = _json(page)
    for table in ("pools", "totals", "hottest", "breaches"):
        csv = pd.read_csv(page / f"{table}.csv")
        assert len(csv) == len(data[table])
        if len(csv):
            first = data[table][0]
            for column in csv.columns:
                if isinstance(first[column], float):
                    assert csv[column].iloc[0] == pytest.approx(first[column], rel=1e-12)


def test_the_page_in_a_browser(page: Path, tmp_path: Path) -> None:
    require_chromium()
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(page / "report.html")
        answer = browser.evaluate("document.querySelector('[data-answer=fleet]').textContent")
        rows = browser.evaluate(
            "document.querySelectorAll('table[data-table=totals] tbody tr').length"
        )
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        errors = browser.console_errors()
    finally:
        browser.close()
    assert errors == []
    assert answer == _json(page)["sentence"]
    assert rows == 4  # three clusters and the fleet
    assert shot.startswith(b"\x89PNG") and len(shot) > 10_000
    (tmp_path / "fleet.png").write_bytes(shot)


def test_the_portal_links_the_fleet_page(page: Path) -> None:
    result = _run("report", "index", str(page.parent))
    assert result.exit_code == 0, result.output
    index = (page.parent / "index.html").read_text()
    assert 'href="fleet/report.html"' in index and "Fleet pages" in index


def test_a_fleet_behind_an_fsspec_url(fleet: Path, page: Path, tmp_path: Path) -> None:
    memory = fsspec.filesystem("memory")
    for folder, _, files in os.walk(fleet):
        for name in files:
            path = Path(folder) / name
            memory.pipe(f"/fleet-{id(page)}/{path.relative_to(fleet)}", path.read_bytes())
    result = _run("report", "fleet", f"memory://fleet-{id(page)}", "--out", str(tmp_path / "m"))
    assert result.exit_code == 0, result.output
    # the same rows (to DuckDB's parallel summation order: the last bits may differ)
    for got, want in zip(_json(tmp_path / "m")["totals"], _json(page)["totals"], strict=True):
        assert got == pytest.approx(want, rel=1e-12)


def _one_line_exit(result: Result, code: int, *words: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, lines
    for word in words:
        assert word in lines[0], lines[0]


def test_no_history_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "empty" / "something").mkdir(parents=True)
    result = _run("report", "fleet", str(tmp_path / "empty"), "--out", str(tmp_path / "o"))
    _one_line_exit(result, documented_exit("fleet-no-history"), "no cluster history found")
    assert not (tmp_path / "o").exists()


def test_a_damaged_parquet_names_the_file(fleet: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    for folder, _, files in os.walk(fleet):
        for name in files:
            path = Path(folder) / name
            (copy / path.relative_to(fleet)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(fleet)).write_bytes(path.read_bytes())
    bad = copy / "cluster=cluster-01" / "history" / "pools" / "2026-10-05.parquet"
    bad.write_bytes(bad.read_bytes()[:200])
    result = _run("report", "fleet", str(copy), "--out", str(tmp_path / "o"))
    _one_line_exit(
        result, documented_exit("fleet-damaged-parquet"), "2026-10-05.parquet", "delete that file"
    )
    assert not (tmp_path / "o").exists()


def test_s3_without_s3fs_is_one_line(tmp_path: Path) -> None:
    result = _run("report", "fleet", "s3://bucket/fleet", "--out", str(tmp_path / "o"))
    _one_line_exit(result, documented_exit("fleet-no-s3fs"), "s3:// needs", "s3fs", "pip install")


def test_a_month_without_history(fleet: Path, tmp_path: Path) -> None:
    result = _run("report", "fleet", str(fleet), "--month", "2025-01", "--out", str(tmp_path / "o"))
    _one_line_exit(result, documented_exit("fleet-month-empty"), "--month 2025-01")


def test_prices_put_idle_capacity_in_money(fleet: Path, page: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\ndefault: {core_hour: 0.03, gib_hour: 0.004}\n")
    out = tmp_path / "priced"
    result = _run("report", "fleet", str(fleet), "--prices", str(prices), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = _json(out)
    assert data["currency"] == "EUR"
    for row in data["pools"]:  # idle cores and GiB at their hourly price over the days with data
        hours = 24 * row["days"]
        cpu, memory = max(row["idle_cpu_cores"], 0), max(row["idle_memory_gib"], 0)
        assert row["idle_money"] == pytest.approx((cpu * 0.03 + memory * 0.004) * hours)
        assert row["idle_money"] >= 0
    totals = {r["cluster"]: r["idle_money"] for r in data["totals"]}
    assert totals["(fleet)"] == pytest.approx(sum(r["idle_money"] for r in data["pools"]))
    assert "idle, EUR" in (out / "report.html").read_text()

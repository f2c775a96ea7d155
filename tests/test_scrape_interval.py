"""Rate windows follow the scrape interval (issue 15, item 20).

A cluster scraped every 5 minutes and collected at ``--step 1m``: an irate over 2 × step (2 m)
never holds two samples 5 m apart, so node and pod CPU came back empty. The collector measures
each source's scrape interval (median spacing of raw samples) and widens the window to
2 × interval. Ground truth is the generator's snapshot (as in tests/test_collect_synthetic.py):
its CPU at time t is the average over the sample interval ending at t, which is what irate over
the last two samples returns at those times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.collect.run import CollectRequest, CollectResult, collect
from analyzer.core.snapshot import Snapshot
from analyzer.prom.fetch import FetchPlan
from analyzer.prom.profile import load_profile
from analyzer.prom.scrape_interval import ScrapeInterval, rate_window, step_note
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import TimeGrid
from analyzer.report.context import scrape_sentence
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

SOURCES = ("node-exporter", "cadvisor")


def _server(
    scrape: int, factory: Callable[..., object], tmp: pytest.TempPathFactory
) -> tuple[Snapshot, str]:
    cluster = generate(SyntheticSpec(seed=5, nodes=4, days=0.5, step=scrape))
    path = Path(tmp.mktemp("scrape")) / f"every-{scrape}s.om"
    write_openmetrics(cluster, path)
    server = factory(path)
    return cluster.snapshot, server.url  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def five_minutes(
    prometheus_from_openmetrics: Callable[..., object], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Snapshot, str]:
    return _server(300, prometheus_from_openmetrics, tmp_path_factory)


@pytest.fixture(scope="module")
def one_minute(
    prometheus_from_openmetrics: Callable[..., object], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Snapshot, str]:
    return _server(60, prometheus_from_openmetrics, tmp_path_factory)


def _collect(truth: Snapshot, url: str, step: int, scrape: int | None = None) -> CollectResult:
    return collect(
        CollectRequest(
            PromSettings(url),
            truth.start.to_pydatetime(),
            truth.end.to_pydatetime(),
            step_seconds=step,
            priority_classes=tuple(truth.meta.extra["priority_classes"].items()),
            scrape_interval_seconds=scrape,
        )
    )


def _cpu_matches_truth(truth: pd.DataFrame, got: pd.DataFrame, key: str) -> None:
    """At every ground-truth time with a CPU value the collected CPU is within 1 %."""
    merged = truth.merge(got, on=[key, "timestamp"], how="left", suffixes=("_t", "_g"))
    cpu = merged.dropna(subset=["cpu_t"])
    assert len(cpu) > 0
    assert cpu["cpu_g"].notna().all(), f"{cpu['cpu_g'].isna().sum()} truth points without cpu"
    error = (cpu["cpu_g"] - cpu["cpu_t"]).abs() / cpu["cpu_t"].abs().clip(lower=1.0)
    assert (error <= 0.01).all(), f"cpu off by up to {error.max():.3%}"


@pytest.mark.prometheus
def test_old_window_of_two_steps_finds_no_node_cpu(five_minutes: tuple[Snapshot, str]) -> None:
    """The bug as reported: a 2 m window (what --scrape-interval 1m forces at --step 1m)."""
    truth, url = five_minutes
    result = _collect(truth, url, 60, scrape=60)
    assert result.partial
    assert result.snapshot.meta.coverage["nodes_without_usage"] == sorted(truth.nodes["node"])
    assert result.snapshot.node_usage["cpu"].isna().all()
    assert result.snapshot.pod_usage["cpu"].isna().all()


@pytest.mark.prometheus
def test_five_minute_scrape_at_one_minute_step_is_complete(
    five_minutes: tuple[Snapshot, str],
) -> None:
    truth, url = five_minutes
    result = _collect(truth, url, 60)
    assert not result.partial, result.problems
    meta = result.snapshot.meta
    assert meta.extra["scrape"] == {
        source: {"interval_seconds": 300, "method": "measured", "rate_window_seconds": 600}
        for source in SOURCES
    }
    assert meta.coverage["nodes_without_usage"] == []
    assert meta.coverage["node_usage_min"] == 1.0
    _cpu_matches_truth(truth.node_usage, result.snapshot.node_usage, "node")
    _cpu_matches_truth(truth.pod_usage, result.snapshot.pod_usage, "uid")
    note = result.step_note
    assert note is not None and "--step 60s" in note and "every 300s" in note


@pytest.mark.prometheus
def test_one_minute_scrape_keeps_two_step_windows(one_minute: tuple[Snapshot, str]) -> None:
    truth, url = one_minute
    result = _collect(truth, url, 60)
    assert not result.partial, result.problems
    scrape = result.snapshot.meta.extra["scrape"]
    assert {s: v["interval_seconds"] for s, v in scrape.items()} == dict.fromkeys(SOURCES, 60)
    assert {s: v["rate_window_seconds"] for s, v in scrape.items()} == dict.fromkeys(SOURCES, 120)
    assert result.step_note is None
    _cpu_matches_truth(truth.node_usage, result.snapshot.node_usage, "node")


@pytest.mark.prometheus
def test_check_prints_the_interval_per_source(five_minutes: tuple[Snapshot, str]) -> None:
    truth, url = five_minutes
    end = str(int(truth.end.timestamp()))
    run = CliRunner().invoke(main, ["check", "--prometheus", url, "--end", end, "--since", "6h"])
    lines = [line.split() for line in run.stdout.splitlines()]
    assert [
        "scrape_interval",
        "node-exporter",
        "300s",
        "(irate",
        "window",
        "10m",
        "at",
        "--step",
        "1m)",
    ] in lines
    assert [
        "scrape_interval",
        "cadvisor",
        "300s",
        "(irate",
        "window",
        "10m",
        "at",
        "--step",
        "1m)",
    ] in lines


@pytest.mark.prometheus
def test_collect_warns_once_when_step_is_finer(
    five_minutes: tuple[Snapshot, str], tmp_path: Path
) -> None:
    truth, url = five_minutes
    args = ["collect", "--prometheus", url, "--start", truth.meta.start, "--end", truth.meta.end]
    run = CliRunner().invoke(main, [*args, "--step", "1m", "--out", str(tmp_path / "a")])
    assert run.exit_code == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if "finer than the scrape interval" in line]
    assert len(notes) == 1
    run = CliRunner().invoke(main, [*args, "--step", "5m", "--out", str(tmp_path / "b")])
    assert run.exit_code == 0, run.stderr
    assert "finer than the scrape interval" not in run.stderr


def test_rate_window_is_two_steps_or_two_scrape_intervals() -> None:
    assert rate_window(60, None) == 120
    assert rate_window(60, 30) == 120  # a faster scrape never narrows the window
    assert rate_window(60, 300) == 600
    assert rate_window(600, 300) == 1200


def test_query_profile_renders_the_source_window() -> None:
    grid = TimeGrid(0, 86400, 60)
    plan = FetchPlan(grid, scrape_seconds=(("node-exporter", 300),))
    spec = load_profile()["node_cpu_busy"]
    assert plan.rate_window(spec) == 600
    assert "[10m]" in spec.render(step_seconds=60, span_seconds=3600, rate_window_seconds=600)
    assert FetchPlan(grid).rate_window(spec) == 120
    # raw samples reach back one widened window before the first step
    assert plan.raw_start == -600 and FetchPlan(grid).raw_start == -300


def test_step_note_only_when_the_step_is_finer() -> None:
    five = {s: ScrapeInterval(s, 300, "measured") for s in SOURCES}
    assert step_note(300, five) is None
    assert step_note(600, five) is None
    note = step_note(60, five)
    assert note is not None and "about 5 steps" in note and "--step 300s" in note
    assert step_note(60, {"cadvisor": ScrapeInterval("cadvisor", None, "measured")}) is None


@pytest.mark.prometheus
def test_nightly_at_one_minute_step_on_five_minute_data(
    prometheus_from_openmetrics: Callable[..., object], tmp_path: Path
) -> None:
    """The reported case: report nightly --prometheus at the default --step 1m."""
    cluster = generate(SyntheticSpec(seed=5, nodes=4, days=1, step=300))
    path = tmp_path / "cluster.om"
    write_openmetrics(cluster, path)
    server = prometheus_from_openmetrics(path)
    out = tmp_path / "out"
    args = ["report", "nightly", "--prometheus", server.url, "--date", "2026-11-01"]  # type: ignore[attr-defined]
    run = CliRunner().invoke(main, [*args, "--step", "1m", "--out", str(out)])
    assert run.exit_code == 0, run.stderr  # before: exit 3, no node had node-exporter usage
    notes = [line for line in run.stderr.splitlines() if "finer than the scrape interval" in line]
    assert len(notes) == 1, run.stderr
    report = json.loads((out / "2026-11-01" / "report.json").read_text())
    coverage = report["summary"]["coverage_pct"]["value"]
    assert 99.0 <= coverage <= 100.0, coverage
    html = (out / "2026-11-01" / "report.html").read_text()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert (
        "Scrape interval (measured from the samples): node-exporter every 5 min (CPU rate window "
        "10 min); cAdvisor every 5 min (CPU rate window 10 min)." in text
    )
    assert "each value repeats for about 5 steps" in text


def test_scrape_sentence_when_not_recorded_or_not_measured() -> None:
    assert scrape_sentence({}, 60).startswith("Scrape interval: not recorded in this snapshot")
    text = scrape_sentence(
        {
            "node-exporter": {
                "interval_seconds": 30,
                "method": "measured",
                "rate_window_seconds": 120,
            },
            "cadvisor": {
                "interval_seconds": None,
                "method": "measured",
                "rate_window_seconds": 120,
            },
        },
        60,
    )
    assert "node-exporter every 30 s (CPU rate window 2 min)" in text
    assert "cAdvisor not measured, no samples (CPU rate window 2 min)" in text
    assert "finer than the scrape interval" not in text  # a 30 s scrape under a 1 min step


@pytest.mark.prometheus
def test_aggregate_warns_once_measured_or_given(
    five_minutes: tuple[Snapshot, str],
) -> None:
    truth, url = five_minutes
    args = ["aggregate", "--prometheus", url, "--at", truth.meta.end, "--durations", "1h"]
    run = CliRunner().invoke(main, [*args, "--format", "json"])
    assert run.exit_code == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if "finer than the scrape interval" in line]
    assert len(notes) == 1 and "cadvisor every 300s, node-exporter every 300s" in notes[0]
    # the same interval given by hand: the same warning, no measurement needed
    run = CliRunner().invoke(main, [*args, "--format", "json", "--scrape-interval", "5m"])
    assert run.exit_code == 0, run.stderr
    assert sum("finer than the scrape interval" in line for line in run.stderr.splitlines()) == 1


@pytest.mark.parametrize("value", ["0s", "1.5s", "five"])
def test_bad_scrape_interval_is_one_line_exit_2(value: str, tmp_path: Path) -> None:
    run = CliRunner().invoke(
        main,
        [
            *("collect", "--prometheus", "http://127.0.0.1:9", "--since", "1h"),
            *("--out", str(tmp_path / "snap"), "--scrape-interval", value),
        ],
    )
    assert run.exit_code == 2, run.output
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analyzer: error: --scrape-interval: ")
    assert not (tmp_path / "snap").exists()


def test_step_note_for_an_interval_that_is_not_a_multiple_of_the_step() -> None:
    note = step_note(60, {"node-exporter": ScrapeInterval("node-exporter", 90, "measured")})
    assert note is not None and "about 1.5 steps" in note and "--step 90s" in note

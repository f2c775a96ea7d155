"""The query budget: at most N points per series per request, at most M requests in flight.

``analyzer collect`` reads the small cluster (tests/small_cluster.py: 61 one-minute samples) from
the real Prometheus fixture through a recording proxy on 127.0.0.1. The proxy counts the requests
it is answering at once (each answer held back 30 ms, so requests that may overlap do) and the
points of every series in every answer, and the snapshots of different budgets are compared.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import small_cluster as sc
from click.testing import CliRunner, Result
from fault_servers import forward, passthrough
from http_stub import Recorded, Reply, serve
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot
from analyzer.prom.fetch import FetchPlan
from analyzer.prom.profile import QuerySpec
from analyzer.prom.time_grid import make_grid, range_reach

pytestmark = pytest.mark.prometheus

HOLD_SECONDS = 0.03
# --scrape-interval: no scrape-interval probe (an hour of samples of three targets, outside the
# budget: docs/collect.md); the fixture's samples are one step apart.
RANGE = ("--start", str(sc.T0), "--end", str(sc.END), "--step", "60s", "--scrape-interval", "1m")


@dataclass
class Recording:
    """What the proxy saw: the most requests at once, the most points of one series in one
    answer, and how many requests."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    peak_in_flight: int = 0
    peak_points: int = 0
    requests: int = 0


def _points(body: bytes) -> int:
    """The most points (or raw samples) of one series in a Prometheus JSON answer."""
    data = json.loads(body).get("data") or {}
    if data.get("resultType") != "matrix":
        return 1 if data.get("result") else 0
    return max((len(series.get("values", [])) for series in data["result"]), default=0)


@contextmanager
def recording_proxy(target: str) -> Iterator[tuple[str, Recording]]:
    """A proxy to ``target`` recording concurrency and points per series; yields (URL, record)."""
    seen = Recording()

    def handler(request: Recorded) -> Reply:
        with seen.lock:
            seen.in_flight += 1
            seen.requests += 1
            seen.peak_in_flight = max(seen.peak_in_flight, seen.in_flight)
        try:
            answer = forward(target, request)
            time.sleep(HOLD_SECONDS)
            if request.path.endswith(("/query", "/query_range")) and answer.status == 200:
                points = _points(answer.body)
                with seen.lock:
                    seen.peak_points = max(seen.peak_points, points)
            return passthrough(answer)
        finally:
            with seen.lock:
                seen.in_flight -= 1

    with serve(handler) as stub:
        yield stub.url, seen


def run_cli(*args: str) -> Result:
    """``analyzer ARGS`` in this process (click's runner), without ANALYZER_* settings."""
    return CliRunner().invoke(main, list(args), env={"ANALYZER_CONFIG": None,
                                                     "ANALYZER_PROMETHEUS_URL": None})  # fmt: skip


@pytest.fixture(scope="module")
def target(small_prometheus: Callable[..., object]) -> str:
    return str(small_prometheus().url)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def plain(target: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The snapshot at the default budget (720 points, 4 in flight: one request per query)."""
    out = tmp_path_factory.mktemp("plain") / "snap"
    _collect(target, out)
    return out


def _collect(url: str, out: Path, *budget: str, config: Path | None = None) -> dict[str, object]:
    first = ("--config", str(config)) if config else ()
    proc = run_cli(*first, "collect", "--prometheus", url, "--out", str(out), *RANGE, *budget)
    assert proc.exit_code == 0, proc.stderr[-2000:]
    meta: dict[str, object] = json.loads((out / "meta.json").read_text())
    return meta


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows in one order (every column, left to right)."""
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


@pytest.mark.parametrize(("points", "in_flight"), [(8, 3), (25, 2)])
def test_the_proxy_never_sees_more_than_the_budget(
    tmp_path: Path, target: str, plain: Path, points: int, in_flight: int
) -> None:
    budget = ("--max-points-per-request", str(points), "--max-in-flight", str(in_flight))
    with recording_proxy(target) as (url, seen):
        meta = _collect(url, tmp_path / "budget", *budget)
    # Never above the budget, and at it: the limits are what bounds the run, not the data's size
    # (61 points per range series, several requests of each query).
    assert seen.peak_points == points
    assert seen.peak_in_flight == in_flight
    assert meta["extra"]["query_budget"]["max_points_per_request"] == points  # type: ignore[index]
    assert meta["extra"]["query_budget"]["max_in_flight"] == in_flight  # type: ignore[index]
    # raw requests span N - 1 scrape intervals of 60 s
    assert meta["extra"]["query_budget"]["raw_span_seconds"] == (points - 1) * 60  # type: ignore[index]
    # the recorded count is what the proxy saw, less nothing (no probe: --scrape-interval)
    assert meta["extra"]["query_budget"]["requests"] == seen.requests  # type: ignore[index]

    # The same snapshot as the default budget gives.
    small, large = read_snapshot(tmp_path / "budget"), read_snapshot(plain)
    for table in ("nodes", "pods", "node_usage", "pod_usage"):
        # row order follows the requests (time-major in chunks); the rows themselves must agree
        pd.testing.assert_frame_equal(_rows(getattr(small, table)), _rows(getattr(large, table)))
    assert len(small.pod_usage) and len(small.node_usage)  # not two empty tables


def test_query_section_of_the_config_file_sets_the_budget(tmp_path: Path, target: str) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text("query:\n  max-points-per-request: 12\n  max-in-flight: 1\n")
    with recording_proxy(target) as (url, seen):
        meta = _collect(url, tmp_path / "snap", config=config)
    assert meta["extra"]["query_budget"]["max_points_per_request"] == 12  # type: ignore[index]
    assert seen.peak_in_flight == 1 and seen.peak_points == 12


def _one_line(result: Result) -> str:
    assert result.exit_code == documented_exit("query-budget-bad"), result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("analyzer: error: "), result.stderr
    return lines[0]


def test_a_budget_out_of_range_is_one_line_and_no_request(tmp_path: Path) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text("query:\n  max-in-flight: 99\n")
    cases = [
        (("--max-points-per-request", "1"), "--max-points-per-request (--chunk-points): 1 must"),
        (("--chunk-points", "11001"), "--max-points-per-request (--chunk-points): 11001 must"),
        (("--max-in-flight", "65"), "--max-in-flight (--parallelism): 65 must be between 1 and 64"),
        # the file's value, when no flag overrides it; a flag wins over the file
        (("--config", str(config)), "--max-in-flight (--parallelism): 99 must"),
        (("--config", str(config), "--max-in-flight", "0"), "(--parallelism): 0 must"),
    ]
    with serve(lambda request: Reply.json({"status": "success"})) as stub:
        for args, needle in cases:
            out = tmp_path / "s"
            config_args = args[:2] if args[0] == "--config" else ()
            rest = args[2:] if config_args else args
            result = run_cli(*config_args, "collect", "--prometheus", stub.url, "--out",
                             str(out), *RANGE, *rest)  # fmt: skip
            assert needle in _one_line(result)
            assert not out.exists()
    assert not stub.requests


def test_an_unknown_key_in_the_query_section_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text("query:\n  max-points: 12\n")
    result = run_cli("--config", str(config), "collect", "--prometheus", "http://127.0.0.1:9",
                     "--out", str(tmp_path / "s"), *RANGE)  # fmt: skip
    assert "unknown option query.max-points" in _one_line(result)


def test_report_nightly_keeps_the_budget_and_its_json_says_it(tmp_path: Path, target: str) -> None:
    # The small cluster holds one hour of 2026-11-01 (its nodes' whole life: complete data);
    # the day is collected through the budget, and the report's JSON records the budget kept.
    with recording_proxy(target) as (url, seen):
        result = run_cli(
            "report", "nightly", "--prometheus", url, "--date", "2026-11-01",
            "--scrape-interval", "1m", "--out", str(tmp_path / "out"),
            "--max-points-per-request", "300", "--max-in-flight", "3",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen.peak_points <= 300 and seen.peak_in_flight <= 3
    (report,) = (tmp_path / "out").glob("*/report.json")
    budget = json.loads(report.read_text())["quality"]["query_budget"]
    assert (budget["max_points_per_request"], budget["max_in_flight"]) == (300, 3)
    assert budget["requests"] == seen.requests  # no probe: --scrape-interval


@pytest.mark.parametrize("points", [2, 7, 11, 720])
def test_every_planned_request_keeps_the_budget_even_ending_on_a_midnight(points: int) -> None:
    # A day ending on a UTC midnight (a nightly day): a range request ending there is sent one
    # step longer (range_reach, for VictoriaMetrics), and must still hold at most N points
    # (11: the day's 1,441 grid points are 131 full chunks, the last one ending on the midnight).
    grid = make_grid(sc.T0 - 86_400, sc.T0, 60)  # sc.T0 is 2026-11-01T00:00:00Z
    # window_points 10: 144 window evaluations, 36 per request were there no budget
    plan = FetchPlan(
        grid, chunk_points=points, window_points=10, scrape_seconds=(("cadvisor", 30),)
    )
    kinds = {"range": "x", "window": "max_over_time(x[{{span}}])", "samples": "x[{{span}}]"}
    for kind, expr in kinds.items():
        extra = {"dedupe": ("a",), "sum_by": ("a",)} if kind == "samples" else {}
        requests = plan.requests_for(QuerySpec("q", expr, kind=kind, **extra))  # type: ignore[arg-type]
        for start, end, step in requests:
            if kind == "range":
                assert (range_reach(end, step) - start) // step + 1 <= points
            elif kind == "window":
                assert (end - start) // step + 1 <= points
            else:  # raw: N - 1 scrape intervals of 30 s (finer than the step), + 1 s either side
                assert end - start <= (points - 1) * 30
        if kind == "range":  # contiguous, every grid point once
            assert requests[0][0] == grid.start and requests[-1][1] == grid.end
            assert all(b[0] == a[1] + 60 for a, b in itertools.pairwise(requests))

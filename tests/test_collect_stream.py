"""``analyzer collect`` fetches and writes the usage tables one UTC day at a time
(``analyzer.collect.stream``), and its snapshot is the one the whole-range collect gives.

A synthetic cluster of 2 days (pods that live across midnight among them) is backfilled into a
real Prometheus (tests/conftest.py). The reference is ``analyzer.collect.run.collect`` — the
whole range fetched and built in memory, then ``write_snapshot`` — and the CLI's streamed
snapshot must equal it table by table, sorted, exactly; meta too, except the time of the collect
and the request counts (a day's raw requests start at its midnight: more, smaller requests).
Then the partial-data path (exit 3, snapshot written and equal), no kube-state-metrics data
(exit 3, nothing written) and a server failing on the last day (exit 1, nothing written: the
earlier days' rows were already in the temporary folder).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from fault_servers import Answer, passthrough, proxy
from http_stub import Recorded, Reply
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.collect.run import CollectRequest, collect
from analyzer.collect.stream import collect_to, day_grids
from analyzer.core.daygroups import day_codes
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import TimeGrid
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus
STEP = 300
HOUR = 3600
ROOT = Path(__file__).resolve().parent.parent
CADVISOR = ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes")


@pytest.fixture(scope="module")
def cluster() -> Any:
    return generate(SyntheticSpec(seed=5, nodes=4, days=2, step=STEP))


@pytest.fixture(scope="module")
def server_url(
    cluster: Any,
    prometheus_from_openmetrics: Callable[..., Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    path = tmp_path_factory.mktemp("stream") / "cluster.om"
    write_openmetrics(cluster, path)
    return str(prometheus_from_openmetrics(path).url)


@pytest.fixture(scope="module")
def span(cluster: Any) -> tuple[int, int]:
    """From 05:00 of the data's first day to its end (00:00 after the second day): two UTC
    days of grid points, the first a part day (05:05 .. 00:00, which closes it)."""
    truth: Snapshot = cluster.snapshot
    return int(truth.start.timestamp()) + 5 * HOUR, int(truth.end.timestamp())


def run_cli(*args: str) -> Result:
    """``analyzer ARGS`` in this process (click's runner), without ANALYZER_* settings."""
    return CliRunner().invoke(main, list(args), env={"ANALYZER_CONFIG": None,
                                                     "ANALYZER_PROMETHEUS_URL": None})  # fmt: skip


def collect_cli(url: str, out: Path, span: tuple[int, int]) -> Result:
    start, end = span
    return run_cli("collect", "--prometheus", url, "--start", str(start), "--end", str(end),
                   "--step", f"{STEP}s", "--out", str(out))  # fmt: skip


def reference(url: str, out: Path, span: tuple[int, int]) -> tuple[Path, bool]:
    """The whole-range, in-memory collect written as today: (folder, partial)."""
    start, end = (datetime.fromtimestamp(t, tz=UTC) for t in span)
    result = collect(CollectRequest(PromSettings(url), start, end, step_seconds=STEP))
    write_snapshot(result.snapshot, out)
    return out, result.partial


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


KEYS = {
    "nodes": ["node"],
    "pods": ["uid"],
    "node_usage": ["node", "timestamp"],
    "pod_usage": ["uid", "timestamp"],
}
VARYING = ("collected_at",)  # the clock


def _meta(folder: Path) -> dict[str, Any]:
    """meta.json without the collect's time and its request counts."""
    meta: dict[str, Any] = json.loads((folder / "meta.json").read_text())
    for key in VARYING:
        meta.pop(key)
    meta["extra"].pop("query_budget")
    for entry in meta["coverage"]["queries"].values():
        entry.pop("requests")
    return meta


def assert_same_snapshot(expected: Path, got: Path) -> None:
    a, b = read_snapshot(expected), read_snapshot(got)
    for table, keys in KEYS.items():
        pd.testing.assert_frame_equal(
            _sorted(getattr(a, table), keys), _sorted(getattr(b, table), keys), check_exact=True
        )
    assert (a.node_state is None) == (b.node_state is None)
    if a.node_state is not None and b.node_state is not None:
        pd.testing.assert_frame_equal(a.node_state, b.node_state, check_exact=True)
    assert sorted(p.name for p in expected.iterdir()) == sorted(p.name for p in got.iterdir())
    assert _meta(expected) == _meta(got)


@pytest.fixture(scope="module")
def streamed(
    server_url: str, span: tuple[int, int], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Result]:
    folder = tmp_path_factory.mktemp("streamed")
    expected, partial = reference(server_url, folder / "expected", span)
    assert not partial
    result = collect_cli(server_url, folder / "got", span)
    return expected, folder / "got", result


def test_day_grids_split_at_midnight_and_keep_every_point() -> None:
    day = 86_400
    grid = TimeGrid(day - 2 * STEP, 3 * day, STEP)  # 23:50 of day 0 .. 00:00 closing day 2
    parts = day_grids(grid)
    # 23:50 and 23:55 of day 0 plus its closing 00:00; two whole days; nothing else
    assert [(p.start, p.end) for p in parts] == [
        (day - 2 * STEP, day),
        (day + STEP, 2 * day),
        (2 * day + STEP, 3 * day),
    ]
    assert sum(p.points for p in parts) == grid.points
    # a step that does not divide the hour still gives grid points only
    # 49 h from a midnight: that 00:00 closes the day before, then two whole days and a part
    odd = TimeGrid(0, 49 * 3600, 49)
    assert all(p.start % 49 == 0 and p.end % 49 == 0 for p in day_grids(odd))
    assert sum(p.points for p in day_grids(odd)) == odd.points and len(day_grids(odd)) == 4


def test_streamed_collect_equals_the_whole_range_collect(
    streamed: tuple[Path, Path, Result],
) -> None:
    expected, got, result = streamed
    assert result.exit_code == 0, result.output
    assert_same_snapshot(expected, got)
    usage = read_snapshot(got).pod_usage
    days = pd.Series(day_codes(usage["timestamp"]), index=usage.index)
    # the range has two UTC days, and pods whose usage crosses the midnight between them
    assert days.nunique() == 2
    assert (days.groupby(usage["uid"].astype(str)).nunique() > 1).sum() > 0
    counts = f"{len(usage)} pod-usage rows"
    assert counts in result.output  # the CLI's line counts the rows it wrote day by day


def test_usage_files_have_day_row_groups(streamed: tuple[Path, Path, Result]) -> None:
    import pyarrow.parquet as pq

    _, got, _ = streamed
    for table in ("node_usage", "pod_usage"):
        parquet = pq.ParquetFile(got / f"{table}.parquet")
        stamps = [
            pd.to_datetime(
                [
                    parquet.metadata.row_group(i).column(1).statistics.min,
                    parquet.metadata.row_group(i).column(1).statistics.max,
                ],
                utc=True,
            )
            for i in range(parquet.num_row_groups)
        ]
        # each group's first and last sample lie in one UTC day (00:00 closes the day before)
        assert all(len(set(day_codes(pd.Series(s)))) == 1 for s in stamps)
        assert parquet.num_row_groups == 2  # one per day at this size


def test_whole_range_tables_are_the_same_read_in_many_windows(
    streamed: tuple[Path, Path, Result], server_url: str, span: tuple[int, int], tmp_path: Path
) -> None:
    """The whole-range part folds each response as it arrives (``analyzer.prom.folds``): read
    in 1-hour windows, 12-point range requests and 55-minute raw requests (≈ 50 responses per
    query over the two days, arriving in any order) it gives the pods, nodes and node-state
    tables the CLI's default read gives (one window, 720-point requests)."""
    _, got, _ = streamed
    start, end = (datetime.fromtimestamp(t, tz=UTC) for t in span)
    request = CollectRequest(PromSettings(server_url), start, end, step_seconds=STEP,
                             window_points=HOUR // STEP, chunk_points=HOUR // STEP)  # fmt: skip
    small = collect_to(request, tmp_path / "small")
    assert small.result.snapshot.meta.extra["query_budget"]["requests"] > 300  # many responses
    one, many = read_snapshot(got), read_snapshot(tmp_path / "small")
    assert len(one.pods) > 20 and one.node_state is not None and len(one.node_state) > 0
    for table in ("nodes", "pods"):
        pd.testing.assert_frame_equal(
            _sorted(getattr(one, table), KEYS[table]),
            _sorted(getattr(many, table), KEYS[table]),
            check_exact=True,
        )
    assert many.node_state is not None
    pd.testing.assert_frame_equal(one.node_state, many.node_state, check_exact=True)


def _without_cadvisor(request: Recorded, answer: Answer) -> Reply:
    """cAdvisor series answered with no data (a cluster whose kubelets are not scraped)."""
    query = " ".join(request.params.get("query", []))
    if answer.status == 200 and any(name in query for name in CADVISOR):
        body = json.loads(answer.body)
        body["data"]["result"] = []
        return Reply(200, json.dumps(body, separators=(",", ":")).encode())
    return passthrough(answer)


@pytest.fixture
def servers() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_partial_data_exit_3_writes_the_same_snapshot(
    server_url: str, span: tuple[int, int], tmp_path: Path, servers: ExitStack
) -> None:
    url = servers.enter_context(proxy(server_url, _without_cadvisor))
    expected, partial = reference(url, tmp_path / "expected", span)
    assert partial
    result = collect_cli(url, tmp_path / "got", span)
    assert result.exit_code == 3, result.output
    assert "no cAdvisor pod usage in the range" in result.output
    assert_same_snapshot(expected, tmp_path / "got")
    assert read_snapshot(tmp_path / "got").pod_usage.empty


def test_no_kube_state_metrics_exit_3_writes_nothing(
    server_url: str, span: tuple[int, int], tmp_path: Path
) -> None:
    start, _ = span
    out = tmp_path / "snap"
    before = (start - 30 * 86_400, start - 29 * 86_400)  # a month before the data
    result = collect_cli(server_url, out, before)
    assert result.exit_code == 3, result.output
    assert "no kube-state-metrics data" in result.output
    assert not out.exists() and not list(tmp_path.glob(".snap*"))


def test_failure_on_the_last_day_leaves_nothing(
    server_url: str,
    span: tuple[int, int],
    streamed: tuple[Path, Path, Result],
    tmp_path: Path,
    servers: ExitStack,
) -> None:
    _start, end = span
    last_midnight = end - end % 86_400 - (86_400 if end % 86_400 == 0 else 0)
    seen: list[float] = []

    def last_day_fails(request: Recorded, answer: Answer) -> Reply:
        query = " ".join(request.params.get("query", []))
        at = float((request.params.get("time") or ["0"])[0])
        # the profile's raw pod CPU requests: sent at a chunk's end + 1 s (the scrape-interval
        # probe reads the same metric at the range's end itself, and must go through)
        if CADVISOR[0] in query and at % STEP == 1:
            seen.append(at)
            if at > last_midnight + STEP:
                return Reply(500, b"oops", "text/plain")
        return passthrough(answer)

    out = tmp_path / "snap"
    # an earlier snapshot in --out stays as it was
    write_snapshot(read_snapshot(streamed[0]), out)
    before = sorted(p.read_bytes() for p in out.iterdir())
    url = servers.enter_context(proxy(server_url, last_day_fails))
    result = collect_cli(url, out, span)
    assert result.exit_code == documented_exit("collect-day-failed"), result.output
    assert "server error HTTP 500" in result.output
    # the first day was fetched first (its rows written to the temporary folder) ...
    assert any(at <= last_midnight + STEP for at in seen), (seen, last_midnight)
    # ... and nothing of this run is left: the old snapshot is untouched, no temporary folder
    assert sorted(p.read_bytes() for p in out.iterdir()) == before
    assert not list(tmp_path.glob(".snap*"))


def test_sigterm_during_a_days_fetch_ends_at_once_and_leaves_nothing(
    server_url: str, span: tuple[int, int], tmp_path: Path, servers: ExitStack
) -> None:
    # The temporary folder exists from the first day on; a signal while a later day's request
    # hangs must not wait for it (unwinding would, up to --timeout): folder removed, exit 143.
    _, end = span
    last_midnight = end - 86_400 if end % 86_400 == 0 else end - end % 86_400
    hanging, release = threading.Event(), threading.Event()
    servers.callback(release.set)

    def last_day_hangs(request: Recorded, answer: Answer) -> Reply:
        query = " ".join(request.params.get("query", []))
        at = float((request.params.get("time") or ["0"])[0])
        if CADVISOR[0] in query and at % STEP == 1 and at > last_midnight + STEP:
            hanging.set()
            release.wait(60)
        return passthrough(answer)

    url = servers.enter_context(proxy(server_url, last_day_hangs))
    out = tmp_path / "snap"
    start, end = span
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "collect", "--prometheus", url, "--start", str(start),
         "--end", str(end), "--step", f"{STEP}s", "--out", str(out)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert hanging.wait(60), "the last day's request never came"
        assert list(tmp_path.glob(".snap.*.tmp")), "no temporary folder during the day loop"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)  # the request still hangs meanwhile
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143  # 128 + SIGTERM (docs/reliability.md collect-signal-mid-day)
    assert stderr.strip().splitlines() == [
        "analyzer: error: stopped by SIGTERM; nothing was written"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == []

"""``history backfill --metrics-textfile``: the run's days by outcome, against a real Prometheus.

The synthetic cluster has data on 2026-11-01 and 2026-11-02 only (tests/test_history_backfill.py
explains why the days around them hold none): a 5-day range writes 2 days and finds 3 without
data (exit 3, which still wrote the history: a success); the same run again skips the 2.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_metrics_textfile import parse, promtool_check

from analyzer.cli import main
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def server_url(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> str:
    cluster = generate(SyntheticSpec(seed=5, nodes=6, days=2, step=300))
    path = tmp_path_factory.mktemp("backfill") / "cluster.om"
    write_openmetrics(cluster, path)
    return str(prometheus_from_openmetrics(path).url)


def test_backfill_days_by_status(server_url: str, tmp_path: Path) -> None:
    prom = tmp_path / "analyzer-backfill.prom"
    args = ["history", "backfill", "--prometheus", server_url, "--since", "5d",
            "--until", "2026-11-03", "--out", str(tmp_path / "out"), "--metrics-textfile", str(prom)]  # fmt: skip
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 3, first.output
    promtool_check(prom)
    values = parse(prom)
    days = {
        dict(k[1])["status"]: v
        for k, v in values.items()
        if k[0] == "analyzer_backfill_day_outcomes"
    }
    assert days == {"written": 2, "partial": 0, "skipped": 0, "no_data": 3}
    run = (("command", "backfill"),)
    assert values[("analyzer_run_success", run)] == 1  # exit 3 wrote the history
    assert values[("analyzer_run_exit_code", run)] == 3
    assert ("analyzer_run_last_success_timestamp_seconds", run) in values
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 3
    days = {
        dict(k[1])["status"]: v
        for k, v in parse(prom).items()
        if k[0] == "analyzer_backfill_day_outcomes"
    }
    assert days == {"written": 0, "partial": 0, "skipped": 2, "no_data": 3}

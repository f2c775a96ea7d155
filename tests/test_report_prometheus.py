"""``analyzer report nightly --prometheus``: collect the day from a real Prometheus, then report.

The synthetic cluster is served by a real Prometheus (backfilled from the generator's
OpenMetrics, ``conftest.prometheus_from_openmetrics``); the report made from the collected data
must name the same hot nodes as the report made from the generator's ground-truth snapshot (its
hot nodes run at ~80 % CPU against 65 %, far from the boundary, so sample alignment cannot flip
them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus


def _hot(rows: list[dict[str, Any]]) -> set[str]:
    return {row["node"] for row in rows}


def test_nightly_from_prometheus_matches_ground_truth(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path: Path
) -> None:
    cluster = generate(SyntheticSpec(seed=5, nodes=8, days=1, step=300))
    path = tmp_path / "cluster.om"
    write_openmetrics(cluster, path)
    server = prometheus_from_openmetrics(path)
    out = tmp_path / "out"
    args = ["report", "nightly", "--prometheus", server.url, "--date", "2026-11-01"]
    args += ["--step", "5m", "--out", str(out), "--save-snapshot", str(tmp_path / "snap")]
    run = CliRunner().invoke(main, args, catch_exceptions=False)
    assert run.exit_code in (0, 3), run.output
    report = json.loads((out / "2026-11-01" / "report.json").read_text())
    truth = run_nightly(cluster.snapshot, NightlySettings())
    assert report["summary"]["nodes"]["value"] == len(cluster.snapshot.nodes)
    hot = set(truth.violations.breaches["node"])
    assert hot  # the generator always makes at least one hot node at this size
    assert _hot(report["tables"]["breach_nodes"]) == hot
    assert (tmp_path / "snap" / "meta.json").is_file()
    assert report["source"].startswith("http://127.0.0.1:")

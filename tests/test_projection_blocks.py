"""The replay's projection in row blocks (issue 27 item 3): the same figures as the whole table.

``analyzer.replay.projection`` turns pod usage into grid rows, attributes them and sums them per
node a block of ``BLOCK_ROWS`` rows at a time so that no whole-table temporary is held. These
tests run the same snapshot with blocks of a few rows (hundreds of blocks, columns longer than a
block) and with one block (the whole-table path) and require identical results.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.replay import podrows, projection
from analyzer.replay.input import prepare
from analyzer.sources import SyntheticSpec, generate

TINY = 64  # rows per block: fewer than a grid column's rows, so blocks split columns


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    """A small synthetic cluster: 6 nodes, 6 hours at 5 minutes."""
    return generate(SyntheticSpec(seed=2, nodes=6, days=0.25, step=300)).snapshot


def test_pod_rows_are_the_stable_sort_of_the_table(
    snap: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    inp = prepare(snap)
    monkeypatch.setattr(podrows, "BLOCK_ROWS", TINY)
    rows = projection.usage_matrices(inp).pod_rows
    assert len(snap.pod_usage) > 20 * TINY  # many blocks
    # the definition: the table's rows of known pods on the grid, stably sorted by grid column
    usage = snap.pod_usage
    pods = pd.Index(inp.pod_uids).get_indexer(usage["uid"].astype(str))
    ns = pd.to_datetime(usage["timestamp"], utc=True).to_numpy(dtype="datetime64[ns]")
    cols = (ns.astype(np.int64) - inp.start) // inp.step
    keep = np.flatnonzero((pods >= 0) & (cols >= 0) & (cols * inp.step + inp.start <= inp.end))
    order = keep[np.argsort(cols[keep], kind="stable")]
    assert np.array_equal(rows["pod"], pods[order])
    assert np.array_equal(rows["col"], cols[order])
    assert np.array_equal(rows["cpu"], np.nan_to_num(usage["cpu"].to_numpy(float)[order]))


def _report(path: Path, out: Path) -> dict[str, object]:
    result = CliRunner().invoke(
        main,
        ["report", "whatif", str(path), "--out", str(out), "--strategy", "kube-default",
         "--strategy", "koord-loadaware", "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads((out / "report.json").read_text())
    data.pop("generated_at", None)  # the wall clock: the only field that may differ
    return data


def test_whatif_report_identical_in_blocks_and_whole(
    snap: Snapshot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_snapshot(snap, tmp_path / "snap")
    whole = _report(path, tmp_path / "whole")  # default BLOCK_ROWS: one block here
    monkeypatch.setattr(podrows, "BLOCK_ROWS", TINY)
    blocks = _report(path, tmp_path / "blocks")
    assert blocks == whole
    rows = {r["strategy"]: r for r in whole["tables"]["comparison"]}  # type: ignore[index]
    assert set(rows) >= {"observed", "kube-default", "koord-loadaware"}

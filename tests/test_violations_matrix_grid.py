"""The what-if's violations from its projected matrices (``usage.grid.matrix_grid``), not from a
projected node usage table pivoted back into the same matrices (issue 27 item 3: that table is
50 M rows for a 5,000-node week).

The definition being matched is ``usage_grid`` over the table ``_projected_node_usage`` writes
(one row per node and time where either resource has a sample): the same keys, times and
values, NaN where there is no sample, and then the same ``report.json``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.sources import SyntheticSpec, generate
from analyzer.usage.grid import matrix_grid, usage_grid
from analyzer.whatif import evaluate as evaluate_module

STEP = 300 * 10**9


def _table(names: list[str], times: np.ndarray, values: dict[str, np.ndarray]) -> pd.DataFrame:
    """The long table of the matrices: a row where either resource has a sample."""
    either = ~np.isnan(values["cpu"]) | ~np.isnan(values["memory"])
    rows, cols = np.nonzero(either)
    return pd.DataFrame(
        {
            "node": [names[r] for r in rows],
            "timestamp": pd.to_datetime(times[cols], utc=True),
            "cpu": values["cpu"][rows, cols],
            "memory": values["memory"][rows, cols],
        }
    )


def test_matrix_grid_is_the_grid_of_its_table() -> None:
    rng = np.random.default_rng(7)
    names = ["n1", "n2", "n3", "spare"]
    times = np.int64(1_700_000_000 * 10**9) + STEP * np.arange(12, dtype=np.int64)
    values = {r: rng.uniform(0.1, 9.0, (4, 12)) for r in ("cpu", "memory")}
    values["cpu"][:, :2] = np.nan  # no sample before column 2, in either resource
    values["memory"][:, :2] = np.nan
    values["cpu"][:, 10:] = np.nan  # memory only at 10, nothing at 11
    values["memory"][:, 11] = np.nan
    values["cpu"][1, 4:7] = np.nan  # a gap of one resource
    values["memory"][2, 5] = np.nan
    keys = ["n3", "n1", "absent", "n2"]  # other order; a key with no row; "spare" dropped
    got = matrix_grid(keys, names, times, values, timedelta(seconds=300))
    want = usage_grid(_table(names, times, values), step=timedelta(seconds=300), keys=keys)
    assert got.keys == want.keys
    assert got.times.equals(want.times) and len(got.times) == 9  # columns 2..10
    for resource in ("cpu", "memory"):
        assert np.array_equal(got.values[resource], want.values[resource], equal_nan=True)
    assert np.isnan(got.values["cpu"][2]).all()  # "absent": all NaN


def test_matrix_grid_without_a_sample_is_empty() -> None:
    times = np.arange(3, dtype=np.int64) * STEP
    values = {r: np.full((2, 3), np.nan) for r in ("cpu", "memory")}
    got = matrix_grid(["a", "b"], ["a", "b"], times, values, timedelta(seconds=300))
    want = usage_grid(
        _table(["a", "b"], times, values), step=timedelta(seconds=300), keys=["a", "b"]
    )
    assert len(got.times) == len(want.times) == 0
    assert got.values["cpu"].shape == want.values["cpu"].shape == (2, 0)


def _report(path: Path, config: Path, out: Path) -> dict[str, object]:
    result = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "whatif", str(path), "--out", str(out),
         "--strategy", "kube-default", "--strategy", "most-allocated", "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads((out / "report.json").read_text())
    data.pop("generated_at", None)  # the wall clock: the only field that may differ
    return data


def test_whatif_report_identical_from_the_matrices_and_from_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generate(SyntheticSpec(seed=3, nodes=8, days=0.5, step=300)).snapshot
    path = write_snapshot(snap, tmp_path / "snap")
    config = tmp_path / "analyzer.yaml"  # low thresholds: every strategy has breaches to compare
    config.write_text("thresholds:\n  usageThresholds: {cpu: 20, memory: 30}\n")
    fast = _report(path, config, tmp_path / "fast")
    monkeypatch.setattr(evaluate_module, "_projected_grid", lambda *_args: None)
    table = _report(path, config, tmp_path / "table")
    assert fast == table
    rows = {r["strategy"]: r for r in fast["tables"]["comparison"]}  # type: ignore[index]
    assert {"observed", "kube-default", "most-allocated"} <= set(rows)
    assert all(int(r["violations"]) > 0 for r in rows.values()), rows

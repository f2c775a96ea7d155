"""``whatif --autoscaler``: on a terminal, one line before the replays under the autoscaler says
how many there are and that they are the slow part (minutes on a week of a few hundred nodes,
docs/autoscaling.md "What it costs"), so the wait is not taken for a hang; none in a cron log."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.cli import whatif as whatif_cmd
from analyzer.core.snapshot import write_snapshot
from analyzer.sources import SyntheticSpec, generate


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("notice") / "snap"
    write_snapshot(generate(SyntheticSpec(seed=3, nodes=8, days=0.25, step=600)).snapshot, out)
    return out


def _stderr(snap: Path, *extra: str) -> str:
    run = CliRunner().invoke(
        main, ["whatif", str(snap), "--workers", "1", "--format", "json", *extra]
    )
    assert run.exit_code == 0, run.output
    return run.stderr


def test_a_terminal_is_told_how_many_replays_run_under_the_autoscaler(
    snap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whatif_cmd, "is_terminal", lambda: True)
    # two strategies (observed is never autoscaled) × three seeds
    said = _stderr(snap, "--strategy", "kube-default", "--strategy", "most-allocated",
                   "--seeds", "3", "--autoscaler", "cluster-autoscaler")  # fmt: skip
    assert "replaying under cluster-autoscaler: 6 replays, one per strategy and seed" in said
    assert _stderr(snap, "--strategy", "kube-default") == ""  # no autoscaler: nothing said


def test_a_cron_log_gets_no_such_line(snap: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(whatif_cmd, "is_terminal", lambda: False)
    said = _stderr(snap, "--strategy", "kube-default", "--autoscaler", "cluster-autoscaler")
    assert "replaying under" not in said

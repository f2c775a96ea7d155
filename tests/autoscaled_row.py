"""The one "strategy + autoscaler" row of ``analyzer whatif --format json`` on a snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, write_snapshot


def autoscaled_row(tmp_path: Path, snap: Snapshot, autoscaler: str, config: str) -> dict[str, Any]:
    """``snap`` written under ``tmp_path`` and replayed with kube-default under ``autoscaler``
    (``config``: the config file's text); its row (the run must succeed)."""
    write_snapshot(snap, tmp_path / "snap")
    path = tmp_path / "config.yaml"
    path.write_text(config)
    run = CliRunner().invoke(
        main,
        ["--config", str(path), "whatif", str(tmp_path / "snap"), "--strategy", "kube-default",
         "--workers", "1", "--format", "json", "--autoscaler", autoscaler],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.output)["autoscaled"]
    return dict(row)

"""The generator's autoscaled cluster as the fidelity tests replay it (issue 25 item 4): the data
(``analyzer generate --autoscaled``: ``NODES`` at the start, one-minute step, 16 pods per node,
full churn) and the settings of the generator's own CA (minSize 1, maxSize twice the starting
nodes, CA's defaults: frequent loops on, as the data's kubelet version's CA, 1.36, has them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import main
from analyzer.replay.autoscale_setup import AutoscalerSettings, GroupBounds, parse_settings

NODES = 8


def generate_autoscaled(tmp_path: Path, seed: int, days: str = "1") -> Path:
    """The generated autoscaled snapshot of ``seed`` over ``days``, written under ``tmp_path``."""
    out = tmp_path / f"snap-{seed}"
    run = CliRunner().invoke(
        main,
        ["generate", "--out", str(out), "--nodes", str(NODES), "--days", days, "--step", "60s",
         "--seed", str(seed), "--pods-per-node", "16", "--churn", "1", "--autoscaled"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    return out


def generator_settings() -> AutoscalerSettings:
    """The replay's CA set as the generator's is (module docstring)."""
    return dataclasses.replace(parse_settings(None), groups={"general": GroupBounds(1, 2 * NODES)})


def report_autoscaled(tmp_path: Path, snap: Path, *extra: str) -> Path:
    """``analyzer report whatif`` of ``snap`` with kube-default under cluster-autoscaler (and
    ``extra`` options), one worker: the report's folder."""
    out = tmp_path / "report"
    run = CliRunner().invoke(
        main,
        ["report", "whatif", str(snap), "--out", str(out), "--strategy", "kube-default",
         "--workers", "1", "--autoscaler", "cluster-autoscaler", *extra],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    return out

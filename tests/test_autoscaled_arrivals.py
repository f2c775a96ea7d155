"""The replays under an autoscaler read pods as arriving when created, whatever ``--arrivals``.

The data's scheduled times hold the waits its own autoscaler caused: in the generator's
autoscaled cluster (``analyzer generate --autoscaled``) a pod that found no room was scheduled
when the node its CA added became Ready. The autoscaled replay drops the data's node joins and
must make those waits itself, so the pod has to ask the replay's CA at its creation. Read at its
scheduled time it would ask only once the data's node had come, and wait a second provisioning
delay: the replay's nodes come late and its node-hours fall short of the data's (seed 8: 8.1 %).
"""

from __future__ import annotations

import json
from pathlib import Path

from autoscaled_data import generate_autoscaled, generator_settings, report_autoscaled
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot
from analyzer.replay.engine import Strategy
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.whatif.autoscaled import run_autoscaled


def test_pods_that_waited_for_the_datas_new_nodes_wait_for_the_replays(tmp_path: Path) -> None:
    seed = 8
    snap = read_snapshot(generate_autoscaled(tmp_path, seed))
    inp = prepare(snap)  # the comparison's default: arrivals at the scheduled times
    assert inp.arrivals == "scheduled"
    waited = (snap.pods["scheduled"] - snap.pods["created"]).dt.total_seconds()
    assert waited.max() >= 60, "no pod of the data waited for a node: the case proves nothing"
    # the fidelity test's settings (tests/test_autoscale_fidelity.py): the generator's bounds,
    # CA 1.36's defaults, its tie-break stream
    settings = generator_settings()
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    out = run_autoscaled(inp, strategy, seed, settings)
    gap = abs(out.total.node_hours - out.total.observed_node_hours) / out.total.observed_node_hours
    assert gap <= 0.02, f"node-hours {out.total.node_hours:.1f} vs the data's " \
        f"{out.total.observed_node_hours:.1f}"  # fmt: skip
    # the replay's CA did the scale-ups, and the pods felt their latency
    assert out.total.nodes_added > 0
    assert out.pending_pod_seconds_scale_up > 0
    assert out.to_dict()["arrivals"] == "created"


def test_whatif_arrivals_do_not_change_the_rows_under_the_autoscaler(tmp_path: Path) -> None:
    snap = generate_autoscaled(tmp_path, 1)
    rows = {}
    for arrivals in ("scheduled", "created"):
        run = CliRunner().invoke(
            main,
            ["whatif", str(snap), "--strategy", "kube-default", "--autoscaler",
             "cluster-autoscaler", "--arrivals", arrivals, "--format", "json"],
        )  # fmt: skip
        assert run.exit_code == 0, run.output
        (row,) = json.loads(run.stdout)["autoscaled"]
        rows[arrivals] = row
    assert rows["scheduled"]["arrivals"] == rows["created"]["arrivals"] == "created"
    for key in ("node_hours", "nodes_added", "nodes_removed", "pending_pod_seconds_scale_up"):
        assert rows["scheduled"][key] == rows["created"][key], key


def test_the_page_says_the_rows_pods_arrive_when_created(tmp_path: Path) -> None:
    require_chromium()
    out = report_autoscaled(tmp_path, generate_autoscaled(tmp_path, 1))
    (row,) = json.loads((out / "report.json").read_text())["comparison"]["autoscaled"]
    assert row["arrivals"] == "created"
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "report.html")
        said = browser.evaluate(
            "[...document.querySelectorAll('#autoscaler p')].map(p => p.textContent).join(' ')"
        )
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert "every pod arrives when it was created, whatever the comparison's arrivals" in said

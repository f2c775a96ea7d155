"""``--autoscaler auto``: the node autoscaler a recorded cluster's data suggests, and the line
saying which and why (``analyzer.whatif.autoscaler_choice``).

- The generator's day with node events: a third of the open nodes carry cluster-autoscaler's
  ``DeletionCandidateOfClusterAutoscaler`` then ``ToBeDeletedByClusterAutoscaler`` taints
  (``analyzer.sources.node_events``): only CA writes those, so auto picks CA.
- The same day without node events: eight nodes all day, none joining or leaving → none.
- Hand-built two-hour clusters: GKE node-pool labels with a node joining at 0:30 → CA (a managed
  node group that scaled); Karpenter's ``karpenter.sh/nodepool`` label → Karpenter (its replay
  runs: the page's rows are Karpenter's); a node leaving with nothing naming an autoscaler → none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.sources import SyntheticSpec, generate


def _generated(tmp: Path, events: bool) -> Path:
    spec = SyntheticSpec(seed=3, nodes=8, days=1, step=600, node_events=events)
    out = tmp / f"snap-{events}"
    write_snapshot(generate(spec).snapshot, out)
    return out


def _json(snap: Path) -> dict[str, Any]:
    run = CliRunner().invoke(
        main,
        ["whatif", str(snap), "--strategy", "kube-default", "--workers", "1",
         "--autoscaler", "auto", "--format", "json"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    return dict(json.loads(run.output))


def test_node_events_pick_cluster_autoscaler_and_the_page_says_why(tmp_path: Path) -> None:
    require_chromium()
    snap = _generated(tmp_path, events=True)
    out = tmp_path / "report"
    run = CliRunner().invoke(
        main,
        ["report", "whatif", str(snap), "--out", str(out), "--strategy", "kube-default",
         "--workers", "1", "--autoscaler", "auto"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    page = json.loads((out / "report.json").read_text())
    choice = page["comparison"]["autoscaler_choice"]
    assert choice["asked"] == "auto" and choice["chosen"] == "cluster-autoscaler"
    # the taint that decided it, by name
    assert any(
        t in choice["why"]
        for t in ("DeletionCandidateOfClusterAutoscaler", "ToBeDeletedByClusterAutoscaler")
    )
    assert page["comparison"]["autoscaler"] == "cluster-autoscaler"
    (row,) = page["comparison"]["autoscaled"]  # the replay did run under CA
    assert row["autoscaler"] == "cluster-autoscaler" and row["node_hours"] > 0
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "report.html")
        shown = browser.evaluate("document.querySelector('[data-autoscaler-choice]').textContent")
        visible = browser.evaluate(
            "document.querySelector('[data-autoscaler-choice]').getBoundingClientRect().height"
        )
        shot = browser.call("Page.captureScreenshot", format="png")
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert shown == choice["why"] and visible > 0
    assert len(shot["data"]) > 1000  # a real image came back


def test_a_cluster_without_churn_picks_none(tmp_path: Path) -> None:
    page = _json(_generated(tmp_path, events=False))
    choice = page["autoscaler_choice"]
    assert choice["chosen"] == "none"
    assert "no node joined or left" in choice["why"]
    assert "autoscaled" not in page  # today's what-if: the data's nodes as observed


def _labelled(tmp: Path, labels: str, nodes: list[N]) -> Path:
    snap = build(nodes, [P("p0", "a", cpu=1500, memory=GI)], minutes=120)
    snap.nodes["labels"] = labels
    snap.pods["owner_name"] = "web-5d9f"
    out = tmp / "snap"
    write_snapshot(snap, out)
    return out


@pytest.mark.parametrize(
    ("labels", "nodes", "chosen", "words"),
    [
        ('{"cloud.google.com/gke-nodepool": "pool"}', [N("a"), N("b", first=30)],
         "cluster-autoscaler", ["cloud.google.com/gke-nodepool", "1 node joined and 0 left"]),
        ('{"karpenter.sh/nodepool": "default"}', [N("a"), N("b", last=60)],
         "karpenter", ["2 nodes labelled karpenter.sh/nodepool", "replayed with Karpenter"]),
        ("{}", [N("a"), N("b", last=60)],
         "none", ["0 nodes joined and 1 left", "no node label, taint or annotation"]),
    ],
)  # fmt: skip
def test_labels_and_churn_decide(
    tmp_path: Path, labels: str, nodes: list[N], chosen: str, words: list[str]
) -> None:
    page = _json(_labelled(tmp_path, labels, nodes))
    choice = page["autoscaler_choice"]
    assert choice["chosen"] == chosen
    for word in words:
        assert word in choice["why"]
    assert ("autoscaled" in page) == (chosen != "none")
    assert all(row["autoscaler"] == chosen for row in page.get("autoscaled", []))

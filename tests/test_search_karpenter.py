"""Karpenter in ``whatif --search`` (its finalists), in the monthly scenarios, and chosen by
``--autoscaler auto`` on Karpenter's node labels.

**Search** — the cluster of tests/test_replay_karpenter.py: three 4-core nodes, three 1.5-core
ReplicaSet pods for two hours (1-minute step); the grid MostAllocated / LeastAllocated × weights
(cpu 1, memory 1) / (cpu 2, memory 1): four configurations and the kube-default baseline.

- Round 1 (fixed nodes): both MostAllocated pack two pods on one node (33 % of the capacity of
  active nodes released); both LeastAllocated spread the pods like kube-default (0 %). Finalists:
  kube-default, then the recommended MostAllocated, then the other MostAllocated (on the front),
  then the first LeastAllocated by grid order — the second LeastAllocated is left out.
- Round 2 (Karpenter's defaults: poll every 10 s, consolidateAfter 0s, budget 10 % → 1 node, a
  command run 15 s after it is made, once validated): at 0:00:10 one node is chosen whatever
  the scheduler — a spread one by single-node consolidation (its pod fits beside another's: 3 of
  4 cores), a packed one's empty node by emptiness — and goes at 0:00:25; then nothing else can
  go (4.5 > 4 cores; no cheaper shape). So every finalist runs 2 × 2 h + 25 s = 4.0069
  node-hours, at most the data's 6, and releases the same 33.2 %; the tie goes to fewer peak
  active nodes: MostAllocated (2).

**Monthly** — tests/monthly_scenarios_case.py's month (pods arriving at minutes 1, 2, 3 of a
30-minute window) with ``consolidateAfter: 10m``: "today" never consolidates (2.1-core pods
never share a 4-core node, one node shape), so nothing released; "both" (1.5-core pods packed by
most-allocated) leaves one node empty from the start, consolidatable at 10:00. Nothing changes
in the cluster after the last pod's arrival at 3:00, so the methods, having found nothing at
3:10, look again only when the consolidation state resets (``ConsolidationState``: 5 min after
the last change, 8:00, when nothing is consolidatable yet, then every 5 min: 13:00): emptiness
chooses it at 13:00 and it is deleted 15 s later: 1.5 − 16.75/60 node-hours, 0.558 fewer
nodes on average → 1 released. (Before 2026-12-02 the replay looked again at 10:00 itself:
19.75 min released.)
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from monthly_scenarios_case import MONTH, STRATEGIES, write_case
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

GRID = (
    "scoring: [MostAllocated, LeastAllocated]\n"
    "resourceWeights: [{cpu: 1, memory: 1}, {cpu: 2, memory: 1}]\n"
    "loadAwareThresholds: [null]\n"
)
KARPENTER_HOURS = 4 + 25 / 3600  # two nodes all along, the third until 0:00:25
LEFT_OUT = "LeastAllocated (weights cpu 2, memory 1)"


def _spread(tmp: Path, labels: str = "{}") -> Path:
    snap = build(
        [N("a"), N("b"), N("c")],
        [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")],
        minutes=120,
    )
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: Karpenter may move them
    snap.nodes["labels"] = labels
    write_snapshot(snap, tmp / "snap")
    (tmp / "grid.yaml").write_text(GRID)
    return tmp / "snap"


def _search(tmp: Path, snap: Path, autoscaler: str, *extra: str) -> Any:
    return CliRunner().invoke(
        main,
        ["whatif", str(snap), "--search", "--search-grid", str(tmp / "grid.yaml"),
         "--workers", "1", "--autoscaler", autoscaler, *extra],
    )  # fmt: skip


@pytest.fixture(scope="module")
def auto_search(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The search with --autoscaler auto on nodes labelled karpenter.sh/nodepool (one run)."""
    tmp = tmp_path_factory.mktemp("search-karpenter")
    snap = _spread(tmp, '{"karpenter.sh/nodepool": "default"}')
    run = _search(tmp, snap, "auto", "--format", "json", "--out", str(tmp / "out"))
    assert run.exit_code == 0, run.output
    return tmp / "out", json.loads(run.output)


def test_auto_chooses_karpenter_on_its_node_labels(
    auto_search: tuple[Path, dict[str, Any]],
) -> None:
    _, page = auto_search
    choice = page["autoscaler_choice"]
    assert choice["asked"] == "auto" and choice["chosen"] == "karpenter"
    assert "3 nodes labelled karpenter.sh/nodepool" in choice["why"]
    assert page["ranked_on"] == "karpenter"


def test_the_finalists_are_replayed_under_karpenter(
    auto_search: tuple[Path, dict[str, Any]],
) -> None:
    _, page = auto_search
    rows = {r["name"]: r for r in page["rows"]}
    assert page["finalists"] == [
        "kube-default",
        "MostAllocated",
        "MostAllocated (weights cpu 2, memory 1)",
        "LeastAllocated",
    ]
    for name in page["finalists"]:
        k = rows[name]["autoscaled"]
        assert k["autoscaler"] == "karpenter"
        # Karpenter could consolidate: never more node-hours than the data's three nodes
        assert k["node_hours"] == pytest.approx(KARPENTER_HOURS, abs=1e-6)
        assert k["node_hours"] <= k["observed_node_hours"] == pytest.approx(6.0)
        assert k["nodes_removed"] == 1 and k["nodes_added"] == 0
        assert 0 < k["core_hours_released_pct"] <= 100
        assert k["pending_pods_at_end"] == 0
    # a spread placement needs the consolidation to move a pod; a packed one left a node empty
    assert rows["kube-default"]["autoscaled"]["pods_evicted"] == 1
    assert rows["MostAllocated"]["autoscaled"]["pods_evicted"] == 0
    left = rows[LEFT_OUT]
    assert "autoscaled" not in left and not left["on_front"] and not left["recommended"]
    assert rows["observed"]["autoscaled"]["node_hours"] == pytest.approx(6.0)


def test_the_recommendation_ranks_the_finalists_under_karpenter(
    auto_search: tuple[Path, dict[str, Any]],
) -> None:
    _, page = auto_search
    assert page["recommended"] == "MostAllocated"  # the tie at 33.2 %: fewer peak active nodes
    assert page["sentence"].startswith("Ranked on the replay under karpenter of the 4 finalists")
    assert f"{KARPENTER_HOURS:,.1f} node-hours, observed 6.0" in page["sentence"]
    assert f"({100 * (1 - KARPENTER_HOURS / 6):.1f} %)" in page["sentence"]
    assert "(33.2 %)" in page["sentence"]
    assert any("only the finalists were replayed" in n for n in page["notes"])


def test_karpenter_named_in_the_table(auto_search: tuple[Path, dict[str, Any]]) -> None:
    out, _ = auto_search
    tmp = out.parent
    run = _search(tmp, tmp / "snap", "karpenter")
    assert run.exit_code == 0, run.output
    assert "the 3 best replayed again under karpenter" in run.output
    assert "node_hours_karpenter" in run.output
    assert "Ranked on the replay under karpenter of the 4 finalists" in run.output


@pytest.mark.browser
def test_the_search_page_says_karpenter_and_why(
    auto_search: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    require_chromium()
    out, page = auto_search
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "search.html")
        text = browser.evaluate("document.body.innerText")
        table = "document.querySelector('table[data-table=search]')"
        heads = browser.evaluate(
            f"[...{table}.querySelectorAll('thead th')].map(h => h.textContent.trim())"
        )
        cells = browser.evaluate(
            f"[...{table}.querySelectorAll('tbody tr')]"
            ".map(r => [...r.cells].map(c => c.textContent.trim()))"
        )
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    finally:
        browser.close()
    (tmp_path / "search-karpenter.png").write_bytes(base64.b64decode(shot["data"]))
    assert browser.console_errors() == []
    assert page["autoscaler_choice"]["why"] in text  # which autoscaler, and why
    assert "only the finalists were replayed" in text
    names = [h.rstrip(" ↕") for h in heads]
    shown = {row[0]: dict(zip(names, row, strict=True)) for row in cells}
    for name in page["finalists"]:
        assert shown[name]["Node-hours under karpenter"] == "4.0"
        assert shown[name]["≤ observed"] == "yes"
    # the row left out of the Karpenter round: its cells empty (never NaN), not judged there
    assert shown[LEFT_OUT]["Node-hours under karpenter"] == "–"
    assert shown[LEFT_OUT]["≤ observed"] == "–"
    assert "nan" not in text.lower().split()


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The month's history and snapshot, written once for the monthly tests below."""
    folder = tmp_path_factory.mktemp("month-karpenter")
    write_case(folder)
    return folder


def test_monthly_scenarios_say_what_karpenter_would_release(month: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("autoscaler:\n  karpenter:\n    disruption: {consolidateAfter: 10m}\n")
    review = tmp_path / "review"
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "monthly", str(month / "out"), "--out",
         str(review), "--month", MONTH, "--snapshot", str(month / "snap"), "--strategy",
         STRATEGIES[0], "--strategy", STRATEGIES[1], "--workers", "1",
         "--autoscaler", "karpenter"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    payload = json.loads((review / "report.json").read_text())
    pool = payload["pools"][0]
    rows = {r["name"]: r["autoscaler"] for r in pool["scenarios"]}
    assert rows["today"]["autoscaler"] == "karpenter"
    assert rows["today"]["nodes_released"] == 0 and rows["today"]["node_hours"] == 1.5
    both = rows["both"]
    assert both["node_hours"] == pytest.approx(1.5 - 16.75 / 60, abs=1e-6)
    assert both["nodes_released_mean"] == pytest.approx(16.75 / 30, abs=1e-6)
    assert both["nodes_released"] == 1 and both["nodes_removed"] == 1
    for figures in rows.values():  # never impossible: within the data's nodes, never negative
        assert 0 <= figures["nodes_released"] <= figures["observed_peak_nodes"] == 3
        assert 0 < figures["node_hours"] <= 1.5 + 1e-9
    sim = pool["simulated_decision"]
    assert (sim["autoscaler"], sim["scenario"], sim["nodes"]) == ("karpenter", "both", 1)
    assert sim["sentence"].startswith("karpenter would release 1 node after right-sizing")
    assert "evicted by consolidation" in sim["sentence"]
    assert payload["simulation"]["autoscaler"] == "karpenter"
    assert sim["sentence"] in run.output
    page = (review / "report.html").read_text()
    assert "Each scenario was also replayed under karpenter" in page
    assert "Nodes released by karpenter" in page and "Pods evicted by consolidation" in page


BAD_POLICY = "autoscaler:\n  karpenter:\n    disruption: {consolidationPolicy: WhenIdle}\n"


@pytest.mark.parametrize(
    ("fault", "command"),
    [
        ("karpenter-policy-bad", ["--autoscaler", "karpenter"]),  # in the monthly scenarios
        ("autoscaler-auto-karpenter-config-bad", ["--autoscaler", "auto"]),
    ],
)
def test_a_bad_karpenter_section_is_refused_before_the_scenarios(
    month: Path, tmp_path: Path, fault: str, command: list[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(BAD_POLICY)
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "monthly", str(month / "out"), "--out",
         str(tmp_path / "review"), "--month", MONTH, "--snapshot", str(month / "snap"),
         *command],
    )  # fmt: skip
    # each row id spelled out on one line: the catalogue test looks for documented_exit("<id>")
    policy, auto = (
        documented_exit("karpenter-policy-bad"),
        documented_exit("autoscaler-auto-karpenter-config-bad"),
    )
    assert run.exit_code == (policy if fault == "karpenter-policy-bad" else auto)
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.output
    assert "autoscaler.karpenter.disruption.consolidationPolicy" in lines[0]
    assert not (tmp_path / "review").exists()  # refused before anything was written


def test_auto_search_refuses_a_bad_karpenter_section_on_any_cluster(tmp_path: Path) -> None:
    # the spread cluster has no Karpenter label (auto would pick none): the section is still
    # checked before the snapshot is read, so a typo never waits for the day Karpenter is chosen
    snap = _spread(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(BAD_POLICY)
    run = CliRunner().invoke(
        main,
        ["--config", str(config), "whatif", str(snap), "--search", "--search-grid",
         str(tmp_path / "grid.yaml"), "--autoscaler", "auto", "--out", str(tmp_path / "o")],
    )  # fmt: skip
    assert run.exit_code == documented_exit("autoscaler-auto-karpenter-config-bad")
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "consolidationPolicy" in lines[0]
    assert not (tmp_path / "o").exists()

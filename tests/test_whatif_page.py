"""The what-if page says true things (issue 14, "What-if: wrong or contradictory").

Notes computed from the snapshot (not a fixed caveat), one verdict rule whose figures are in the
table, a highlighted row only when there is a recommendation, no bare dash on a card, no spread
columns with one seed, the report in the folder the user names, why pods waited and where pods
moved, units, and the configuration-search hook.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from capacity_checks import capacity_problems, pct_shown, split_pool_mix
from click.testing import CliRunner
from markupsafe import escape
from replay_fixtures import GI, N, P, build
from test_replay_waits import constrained

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.report.whatif import build_whatif_context, write_whatif_report
from analyzer.report.whatif_tables import human_duration
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.compare import WhatIfResult, WhatIfSettings, run_whatif
from analyzer.whatif.explain import UNBOUND, UNPLACED, why_sentence

OLD_CAVEAT = "Node affinity, nodeSelectors, taints and tolerations are not in the snapshot"
COUNT = re.compile(r"^\d{1,3}(,\d{3})*$")  # an integer with thousands separators
DURATION = re.compile(r"^(0 s|\d+ (d|h|min|s)( \d+ (h|min|s))?)$")


def spread() -> Snapshot:
    """Four nodes, four 1-core pods that really ran one per node: packing frees three nodes."""
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(4)]
    pods = [P(f"p{i}", f"n{i}", cpu=1000, start=i + 1, cpu_used=300.0) for i in range(4)]
    return build(nodes, pods, minutes=20)


@pytest.fixture(scope="module")
def pooled() -> Snapshot:
    """30 nodes in pools (a tainted GPU pool, a memory pool some pods select): packing leaves
    pool-bound pods waiting; rtcr-binpack's waits differ between tie-break seeds."""
    return generate(SyntheticSpec(seed=42, nodes=30, days=1, step=300)).snapshot


@pytest.fixture(scope="module")
def seeded(pooled: Snapshot) -> WhatIfResult:
    settings = WhatIfSettings(
        strategies=("kube-default", "most-allocated", "rtcr-binpack"), seeds=3, workers=1
    )
    return run_whatif(pooled, settings)


def _table(data: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in data["tables"][name]}


def test_notes_say_what_was_applied_from_the_snapshot() -> None:
    result = run_whatif(constrained(), WhatIfSettings(strategies=("kube-default",), workers=1))
    text = " ".join(result.notes)
    assert OLD_CAVEAT not in text
    # constrained(): g0 tainted NoSchedule; "cache" and "db" select pool=memory; no tolerations
    assert "taints on 1 node of 4, nodeSelectors of 2 pods and tolerations of 0 pods of 2" in text
    assert "preemption" in text and "topology spread" in text  # what the replay never does
    plain = run_whatif(spread(), WhatIfSettings(strategies=("kube-default",), workers=1))
    plain_text = " ".join(plain.notes)
    assert "No node in the snapshot has a NoSchedule/NoExecute taint" in plain_text
    assert "Applied by" not in plain_text


def test_notes_name_missing_usage_and_unbound_pods() -> None:
    nodes = [N("n0"), N("n1")]
    pods = [P("ran", "n0", cpu=1000, start=1), P("never", None, cpu=1000, start=2)]
    snap = build(nodes, pods, minutes=10)
    # drop "ran"'s usage samples: the note must count it
    snap.pod_usage = snap.pod_usage[snap.pod_usage["uid"] != "ran"].reset_index(drop=True)
    result = run_whatif(snap, WhatIfSettings(strategies=("kube-default",), workers=1))
    text = " ".join(result.notes)
    assert "No usage samples for 1 pod of 1 that ran" in text
    assert "1 pod was never bound to a node in the data" in text


def _numbers(sentence: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?", sentence)


def test_verdict_figures_are_in_the_table_with_several_seeds(seeded: WhatIfResult) -> None:
    context = build_whatif_context(seeded)
    rows = {r["strategy"]: r for r in context.tables["comparison"].records()}
    cells = {
        name: {cell.text for cell in row}
        for (_, row), name in zip(
            context.tables["comparison"].rows(), context.tables["comparison"].frame["strategy"],
            strict=True,
        )
    }  # fmt: skip
    sentence, shifts = split_pool_mix(seeded.recommendation)
    for name, _, _, pct in shifts:  # a pool-mix sentence's share is its strategy's table cell
        assert pct_shown(cells[name], pct) and rows[name]["pool_mix"] == "pool-mix shift"
    assert capacity_problems(seeded.to_dict()) == []
    named = [
        n for n in rows if (n != "observed" and f"{n} (" in sentence) or sentence.startswith(n)
    ]
    assert len(named) == 1, sentence
    shown = cells["observed"] | cells[named[0]]
    for number in _numbers(sentence):
        assert number in shown, (number, sentence, shown)
    # the worst seed is what both use: rtcr-binpack's seeds differ on this cluster
    rtcr = next(c for c in seeded.strategies if c.name == "rtcr-binpack")
    waited = [o.waited for o in rtcr.outcomes]
    assert len(set(waited)) > 1
    assert rows["rtcr-binpack"]["waited"] == max(waited)
    assert "worst tie-break seed" in seeded.rule


def test_the_recommended_row_is_highlighted_and_said_so(tmp_path: Path) -> None:
    result = run_whatif(spread(), WhatIfSettings(strategies=("most-allocated",), workers=1))
    html = write_whatif_report(result, tmp_path / "best").html.read_text()
    assert result.best == "most-allocated"
    hot = re.findall(r'<tr class="hot"><td>([^<]*)</td>', html)
    assert hot == ["most-allocated"]
    assert "The highlighted row is the recommendation (most-allocated)." in html


def test_no_recommendation_no_highlight_and_no_bare_dash(tmp_path: Path) -> None:
    result = run_whatif(
        constrained(), WhatIfSettings(strategies=("kube-default", "most-allocated"), workers=1)
    )
    assert result.best is None
    paths = write_whatif_report(result, tmp_path / "none")
    html = paths.html.read_text()
    assert 'class="hot"' not in html and "highlighted row" not in html
    cards = html[html.index('<div class="cards">') : html.index('id="comparison"')]
    assert "–" not in cards  # a card never shows a bare dash
    data = json.loads(paths.json.read_text())
    card = next(c for c in data["cards"] if c["key"] == "best_peak")
    assert card["value"] is None and card["text"] == "none qualifies"
    assert "No strategy released capacity" in cards or "had more violations" in cards


def test_spread_columns_only_with_several_seeds(seeded: WhatIfResult, tmp_path: Path) -> None:
    one = run_whatif(spread(), WhatIfSettings(strategies=("most-allocated",), workers=1))
    single = [c.label for c in build_whatif_context(one).tables["comparison"].columns]
    assert not any("seed" in label.lower() for label in single), single
    assert "Seed" not in [c.label for c in build_whatif_context(one).tables["seeds"].columns]
    several = [c.label for c in build_whatif_context(seeded).tables["comparison"].columns]
    assert "Peak active nodes (worst seed)" in several
    assert "Peak spread over seeds (max − min)" in several


def test_report_goes_to_the_named_folder_and_never_replaces_other_files(tmp_path: Path) -> None:
    snap = write_snapshot(spread(), tmp_path / "snap")
    runner = CliRunner()
    args = ["report", "whatif", str(snap), "--strategy", "most-allocated", "--workers", "1"]
    out = tmp_path / "whatif"
    ok = runner.invoke(main, [*args, "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert (out / "report.html").is_file() and not (out / "whatif").exists()
    again = runner.invoke(main, [*args, "--out", str(out)])  # an earlier report is replaced
    assert again.exit_code == 0, again.output
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    refused = runner.invoke(main, [*args, "--out", str(busy)])
    assert refused.exit_code == 2
    assert "notes.txt" in refused.output and "new or empty folder" in refused.output
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]  # nothing written


def test_wait_reasons_and_moves_in_json_csv_and_page(seeded: WhatIfResult, tmp_path: Path) -> None:
    paths = write_whatif_report(seeded, tmp_path / "out")
    data = json.loads(paths.json.read_text())
    html = paths.html.read_text()
    outcomes = {c.name: c.outcomes for c in seeded.strategies}
    with (paths.folder / "waiting_pods.csv").open() as handle:
        waiting = list(csv.DictReader(handle))
    with (paths.folder / "moved_pods.csv").open() as handle:
        moved = list(csv.DictReader(handle))
    window = 86400.0
    for name, runs in outcomes.items():
        for outcome in runs:
            rows = [r for r in waiting if r["strategy"] == name and int(r["seed"]) == outcome.seed]
            assert len(rows) == outcome.waited, (name, outcome.seed)
            assert all(0 < float(r["wait_s"]) <= window for r in rows)
            assert all(r["last_refusal"] for r in rows)
        first = runs[0]
        reasons = [r for r in data["tables"]["wait_reasons"] if r["strategy"] == name]
        assert all(0 < r["pods"] <= first.waited for r in reasons)
        moves = [r for r in data["tables"]["moves"] if r["strategy"] == name]
        across = [r for r in moved if r["strategy"] == name and r["from_pool"] != r["to_pool"]]
        assert sum(r["pods"] for r in moves) == len(across)
        assert all(r["from_pool"] != r["to_pool"] for r in moves)
    most = outcomes["most-allocated"][0]
    assert most.waited > 0
    top = next(r for r in data["tables"]["wait_reasons"] if r["strategy"] == "most-allocated")
    assert top["pods"] > 0 and str(escape(top["reason"])) in html
    assert any(line.startswith("most-allocated: ") for line in data["why"])
    assert 'id="why"' in html and html.index('id="why"') < html.index('id="over-time"')


def test_units_counts_durations_and_shares(seeded: WhatIfResult, tmp_path: Path) -> None:
    context = build_whatif_context(seeded)
    comparison = context.tables["comparison"]
    for _, cells in comparison.rows():
        for column, cell in zip(comparison.columns, cells, strict=True):
            if column.kind == "int":
                assert COUNT.match(cell.text), (column.key, cell.text)
            if column.kind == "pct":
                assert cell.text.endswith(" %") and 0 <= float(cell.sort) <= 100, cell
    seeds = context.tables["seeds"]
    for _, cells in seeds.rows():
        for column, cell in zip(seeds.columns, cells, strict=True):
            if column.key.startswith("wait_"):
                assert DURATION.match(cell.text), cell.text
                assert 0 <= float(cell.sort) <= 86400
    records = comparison.records()
    assert {"allocation_cpu_pct", "moved_pct", "frag_ratio_cpu_pct"} <= set(records[0])
    assert {"wait_p50_s", "wait_p99_s", "wait_max_s"} <= set(seeds.records()[0])
    for record in seeds.records():  # only a running pod is preempted: 0 ≤ preempted ≤ placed
        assert 0 <= record["preempted"] <= record["placed"], record
    shapes = [r["shape"] for r in context.tables["headroom"].records()]
    assert shapes and all(re.search(r"[\d.]+ cores", shape) for shape in shapes), shapes
    assert all("Mi " not in shape and "Gi " not in shape for shape in shapes)  # GiB, not Gi
    assert human_duration(8040) == "2 h 14 min"
    assert human_duration(1_276_753) == "14 d 18 h"
    assert human_duration(59) == "59 s" and human_duration(0) == "0 s"
    assert human_duration(3600) == "1 h"


def test_search_block_is_the_first_card_when_given(tmp_path: Path) -> None:
    result = run_whatif(spread(), WhatIfSettings(strategies=("most-allocated",), workers=1))
    search = {
        "sentence": "most-allocated + LoadAware would have needed 12 fewer nodes at peak",
        "href": "../search/report.html",
    }
    paths = write_whatif_report(result, tmp_path / "with", search=search)
    html = paths.html.read_text()
    summary = html[html.index('id="summary"') :]
    # one verdict on top (issue 29: one answer first); the search's card folded under it with
    # the rule, still before the strategies' cards
    verdict, card = summary.index('data-answer="best"'), summary.index('data-card="search"')
    assert verdict < card < summary.index('<div class="cards">')
    assert summary.index("<details", verdict) < card < summary.index("</details>", verdict)
    assert search["sentence"] in html and 'href="../search/report.html"' in html
    # no "recommended" configuration given: no agreement line is claimed
    assert json.loads(paths.json.read_text())["search"] == {
        **search, "question": "", "searched": [], "scope": "", "recommended": None,
        "agreement": "",
    }  # fmt: skip
    assert "data-search-agreement" not in html
    # a search that did not compare the verdict's strategy: the card says so, so the two
    # answers do not read as a disagreement; one that compared it needs no such sentence
    assert result.best == "most-allocated"  # packs the spread pods: fewer nodes than observed
    question = "Which of the 1 configurations searched (kube-default) needed the fewest nodes?"
    scoped = {**search, "question": question, "searched": ["kube-default"]}
    html = write_whatif_report(result, tmp_path / "scoped", search=scoped).html.read_text()
    assert question in html
    scope = html[html.index('data-scope="search"') :].split("</p>")[0]
    assert "most-allocated, which this search did not compare" in scope
    same = {**scoped, "searched": ["kube-default", "most-allocated"]}
    html = write_whatif_report(result, tmp_path / "same", search=same).html.read_text()
    assert 'data-scope="search"' not in html
    plain = write_whatif_report(result, tmp_path / "without").html.read_text()
    assert 'data-card="search"' not in plain
    with pytest.raises(InputError, match="sentence"):
        build_whatif_context(result, search={"sentence": "x"})


def test_why_sentence_counts_and_wording() -> None:
    waiting = pd.DataFrame(
        {"pool": [UNBOUND], "last_refusal": ["not bound to any node in the data."]}
    )
    moves = pd.DataFrame(
        {"from_pool": ["general", "memory"], "to_pool": ["memory", UNPLACED], "pods": [3, 1]}
    )
    assert why_sentence("observed", waiting, moves.iloc[:0]) == (
        "observed: 1 pod waited (1 never bound in reality); the most common last refusal "
        '(1 pod): "not bound to any node in the data".'
    )
    assert why_sentence("most-allocated", waiting.iloc[:0], moves) == (
        "most-allocated: 3 pods placed in another pool than they ran in "
        "(most: 3 from general to memory)."
    )
    assert why_sentence("kube-default", waiting.iloc[:0], moves.iloc[:0]) == ""


def test_cli_table_shows_the_worst_seed_like_the_verdict(
    pooled: Snapshot, seeded: WhatIfResult, tmp_path: Path
) -> None:
    """``analyzer whatif --seeds 3`` prints the figures the verdict uses, not means over seeds."""
    snap = write_snapshot(pooled, tmp_path / "snap")
    args = ["whatif", str(snap), "--strategy", "kube-default", "--strategy", "most-allocated"]
    run = CliRunner().invoke(
        main, [*args, "--strategy", "rtcr-binpack", "--seeds", "3", "--workers", "1"]
    )
    assert run.exit_code == 0, run.output
    header, *lines = run.output.splitlines()
    column = header.split().index("waited")
    row = next(line.split() for line in lines if line.split()[:1] == ["rtcr-binpack"])
    waited = [
        o.waited for o in next(c for c in seeded.strategies if c.name == "rtcr-binpack").outcomes
    ]
    assert len(set(waited)) > 1  # the seeds differ, so a mean would not be the worst seed
    assert float(row[column]) == max(waited)
    assert "worst tie-break seed" in run.output

"""The what-if report in a real headless Chromium: no console errors, the answer first, charts
decode, the comparison table sorts, no impossible number on the page (a wait longer than the
window, a share outside 0–100 %, NaN, a negative or fractional count), and the verdict's figures
are in the table (issue 14)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from capacity_checks import pct_shown, split_pool_mix
from cdp_client import Chromium, require_chromium
from replay_fixtures import GI, N, P, build

from analyzer.report.whatif import write_whatif_report
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.compare import WhatIfSettings, run_whatif

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(4)]
    pods = [P(f"p{i}", f"n{i}", cpu=1000, start=i + 1, cpu_used=300.0) for i in range(4)]
    settings = WhatIfSettings(strategies=("kube-default", "most-allocated"), workers=1)
    result = run_whatif(build(nodes, pods, minutes=30), settings)
    return write_whatif_report(result, tmp_path_factory.mktemp("whatif")).html


def test_whatif_report_in_chromium(report: Path, tmp_path: Path) -> None:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(report)
        sections = browser.evaluate("[...document.querySelectorAll('section[id]')].map(s => s.id)")
        assert sections[:2] == ["summary", "comparison"]
        answer = browser.evaluate("document.querySelector('[data-answer=best]').textContent")
        assert answer.startswith("most-allocated would have released the most capacity")
        assert browser.evaluate(
            "[...document.querySelectorAll('img.chart')].every(i => i.complete && i.naturalWidth > 0)"
        )
        rows = "[...document.querySelectorAll('table[data-table=comparison] tbody tr')]"
        names = browser.evaluate(f"{rows}.map(r => r.cells[0].textContent)")
        assert names == ["observed", "kube-default", "most-allocated"]
        headers = "[...document.querySelectorAll('table[data-table=comparison] thead th')]"
        peak = browser.evaluate(
            f"{headers}.findIndex(h => h.textContent.startsWith('Peak active nodes'))"
        )
        assert peak > 0
        browser.evaluate(f"{headers}[{peak}].click()")
        peaks = browser.evaluate(f"{rows}.map(r => Number(r.cells[{peak}].dataset.v))")
        assert peaks == sorted(peaks) and peaks[0] == 1.0
        # the table is wider than the page: scrolled to its right end, the strategy names stay
        # in view at the box's left edge, and the recommended row keeps its highlight there
        wrap = "document.querySelector('table[data-table=comparison]').closest('.table-wrap')"
        assert browser.evaluate(f"{wrap}.scrollWidth > {wrap}.clientWidth")
        browser.evaluate(f"{wrap}.scrollLeft = {wrap}.scrollWidth")
        assert browser.evaluate(f"{wrap}.scrollLeft > 0")
        lefts = browser.evaluate(
            f"{rows}.map(r => Math.round(r.cells[0].getBoundingClientRect().left"
            f" - {wrap}.getBoundingClientRect().left))"
        )
        assert lefts == [0, 0, 0]
        backgrounds = browser.evaluate(
            f"{rows}.map(r => getComputedStyle(r.cells[0]).backgroundColor)"
        )
        hot = browser.evaluate(f"{rows}.findIndex(r => r.classList.contains('hot'))")
        assert backgrounds[hot] == "rgb(230, 244, 234)"  # #e6f4ea, the recommendation's row
        assert all(b == "rgb(255, 255, 255)" for i, b in enumerate(backgrounds) if i != hot)
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    assert browser.console_errors() == []


@pytest.fixture(scope="module")
def pooled_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with waiting pods and two tie-break seeds: 30 pooled nodes over one day."""
    require_chromium()
    snap = generate(SyntheticSpec(seed=42, nodes=30, days=1, step=300)).snapshot
    settings = WhatIfSettings(
        strategies=("kube-default", "most-allocated", "rtcr-binpack"), seeds=2, workers=1
    )
    return write_whatif_report(run_whatif(snap, settings), tmp_path_factory.mktemp("pooled")).html


# Every cell of every table on the page, with its column header and sort value.
CELLS = """[...document.querySelectorAll('table[data-table]')].flatMap(t => {
  const heads = [...t.querySelectorAll('thead th')].map(h => h.textContent.replace(/[↕▲▼]/g, '').trim());
  return [...t.querySelectorAll('tbody tr')].flatMap(r => [...r.cells].map((c, i) => ({
    table: t.dataset.table, row: r.cells[0].textContent, head: heads[i],
    text: c.textContent, v: c.dataset.v === undefined ? null : Number(c.dataset.v)})));
})"""


def test_page_shows_no_impossible_number(pooled_report: Path, tmp_path: Path) -> None:
    data = json.loads((pooled_report.parent / "report.json").read_text())
    window = (
        datetime.fromisoformat(data["comparison"]["end"])
        - datetime.fromisoformat(data["comparison"]["start"])
    ).total_seconds()
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(pooled_report)
        cells = browser.evaluate(CELLS)
        answer = browser.evaluate("document.querySelector('[data-answer=best]').textContent")
        cards = browser.evaluate(
            "[...document.querySelectorAll('[data-card] .value, [data-card] .text')]"
            ".map(e => e.textContent.trim())"
        )
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert len(cells) > 100
    for cell in cells:
        where = (cell["table"], cell["row"], cell["head"], cell["text"])
        assert "NaN" not in cell["text"] and "inf" not in cell["text"].lower(), where
        if cell["v"] is None:
            continue
        assert cell["v"] == cell["v"], where  # not NaN
        if cell["text"].endswith(" %"):
            assert 0 <= cell["v"] <= 100, where
        elif cell["head"].startswith(("Pods", "Peak", "Violations", "Nodes", "Seed", "Breach")):
            assert cell["v"] >= 0 and cell["v"] == int(cell["v"]), where
        if cell["head"].startswith("Wait"):
            assert 0 <= cell["v"] <= window, where
            assert re.fullmatch(r"0 s|\d+ (d|h|min|s)( \d+ (h|min|s))?", cell["text"]), where
    waits = [o["wait_max_s"] for s in data["comparison"]["strategies"] for o in s["outcomes"]]
    assert max(waits) > 0 and all(0 <= w <= window for w in waits)
    assert all(c and c != "–" for c in cards), cards
    # the verdict's figures are in the comparison table (rows of observed and the named strategy)
    rows: dict[str, set[str]] = {}
    for cell in cells:
        if cell["table"] == "comparison":
            rows.setdefault(cell["row"], set()).add(cell["text"])
    answer, shifts = split_pool_mix(answer)  # each pool-mix sentence: checked on its own row
    for name, fewer, _, pct in shifts:
        assert pct_shown(rows[name], pct) and "pool-mix shift" in rows[name], (name, rows[name])
        peaks = [
            c["v"]
            for c in cells
            if c["head"].startswith("Peak active") and c["table"] == "comparison"
        ]
        assert fewer >= 1 and max(peaks) >= fewer
    named = [n for n in rows if n != "observed" and (answer.startswith(n) or f"{n} (" in answer)]
    assert len(named) == 1, answer
    for number in re.findall(r"\d[\d,]*(?:\.\d+)?", answer):
        assert number in rows["observed"] | rows[named[0]], (number, answer)

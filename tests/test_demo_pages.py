"""Every page ``analyzer demo`` writes, opened in a real headless Chromium as a user would.

The demo is the first thing a new user runs, so its pages are checked for values no real cluster can
produce: a NaN or ``undefined`` in the text, a share outside 0–100 %, a timedelta leaking into prose
("0:00:00"), a count written as a float ("2,762.0"), a negative count or an impossible wait in the
JSON side files. The first screen of each page is saved as a PNG under the test output
(``$ANALYZER_TEST_OUTPUT``, default ``test-output/`` in the checkout) so that CI keeps what a user
would have seen.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from anti_affinity_facts import anti_affinity_breaks
from capacity_checks import capacity_problems, pct_shown, split_pool_mix
from cdp_client import Chromium, require_chromium
from conftest import DemoRun

from analyzer.core.snapshot import read_snapshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = Path(os.environ.get("ANALYZER_TEST_OUTPUT", REPO / "test-output")) / "screenshots"

# A word that only a bug puts on a page.
BAD_WORDS = re.compile(r"\b(NaN|nan|undefined|Infinity|-?inf)\b|(^|\t)None($|\t)", re.MULTILINE)
# An unsigned percentage ("42.5 %", "100%"); a signed one ("+3 %", "−12 %") is a change, not a share.
SHARE = re.compile(r"(?<![+\-−±\d.,])(\d{1,3}(?:,\d{3})*(?:\.\d+)?)\s?%")
# Python's timedelta repr ("0:00:00", "1 day, 2:00:00") instead of a human duration.
# A clock time after a date ("2026-11-25T11:30:14Z", "2026-11-25 11:30:14") is a timestamp.
TIMEDELTA = re.compile(
    r"(?<![\dT:-])(?<!\d{4}-\d{2}-\d{2} )\d{1,2}:\d{2}:\d{2}(?![\d:])|\bdays?, \d{1,2}:\d{2}"
)
# Table cells under a header that names a count must be whole numbers ("2,762", never "2,762.0").
COUNT_CELLS = """
[...document.querySelectorAll('table')].flatMap(table => {
  const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
  return [...table.querySelectorAll('tbody tr')].flatMap(row => [...row.cells].map((cell, i) =>
    [heads[i] || '', cell.textContent.trim()]));
})
"""
COUNT_HEADER = re.compile(r"\b(pods|nodes|violations|breaches|count|waited|placed)\b", re.I)
NOT_COUNT_HEADER = re.compile(r"%|GiB|cores|share|hours|\bh\b|mean|avg|per|time|s\)", re.I)

COUNT_KEYS = re.compile(
    r"(^|_)(count|pods|nodes|violations|breaches|waited|never_placed|moved|placed|restarts)($|_)"
)


# Fractions in 0..1: shares of pods or capacity, FGD ratios, data coverage (keys without _pct).
FRACTION_KEYS = re.compile(r"(^|_)(share|ratio|coverage)($|_)")
# Percentages that are shares of something (0..100); other *_pct keys are usage over allocatable.
SHARE_PCT_KEYS = re.compile(r"(share|coverage|requested|fragmentation|frag|moved|allocation)")
# Changes vs a reference, of either sign; capacity released is one (a strategy may hold more)
DELTA_KEYS = re.compile(r"(delta|change|released)")


@pytest.fixture(scope="module")
def demo(default_demo: DemoRun) -> Path:
    """The session's one default-size demo run (tests/conftest.py), read only here."""
    require_chromium()
    return default_demo.out


def _pages(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if p.is_file())


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")
    else:
        yield path, value


def test_demo_writes_every_page(demo: Path) -> None:
    names = {p.relative_to(demo).as_posix() for p in _pages(demo)}
    assert "reports/index.html" in names
    assert "whatif/report.html" in names
    assert "monthly/report.html" in names
    assert sum(1 for n in names if re.fullmatch(r"reports/\d{4}-\d{2}-\d{2}/report\.html", n)) == 7


def test_in_page_links_reach_a_target(demo: Path) -> None:
    """A link to ``#x`` on any demo page jumps somewhere: an element with id ``x`` exists."""
    for page in _pages(demo):
        html = page.read_text(encoding="utf-8")
        ids = set(re.findall(r'\sid="([^"]+)"', html))
        for target in re.findall(r'href="#([^"]+)"', html):
            assert target in ids, f"{page.relative_to(demo)}: #{target} has no element"


def test_navigation_reaches_every_section(demo: Path) -> None:
    """The top navigation of the monthly review, the nightly pages, the what-if and the search
    names every section the page has (the monthly's growth and headroom, the nightly's headroom
    per pod shape included), so a reader can reach each from the first screen."""
    pages = [demo / "monthly" / "report.html", demo / "whatif" / "report.html"]
    pages += [demo / "whatif" / "search.html", *sorted(demo.glob("reports/*/report.html"))]
    for page in pages:
        html = page.read_text(encoding="utf-8")
        nav = re.search(r"<nav[^>]*>(.*?)</nav>", html, re.S)
        assert nav is not None, page
        linked = set(re.findall(r'href="#([^"]+)"', nav.group(1)))
        sections = set(re.findall(r'<section id="([^"]+)"', html))
        missing = sorted(sections - linked)
        assert not missing, f"{page.relative_to(demo)}: sections missing from the nav: {missing}"
    monthly = (demo / "monthly" / "report.html").read_text(encoding="utf-8")
    assert '<section id="growth"' in monthly  # the demo carries a growth replay


def test_side_files_hold_possible_values(demo: Path) -> None:
    snapshot = read_snapshot(demo / "snapshot")
    start, end = (
        datetime.fromisoformat(snapshot.meta.start),
        datetime.fromisoformat(snapshot.meta.end),
    )
    window_s = (end - start).total_seconds()
    assert window_s > 0
    files = sorted([*demo.rglob("report.json"), *demo.rglob("search.json")])
    assert files
    for path in files:
        document = json.loads(path.read_text(), parse_constant=lambda c: float(c))
        for key, value in _walk(document):
            where = f"{path.relative_to(demo)}: {key}"
            if isinstance(value, float):
                assert math.isfinite(value), f"{where} is {value}"
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            leaf = key.rsplit(".", 1)[-1].split("[", 1)[0]
            if COUNT_KEYS.search(leaf) and not leaf.startswith(("delta", "change")):
                assert value >= 0, f"{where} is a negative count: {value}"
            if "wait" in leaf and leaf.endswith("_s"):
                assert 0 <= value <= window_s, f"{where}: {value} s is outside the window"
            if leaf.endswith("_released_pct"):  # of the reference's capacity: never over all of it
                assert value <= 100, f"{where}: {value} % released, more than there was"
            if leaf.endswith("_pct"):
                if SHARE_PCT_KEYS.search(leaf) and not DELTA_KEYS.search(leaf):
                    assert 0 <= value <= 100, f"{where}: {value} % is not a share"
                elif not DELTA_KEYS.search(leaf):  # usage over allocatable may exceed 100 %
                    assert value >= 0, f"{where}: {value} % is negative"
            elif FRACTION_KEYS.search(leaf) and not DELTA_KEYS.search(leaf):
                assert 0 <= value <= 1, f"{where}: {value} is not a fraction"


VERDICT = """
(() => {
  const answer = document.querySelector('[data-answer=best]').textContent;
  const rows = [...document.querySelectorAll('table[data-table=comparison] tbody tr')]
    .map(r => [...r.cells].map(c => c.textContent.trim()));
  return [answer, rows];
})()
"""


def test_whatif_verdict_figures_are_in_its_table(demo: Path, tmp_path: Path) -> None:
    """The sentence a manager reads and the table under it show the same figures."""
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(demo / "whatif" / "report.html")
        answer, rows = browser.evaluate(VERDICT)
    finally:
        browser.close()
    by_name = {row[0]: set(row[1:]) for row in rows}
    answer, shifts = split_pool_mix(answer)
    for name, _, _, pct in shifts:  # each pool-mix sentence: its row is flagged, its share shown
        assert "pool-mix shift" in by_name[name] and pct_shown(by_name[name], pct), name
    comparison = json.loads((demo / "whatif" / "report.json").read_text())["comparison"]
    assert capacity_problems(comparison) == []
    assert comparison["kubernetes_version"]["version"]  # the JSON says which version replayed
    named = [n for n in by_name if n != "observed" and answer.startswith(n)]
    assert len(named) == 1, answer  # the demo's verdict names the strategy it recommends
    shown = by_name["observed"] | by_name[named[0]]
    numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", answer)
    assert numbers
    missing = [n for n in numbers if n not in shown]
    assert not missing, f"{missing} of '{answer}' are not in the comparison table"


SEARCH_CARD = """
(() => {
  const text = sel => (document.querySelector(sel) || {textContent: ''}).textContent.trim();
  return [text('[data-question=search]'), text('[data-answer=search]'),
          text('[data-scope=search]'), text('[data-question=best]'), text('[data-answer=best]')];
})()
"""


def test_whatif_search_card_and_verdict_say_what_each_answers(demo: Path, tmp_path: Path) -> None:
    """The what-if page's search card and its verdict answer different questions (the search's
    configurations vs the presets in the comparison table): each question names what it
    compared, each answer's figures are its own table's, and when the two name different
    strategies because the verdict's was not searched, the card says so."""
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(demo / "whatif" / "report.html")
        question, answer, scope, verdict_question, verdict = browser.evaluate(SEARCH_CARD)
    finally:
        browser.close()
    report = json.loads((demo / "whatif" / "report.json").read_text())
    search = json.loads((demo / "whatif" / "search.json").read_text())["search"]
    rows = {r["name"]: r for r in search["rows"]}
    table = {r["strategy"]: r for r in report["tables"]["comparison"]}
    # the questions: how many each compared, the search's baselines by name
    candidates = [r for r in search["rows"] if r["kind"] != "observed"]
    assert f"Which of the {len(candidates)} configurations searched (" in question
    assert all(r["name"] in question for r in candidates if r["kind"] == "baseline")
    assert f"Which of the {len(table) - 1} strategies compared below" in verdict_question
    # the card's answer: the search's recommendation with its own row's figures and observed's
    best = search["recommended"]
    assert best is not None and answer.startswith(f"Apply {best}: ")
    body = answer.removeprefix(f"Apply {best}: ")  # the label's own numbers are no figures
    body, shifts = split_pool_mix(body)  # a pool-mix sentence: its own row's figures, below
    figures = set(re.findall(r"\d[\d,]*(?:\.\d+)?", body))
    row, observed = rows[best], rows["observed"]
    counts = ("peak_nodes", "violations", "waited", "never_placed")
    expected = {f"{row[k]:,.0f}" for k in (*counts, "core_hours_released", "gib_hours_released")}
    expected |= {f"{row[k]:.1f}" for k in ("core_hours_released_pct", "gib_hours_released_pct")}
    expected |= {f"{observed[k]:,.0f}" for k in counts}
    assert figures and figures <= expected, (answer, expected)
    for name, fewer, _, pct in shifts:
        shifted = rows[name]
        assert shifted["pool_mix_shift"] and not shifted["recommended"]
        assert fewer == round(observed["peak_nodes"] - shifted["peak_nodes"])
        assert abs(pct - shifted["core_hours_released_pct"]) <= 0.05 + 1e-9
    # a configuration on both pages has the same figures on both (one seed: mean = worst seed)
    for name in set(rows) & set(table):
        assert rows[name]["peak_nodes"] == table[name]["active_nodes_peak"], name
        assert rows[name]["violations"] == table[name]["violations"], name
    # the verdict names the table's strategy; the card explains a different answer
    chosen = report["best"]
    assert chosen is not None and verdict.startswith(chosen)
    if chosen != best and chosen not in rows:
        assert f"names {chosen}, which this search did not compare" in scope
    else:
        assert scope == ""


def test_whatif_pages_show_the_constraints_in_play(demo: Path, tmp_path: Path) -> None:
    """The demo's pods carry spread constraints and pod (anti-)affinity (issue 18): both what-if
    pages say, in the text a reader sees, how many pods carry them and which strategies apply
    them; the observed placement honours the required anti-affinity (no pod ran beside a pod its
    term excludes), so no page needs to warn that it does not."""
    pods = read_snapshot(demo / "snapshot").pods
    breaking, carrying = anti_affinity_breaks(pods)
    assert carrying > 500 and breaking == 0
    # the pages replayed the busiest 2 days (--window 2d): they count the pods alive then
    window = json.loads((demo / "whatif" / "report.json").read_text())["comparison"]
    start, end = pd.Timestamp(window["start"]), pd.Timestamp(window["end"])
    began = pd.to_datetime(pods["created"], utc=True).fillna(
        pd.to_datetime(pods["first_seen"], utc=True)
    )
    ended = pd.to_datetime(pods["finished"], utc=True).fillna(
        pd.to_datetime(pods["last_seen"], utc=True)
    )
    pods = pods[(began.isna() | (began <= end)) & (ended.isna() | (ended > start))]
    spreading = int((pods["topology_spread"] != "[]").sum())
    terms = int(pods["affinity"].str.contains('"podAffinity"|"podAntiAffinity"').sum())
    assert spreading > 1000 and terms > 1000  # a fifth of the pods or so, not a handful
    for page in ("report.html", "search.html"):
        browser = Chromium(tmp_path / f"profile-{page}")
        try:
            browser.open(demo / "whatif" / page)
            text = browser.evaluate("document.body.innerText")
        finally:
            browser.close()
        assert (
            f"Topology spread constraints of {spreading:,} pods and pod (anti-)affinity terms of "
            f"{terms:,} pods" in text
        ), page
        assert "(PodTopologySpread and InterPodAffinity)" in text, page  # same strategies
        assert "(generated with the synthetic cluster)" in text, page
        assert "share a node with a pod their terms exclude" not in text, page
        assert "analyzer-search-" not in text, page  # no temporary configuration file named


def test_pages_in_chromium(demo: Path, tmp_path: Path) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for page in _pages(demo):
        name = page.relative_to(demo).as_posix()
        browser = Chromium(tmp_path / f"profile-{name.replace('/', '-')}")
        try:
            browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000,
                         deviceScaleFactor=1, mobile=False)  # fmt: skip
            browser.open(page)
            text = browser.evaluate("document.body.innerText")
            cells = browser.evaluate(COUNT_CELLS)
            shot = browser.call("Page.captureScreenshot", format="png")
            (SCREENSHOTS / (name.replace("/", "_").removesuffix(".html") + ".png")).write_bytes(
                base64.b64decode(shot["data"])
            )
            browser.call("Runtime.evaluate", expression="0")  # drain queued events
        finally:
            browser.close()
        problems += [f"{name}: console error {e}" for e in browser.console_errors()]
        problems += [f"{name}: '{m.group(0)}' on the page" for m in BAD_WORDS.finditer(text)]
        problems += [f"{name}: timedelta '{m.group(0)}'" for m in TIMEDELTA.finditer(text)]
        for head, cell in cells:
            counts = COUNT_HEADER.search(head) and not NOT_COUNT_HEADER.search(head)
            if counts and re.fullmatch(r"-?[\d,]+\.\d+", cell):
                problems.append(f"{name}: count column '{head}' shows '{cell}'")
        for match in SHARE.finditer(text):
            if float(match.group(1).replace(",", "")) > 100:
                context = text[max(0, match.start() - 60) : match.end()].replace("\n", " ")
                problems.append(f"{name}: share above 100 %: …{context}")
    assert not problems, "\n".join(problems[:40])


def test_monthly_review_of_the_demo(demo: Path) -> None:
    """The demo's monthly page (issues 16 and 17): months of trend, a pool that runs out within the
    horizon, right-sizing, and four consistent scenario rows per pool."""
    review = json.loads((demo / "monthly" / "report.json").read_text())
    first, last = (date.fromisoformat(review[k]) for k in ("history_first_day", "history_last_day"))
    assert (last - first).days >= 80  # ~90 days: coarse history + the nightly days
    pools = {p["name"]: p for p in review["pools"]}
    assert set(pools) == {"compute", "general", "gpu", "memory"}
    # the memory pool grows fastest (+15 %/month): its requests cross allocatable minus the N+1
    # buffer inside the 180-day horizon, at an expected date after the history ends
    crossing = [
        e
        for e in pools["memory"]["forecast"]["exhaustion"]
        if e["basis"].startswith("requested") and e["expected_date"]
    ]
    assert crossing and min(e["expected_date"] for e in crossing) > review["history_last_day"]
    # right-sizing: some workloads get a recommendation, each positive where given
    recommended = [w for w in review["workloads"] if w["recommended"]["cpu_cores"] is not None]
    assert recommended
    assert all(w["recommended"]["cpu_cores"] > 0 for w in recommended)
    rightsizing = review["rightsizing"]
    by_reason = rightsizing["skipped_by_reason"]
    assert sum(r["workloads"] for r in by_reason) == rightsizing["skipped"]
    assert rightsizing["recommended"] + rightsizing["skipped"] == rightsizing["workloads"]
    for pool in pools.values():
        rows = {s["name"]: s for s in pool["scenarios"]}
        assert list(rows) == ["today", "right-size only", "repack only", "both"]
        for s in rows.values():
            # removable = the pool's nodes - nodes needed at peak, never negative
            assert s["nodes_removable"] >= 0 and s["nodes_peak"] >= 0
            assert (
                s["nodes_peak"] + s["nodes_removable"]
                == rows["today"]["nodes_peak"] + rows["today"]["nodes_removable"]
            )
            assert s["violations"] >= 0 and s["pods_waited"] >= 0
        assert rows["today"]["nodes_removable"] == 0  # today's placement uses every node it has
    # "both" needs no more nodes than "repack only" (docs/whatif.md '"both" vs "repack only"'):
    # a "both" row that keeps repack only's placement has its nodes, violations and waits; a fresh
    # "both" needs more only where that placement does not pass the filters with the right-sized
    # requests (krr's memory max + 15 % raises most of the demo's memory requests), and says so
    simulation = review["simulation"]
    placements = {
        p["pool"]: {r["name"]: r["placement"] for r in p["rows"]} for p in simulation["pools"]
    }
    for name, pool in pools.items():
        rows = {s["name"]: s for s in pool["scenarios"]}
        both, repack = rows["both"], rows["repack only"]
        if placements[name]["both"] == "repack only's, right-sized":
            assert [both[k] for k in ("nodes_peak", "violations", "pods_waited")] == [
                repack[k] for k in ("nodes_peak", "violations", "pods_waited")
            ]
        elif both["nodes_peak"] > repack["nodes_peak"]:
            assert any(
                n.startswith(f"pool {name}: 'both' needed {both['nodes_peak']} nodes at peak")
                and "does not pass the filters with the right-sized requests" in n
                for n in simulation["notes"]
            )
    # a pool where right-sizing and repacking together free more nodes than either alone
    assert any(
        rows["both"]["nodes_removable"]
        > max(rows["repack only"]["nodes_removable"], rows["right-size only"]["nodes_removable"])
        for rows in ({s["name"]: s for s in p["scenarios"]} for p in pools.values())
    )


def test_whatif_has_one_row_under_cluster_autoscaler(demo: Path, tmp_path: Path) -> None:
    report = json.loads((demo / "whatif" / "report.json").read_text())
    comparison = report["comparison"]
    assert comparison["autoscaler"] == "cluster-autoscaler"
    (row,) = comparison["autoscaled"]
    assert row["strategy"] == "most-allocated" and row["seed"] == 0
    counts = row["node_count"]
    snapshot = read_snapshot(demo / "snapshot")
    # the demo's pools may go down to no node (minSize 0, set by the demo and said on the page:
    # at their observed range, one size, CA could remove none) and up to their observed size
    assert any("minSize 0, set by the demo" in note for note in report["notes"])
    assert max(counts["nodes"]) <= len(snapshot.nodes)
    # most-allocated leaves whole nodes with DaemonSet pods only: CA removes them
    assert row["nodes_removed"] > 0 and min(counts["nodes"]) < len(snapshot.nodes)
    assert 0 < row["node_hours"] < row["observed_node_hours"]
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(demo / "whatif" / "report.html")
        chart = browser.evaluate(
            "[...document.querySelectorAll('#autoscaler img.chart')]"
            ".map(i => [i.alt, i.complete && i.naturalWidth > 0])"
        )
        answer = browser.evaluate("document.querySelector('[data-answer=autoscaler]').textContent")
        # each table of the section: its name, whether it scrolls sideways at the browser's
        # 1,280 px (a laptop's), and its columns' keys
        tables = browser.evaluate(
            "[...document.querySelectorAll('#autoscaler .table-wrap')].map(w => ["
            "w.querySelector('table').dataset.table, w.scrollWidth > w.clientWidth, "
            "[...w.querySelectorAll('th')].map(h => h.dataset.key)])"
        )
    finally:
        browser.close()
    # the demo's wide figures (GiB-hours in six digits) once pushed the last columns of one
    # 16-column table out of sight: every table here fits, and the two parts of the autoscaled
    # table show each column of its CSV once, beside the row's strategy and seed
    assert [(name, scrolls) for name, scrolls, _ in tables] == [
        ("autoscaled", False), ("autoscaled_churn", False), ("autoscaler_reasons", False)
    ]  # fmt: skip
    header = (demo / "whatif" / "autoscaled.csv").read_text().splitlines()[0].split(",")
    shown = [k for _, _, keys in tables[:2] for k in keys if k not in ("strategy", "seed")]
    assert sorted(shown) == sorted(k for k in header if k not in ("strategy", "seed"))
    assert all(keys[:2] == ["strategy", "seed"] for _, _, keys in tables[:2])
    assert chart == [
        ["Nodes over time: autoscaler vs observed (observed, most-allocated + cluster-autoscaler)",
         True]
    ]  # fmt: skip
    assert answer.startswith("Under cluster-autoscaler, most-allocated would have run ")
    # the sentence says the table's figures
    assert f"{row['nodes_added']:,} added, {row['nodes_removed']:,} removed" in answer

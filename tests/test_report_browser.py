"""The nightly report in a real headless Chromium: no console errors, sections, sorting, screenshot.

Two ways in: Chromium's own ``--dump-dom``/``--screenshot`` modes (no client code at all), and a
small DevTools-protocol client (``cdp_client``) that loads the page, listens for console errors
and exceptions, clicks table headers and reads the row order back, and prints it to PDF.
"""

from __future__ import annotations

import base64
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from cdp_client import CHROMIUM, FLAGS, Chromium, require_chromium
from page_numbers import READ_PAGE, page_problems
from report_snapshots import ending_early, tiny_cluster, with_gpus

from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report

pytestmark = pytest.mark.browser
SECTIONS = [
    "summary",
    "violations",
    "usage",
    "requests",
    "fragmentation",
    "shape-headroom",
    "quality",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    out = tmp_path_factory.mktemp("browser")
    result = run_nightly(
        tiny_cluster(n_nodes=6, hot_name="<script>alert(1)</script>"), NightlySettings()
    )
    return write_nightly_report(result, out).html


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two days of a cluster with a few GPUs, the second stopping at 23:55 (compared with the
    first: the cards show changes)."""
    require_chromium()
    out = tmp_path_factory.mktemp("two-days")
    snapshot = ending_early(
        with_gpus(tiny_cluster(n_nodes=12, days=2, hot_name="hot")), "2026-11-02T23:55:00Z"
    )
    for day in (date(2026, 11, 1), date(2026, 11, 2)):
        paths = write_nightly_report(run_nightly(snapshot, NightlySettings(day=day)), out)
    return paths.html


def _read(page: Path, tmp_path: Path, mutate: str = "") -> dict[str, Any]:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(page)
        if mutate:
            browser.evaluate(mutate)
        data: dict[str, Any] = browser.evaluate(READ_PAGE)
    finally:
        browser.close()
    assert browser.console_errors() == []
    return data


@pytest.mark.parametrize("fixture", ["report", "two_days"])
def test_every_number_on_the_page_is_possible_and_agrees(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    page = _read(request.getfixturevalue(fixture), tmp_path)
    assert page["tables"]["free_capacity"]["rows"], "the free-capacity table is on the page"
    assert page_problems(page) == []


def test_the_page_checks_catch_impossible_numbers(two_days: Path, tmp_path: Path) -> None:
    """The checks above can fail: doctor the rendered page and each problem is reported."""
    doctor = r"""(() => {
      const cell = (t, k) => { const table = document.querySelector(`table[data-table=${t}]`);
        const i = [...table.tHead.rows[0].cells].findIndex(h => h.dataset.key === k);
        return table.tBodies[0].rows[0].cells[i]; };
      cell('shapes', 'pods').textContent = '2,762.0';
      cell('nodes', 'cpu_p95_pct').textContent = '150.0 %';
      const a = document.querySelector('[data-answer=fragmentation]');
      a.textContent = a.textContent.replace(/: [\d,]+ more pods/, ': 0 more pods')
                                   .replace('CPU 0.0 %', 'CPU NaN %');
      document.querySelector('[data-card=pods] .value').textContent = '-3';
      cell('breaches', 'duration_seconds').textContent = '1 d 2 h';
    })()"""
    problems = "\n".join(page_problems(_read(two_days, tmp_path, doctor)))
    assert "shapes.pods: count written as '2,762.0'" in problems
    assert "nodes.cpu_p95_pct: share '150.0 %'" in problems
    assert "share 150.0 % outside 0–100 %" in problems
    assert "NaN on the page" in problems
    assert "0 more pods at 23:55" in problems
    assert "headroom sentence 0 ≠ table" in problems
    assert "fragmentation sentence lacks 'CPU 0.0 %" in problems
    assert "card pods: count written as '-3'" in problems
    assert "breaches.duration_seconds: '1 d 2 h' outside one day" in problems


def test_screenshots_of_the_first_screen_and_fragmentation(two_days: Path, tmp_path: Path) -> None:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(two_days)
        first = browser.call("Page.captureScreenshot", format="png")
        browser.evaluate("document.getElementById('fragmentation').scrollIntoView()")
        frag = browser.call("Page.captureScreenshot", format="png")
    finally:
        browser.close()
    for name, shot in (("first", first), ("fragmentation", frag)):
        data = base64.b64decode(shot["data"])
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        (tmp_path / f"{name}.png").write_bytes(data)
    assert first["data"] != frag["data"]


def test_dump_dom_and_screenshot(report: Path, tmp_path: Path) -> None:
    base = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*base, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom
    # The escaped name is text, not an element: the DOM has no alert script.
    assert "alert(1)" in dom and "<script>alert(1)</script>" not in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, "--window-size=1280,2000", f"--screenshot={shot}", report.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_console_errors_and_tables_sort(report: Path, tmp_path: Path) -> None:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.call("Runtime.enable")
        browser.call("Log.enable")
        browser.call("Page.enable")
        browser.call("Page.navigate", url=report.as_uri())
        browser.wait_for("Page.loadEventFired")
        assert (
            browser.evaluate("[...document.querySelectorAll('section[id]')].map(s => s.id)")[
                : len(SECTIONS)
            ]
            == SECTIONS
        )
        assert browser.evaluate("document.querySelectorAll('img.chart').length") >= 3
        # Images decoded (data URIs): every chart has a natural width.
        assert browser.evaluate(
            "[...document.querySelectorAll('img.chart')].every(i => i.complete && i.naturalWidth > 0)"
        )
        column = "[...document.querySelectorAll('table[data-table=nodes] tbody tr')].map(r => r.cells[{i}].{attr})"
        header = "document.querySelectorAll('table[data-table=nodes] thead th')[{i}].click()"
        names_before = browser.evaluate(column.format(i=0, attr="textContent"))
        browser.evaluate(header.format(i=0))
        names_asc = browser.evaluate(column.format(i=0, attr="textContent"))
        assert names_asc == sorted(names_before, key=str.lower)
        browser.evaluate(header.format(i=0))
        assert browser.evaluate(column.format(i=0, attr="textContent")) == names_asc[::-1]
        # A numeric column sorts by value (data-v), not as text.
        browser.evaluate(header.format(i=4))  # cpu p95
        values = [float(v) for v in browser.evaluate(column.format(i=4, attr="dataset.v"))]
        assert values == sorted(values) and values[-1] == 75.0
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        (tmp_path / "report-cdp.png").write_bytes(base64.b64decode(shot["data"]))
        pdf = browser.call("Page.printToPDF", landscape=True)
        assert base64.b64decode(pdf["data"])[:5] == b"%PDF-"
        browser.call("Runtime.evaluate", expression="0")  # drain events queued so far
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert (tmp_path / "report-cdp.png").stat().st_size > 10_000


def test_console_error_detection_catches_a_broken_page(tmp_path: Path) -> None:
    """The no-errors assertions above mean something: a page that throws is caught."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><title>x</title><script>console.error('boom'); undefinedFn();</script>"
    )
    browser = Chromium(tmp_path / "profile")
    try:
        browser.call("Runtime.enable")
        browser.call("Log.enable")
        browser.call("Page.enable")
        browser.call("Page.navigate", url=page.as_uri())
        browser.wait_for("Page.loadEventFired")
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    methods = {e["method"] for e in browser.console_errors()}
    assert {"Runtime.exceptionThrown", "Runtime.consoleAPICalled"} <= methods

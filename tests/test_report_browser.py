"""The nightly report in a real headless Chromium: no console errors, sections, sorting, screenshot.

Two ways in: Chromium's own ``--dump-dom``/``--screenshot`` modes (no client code at all), and a
small DevTools-protocol client (``cdp_client``) that loads the page, listens for console errors
and exceptions, clicks table headers and reads the row order back, and prints it to PDF.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from cdp_client import CHROMIUM, FLAGS, Chromium, require_chromium
from report_snapshots import tiny_cluster

from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report

pytestmark = pytest.mark.browser
SECTIONS = ["summary", "violations", "usage", "requests", "fragmentation", "quality"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    out = tmp_path_factory.mktemp("browser")
    result = run_nightly(
        tiny_cluster(n_nodes=6, hot_name="<script>alert(1)</script>"), NightlySettings()
    )
    return write_nightly_report(result, out).html


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

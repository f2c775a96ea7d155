"""The trace report's variant form in a real headless Chromium: renders without script errors, the
overview table comes first with one row per pod list and its best-policy marks, the charts decode,
and following a pod-list link opens that list's collapsed section (the helpers of
``test_report_browser``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdp_client import Chromium, require_chromium
from trace_fixtures import fake_variants

from analyzer.report.trace import write_trace_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    return write_trace_report(fake_variants(), tmp_path_factory.mktemp("trace") / "rep")


def test_variant_report_in_chromium(report: Path, tmp_path: Path) -> None:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(report)
        sections = browser.evaluate(
            "[...document.querySelectorAll('main > section')].map(s => s.id)"
        )
        assert sections[:3] == ["overview", "charts", "variants"]
        rows = "[...document.querySelectorAll('table[data-table=overview] tbody tr')]"
        assert browser.evaluate(f"{rows}.map(r => r.dataset.variant)") == list(
            fake_variants()["variants"]
        )
        assert browser.evaluate(f"{rows}.map(r => r.dataset.best)") == [
            "Packer",
            "Spreader|Packer",
            "Random",
        ]
        assert browser.evaluate(
            "[...document.querySelectorAll('img.chart')].every(i => i.complete && i.naturalWidth > 0)"
        )
        # The table fits the page width (no horizontal scrolling needed for three policies).
        assert browser.evaluate(
            "(() => { const w = document.querySelector('table[data-table=overview]').parentElement;"
            " return w.scrollWidth <= w.clientWidth; })()"
        )
        assert browser.evaluate("document.querySelector('#v2 details').open") is False
        browser.evaluate(
            "document.querySelector('table[data-table=overview] a[href=\"#v2\"]').click()"
        )
        # The section opens on the (asynchronous) hashchange: wait for it, up to 5 s.
        wait_open = (
            "new Promise(done => { const d = document.querySelector('#v2 details'), t = Date.now();"
            " (function poll() { if (d.open || Date.now() - t > 5000) { done(d.open); }"
            " else { setTimeout(poll, 20); } })(); })"
        )
        result = browser.call(
            "Runtime.evaluate", expression=wait_open, awaitPromise=True, returnByValue=True
        )
        assert result["result"]["value"] is True
        assert browser.evaluate("document.querySelector('#v1 details').open") is False
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    assert browser.console_errors() == []

"""The what-if report in a real headless Chromium: no console errors, the answer first, charts
decode, the comparison table sorts (with the helpers of ``test_report_browser``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdp_client import Chromium, require_chromium
from replay_fixtures import GI, N, P, build

from analyzer.report.whatif import write_whatif_report
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
        assert answer.startswith("most-allocated would have needed the fewest nodes")
        assert browser.evaluate(
            "[...document.querySelectorAll('img.chart')].every(i => i.complete && i.naturalWidth > 0)"
        )
        rows = "[...document.querySelectorAll('table[data-table=comparison] tbody tr')]"
        names = browser.evaluate(f"{rows}.map(r => r.cells[0].textContent)")
        assert names == ["observed", "kube-default", "most-allocated"]
        browser.evaluate(
            "document.querySelectorAll('table[data-table=comparison] thead th')[2].click()"
        )
        peaks = browser.evaluate(f"{rows}.map(r => Number(r.cells[2].dataset.v))")
        assert peaks == sorted(peaks) and peaks[0] == 1.0
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    assert browser.console_errors() == []

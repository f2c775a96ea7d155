"""The search page in a real headless Chromium: no console errors, no NaN, no negative counts,
the recommended row highlighted, the YAML block parses back to a profile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from cdp_client import Chromium, require_chromium
from test_search import spread_cluster

from analyzer.report.search import write_search_report
from analyzer.scheduling.config import parse_kube_scheduler_configuration
from analyzer.whatif.search import SearchSettings, run_search
from analyzer.whatif.search_grid import SearchGrid

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    grid = SearchGrid(scoring=("MostAllocated", "LeastAllocated"), loadaware_weights=(1,))
    result = run_search(spread_cluster(), SearchSettings(grid=grid, workers=1))
    return write_search_report(result, tmp_path_factory.mktemp("search")).html


def test_search_page_in_chromium(page: Path, tmp_path: Path) -> None:
    data = json.loads(page.with_name("search.json").read_text())
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(page)
        text = browser.evaluate("document.body.innerText")
        assert "NaN" not in text and "undefined" not in text
        answer = browser.evaluate("document.querySelector('[data-answer=search]').textContent")
        assert answer == data["sentence"] and answer.startswith("Apply ")
        rows = "[...document.querySelectorAll('table[data-table=search] tbody tr')]"
        names = browser.evaluate(f"{rows}.map(r => r.cells[0].textContent)")
        assert names == [r["name"] for r in data["search"]["rows"]]
        hot = browser.evaluate(
            f"{rows}.filter(r => r.classList.contains('hot')).map(r => r.cells[0].textContent)"
        )
        assert hot == [data["recommended"]]
        numbers = browser.evaluate(
            f"{rows}.flatMap(r => [...r.cells].filter(c => c.dataset.v).map(c => Number(c.dataset.v)))"
        )
        assert numbers and all(n == n and n >= 0 for n in numbers)  # no NaN, no negative count
        peaks = [r["peak_nodes"] for r in data["search"]["rows"]]
        assert all(0 <= p <= 6 for p in peaks)  # six nodes in the cluster
        assert browser.evaluate(
            "[...document.querySelectorAll('img.chart')].every(i => i.complete && i.naturalWidth > 0)"
        )
        shown = browser.evaluate("document.querySelector('pre[data-yaml=recommended]').textContent")
        spec = parse_kube_scheduler_configuration(yaml.safe_load(shown)).profile()
        assert spec.filters[-1] == "LoadAwareScheduling"
        assert shown == page.with_name("search-scheduler.yaml").read_text()
        assert re.search(r"releases [\d,]+ core-hours \([\d.]+ %\) and [\d,]+ GiB-hours", answer)
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    assert browser.console_errors() == []

"""The "Growth replayed" page in a real headless Chromium: the answer agrees with growth.json,
at most three lines before the fold, every number finite and possible, the waiting rows marked.

The cluster is test_growth's (4 nodes of 4 cores, 8 one-core pods, +2 replicas a month): month
k runs 8 + 2k pods, the first pod waits in month 5 and N+1 breaks in month 3.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from replay_fixtures import N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    tmp = tmp_path_factory.mktemp("growth-page")
    snap = build([N(f"n{i}") for i in range(4)], [P(f"web-{i}", f"n{i % 4}") for i in range(8)])
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp / "snap")
    (tmp / "g.yaml").write_text("growth:\n  - {namespace: default, replicas: '+2'}\n")
    run = CliRunner().invoke(main, ["--config", str(tmp / "g.yaml"), "whatif", str(tmp / "snap"),
                                    "--growth", "--growth-days", "1", "--months", "6",
                                    "--out", str(tmp / "out")])  # fmt: skip
    assert run.exit_code == 0, run.output
    return tmp / "out" / "growth.html"


def test_growth_page_in_chromium(page: Path, tmp_path: Path) -> None:
    data = json.loads(page.with_name("growth.json").read_text())
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(page)
        text = browser.evaluate("document.body.innerText")
        assert "NaN" not in text and "undefined" not in text and "None" not in text
        answer = browser.evaluate("document.querySelector('[data-growth-answer]').textContent")
        assert answer == data["sentence"]
        assert "the first pod waits in month 5" in answer and "N+1 breaks in month 3" in answer
        # the first screen: the answer and at most two pool lines, the table folded
        shown = browser.evaluate(
            "[...document.querySelectorAll('.answer p')].filter(p => p.offsetParent).length"
        )
        assert 1 <= shown <= 3
        pool_line = browser.evaluate("document.querySelector('[data-growth-pool]').textContent")
        assert pool_line == "pool: N+1 breaks in month 3; nodes to add by month: month 5: +1"
        assert not browser.evaluate("document.querySelector('details').open")
        rows = "[...document.querySelectorAll('table[data-table=growth] tbody tr')]"
        cells = browser.evaluate(f"{rows}.map(r => [...r.cells].map(c => c.textContent))")
        assert [c[0] for c in cells] == [str(k) for k in range(7)]
        assert [c[8] for c in cells] == ["0"] * 5 + ["2", "4"]  # pods waiting: beyond 16
        hot = browser.evaluate(f"{rows}.filter(r => r.classList.contains('hot')).length")
        assert hot == 2  # the months with waiting pods are marked
        numbers = browser.evaluate(
            f"{rows}.flatMap(r => [...r.cells].filter(c => c.dataset.v).map(c => Number(c.dataset.v)))"
        )
        assert numbers and all(n == n and n >= 0 for n in numbers)  # no NaN, nothing negative
        requested = [float(c[4]) for c in cells]
        assert all(r <= 16 + 2 * 6 for r in requested)  # never more than the pods asked
        browser.evaluate("document.querySelector('details').open = true")
        shot = browser.call("Page.captureScreenshot", format="png")
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert browser.console_errors() == []
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG")
    (tmp_path / "growth.png").write_bytes(png)  # kept by pytest under its basetemp: look at it

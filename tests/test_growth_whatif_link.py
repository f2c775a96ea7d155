"""A growth replay and the what-if report in one folder link each other, in a real Chromium.

``report whatif --out DIR`` replaces DIR as a whole; a growth replay written there first
(``whatif --growth --out DIR``) is carried over unchanged and linked under the verdict with its
own sentence; a growth replay written after the what-if report links back to report.html.
The cluster is test_growth's (4 nodes of 4 cores, 8 one-core pods, +2 replicas a month).
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


def _growth(tmp: Path) -> None:
    run = CliRunner().invoke(main, ["--config", str(tmp / "g.yaml"), "whatif", str(tmp / "snap"),
                                    "--growth", "--growth-days", "1", "--months", "6",
                                    "--out", str(tmp / "out")])  # fmt: skip
    assert run.exit_code == 0, run.output


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    tmp = tmp_path_factory.mktemp("growth-link")
    snap = build([N(f"n{i}") for i in range(4)], [P(f"web-{i}", f"n{i % 4}") for i in range(8)])
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp / "snap")
    (tmp / "g.yaml").write_text("growth:\n  - {namespace: default, replicas: '+2'}\n")
    _growth(tmp)
    return tmp


def test_report_whatif_keeps_and_links_the_growth_replay(folder: Path, tmp_path: Path) -> None:
    out = folder / "out"
    before = {n: (out / n).read_bytes() for n in ("growth.html", "growth.json", "growth.csv")}
    sentence = json.loads(before["growth.json"])["sentence"]
    run = CliRunner().invoke(main, ["report", "whatif", str(folder / "snap"), "--out", str(out),
                                    "--strategy", "most-allocated"])  # fmt: skip
    assert run.exit_code == 0, run.output
    # the what-if run replaced the folder; the growth run's files came across byte for byte
    assert {n: (out / n).read_bytes() for n in before} == before
    report = json.loads((out / "report.json").read_text())
    assert report["growth"] == {"sentence": sentence, "href": "growth.html"}
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "report.html")
        line = browser.evaluate("document.querySelector('[data-growth-link]').textContent")
        assert sentence in line
        href = browser.evaluate("document.querySelector('[data-growth-link] a').href")
        assert href == (out / "growth.html").as_uri()
        shot = browser.call("Page.captureScreenshot", format="png")
        errors = browser.console_errors()
        browser.events.clear()  # open() waits for a load event: not the first page's again
        browser.open(out / "growth.html")
        answer = browser.evaluate("document.querySelector('[data-growth-answer]').textContent")
        assert answer == sentence  # the link leads to the page whose answer it quoted
    finally:
        browser.close()
    assert errors == [] and browser.console_errors() == []
    (tmp_path / "report.png").write_bytes(base64.b64decode(shot["data"]))  # look at it
    # a growth replay written after the what-if report links back to it
    _growth(folder)
    assert '<a href="report.html">the what-if report</a>' in (out / "growth.html").read_text()

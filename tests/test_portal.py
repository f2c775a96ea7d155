"""``OUT/index.html``, the portal: every report analyzer wrote under OUT is one click away.

The demo writes nightly runs (``reports/``), a monthly review (``monthly/``), a what-if and a
search page (``whatif/``) and the portal at the top. The facts checked: every report page under
the folder (found here by walking it, independently of the portal's own walk) is linked exactly
once and every link resolves; each headline is the report's own sentence from its JSON; the
node-time of a nightly run reads as the nightly page writes it (one duration convention); a
damaged report is listed as unreadable rather than dropped; a folder's own index.html that
analyzer did not write is never replaced.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from conftest import DemoRun
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.report.portal import refresh_parent_portal, scan, write_portal

PAGES = ("report.html", "search.html")


@pytest.fixture(scope="module")
def demo(default_demo: DemoRun) -> Path:
    """The session's default demo (read only: a test that changes it copies it first)."""
    assert f"every report:  {default_demo.out / 'index.html'}" in default_demo.output
    return default_demo.out


def _nightly_days(out: Path) -> list[str]:
    return sorted(
        p.name for p in (out / "reports").iterdir() if re.fullmatch(r"\d{4}-\d\d-\d\d", p.name)
    )


def _pages_under(out: Path) -> set[str]:
    """Every report page under ``out`` (not history, snapshot or the index itself)."""
    found = set()
    for folder, dirs, files in os.walk(out):
        dirs[:] = [d for d in dirs if d not in ("history", "snapshot") and not d.startswith(".")]
        for name in files:
            if name in PAGES:
                found.add((Path(folder) / name).relative_to(out).as_posix())
    return found


def _links(page: Path) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'<a href="([^"]+)"', page.read_text())]


def test_every_report_page_is_linked_once_and_every_link_resolves(demo: Path) -> None:
    links = _links(demo / "index.html")
    pages = _pages_under(demo)
    # every nightly run, the monthly review, the what-if and the search page
    assert len(pages) == len(_nightly_days(demo)) + 3
    assert sorted(links) == sorted(pages)
    assert all((demo / link).is_file() for link in links)


def test_headlines_are_the_reports_own_sentences(demo: Path) -> None:
    page = html.unescape((demo / "index.html").read_text())
    whatif = json.loads((demo / "whatif" / "report.json").read_text())
    search = json.loads((demo / "whatif" / "search.json").read_text())
    assert whatif["recommendation"] in page
    assert search["sentence"] in page
    monthly = json.loads((demo / "monthly" / "report.json").read_text())
    for pool in monthly["pools"]:
        decision = pool["decision"]
        if decision["action"] in ("release", "add") and decision["nodes"]:
            assert f"{pool['name']}: " in page  # each pool with a decision is named
    assert "nan" not in page.lower().split("<style>")[0]


def test_nightly_node_time_reads_as_the_nightly_page_writes_it(demo: Path) -> None:
    index = (demo / "index.html").read_text()
    days = _nightly_days(demo)
    assert days
    for day in days:
        report = json.loads((demo / "reports" / day / "report.json").read_text())
        seconds = report["summary"]["breach_node_seconds"]["value"]
        row = re.search(rf'reports/{day}/report.html">.*?</tr>', index, re.S)
        assert row is not None
        cell = re.search(rf'data-v="{re.escape(str(seconds))}">([^<]+)<', row.group(0))
        assert cell is not None, row.group(0)
        nightly = (demo / "reports" / day / "report.html").read_text()
        # the nightly page writes node-time in hours and minutes, never days (54 h, not 2 d 6 h)
        assert cell.group(1) in nightly
        assert " d " not in cell.group(1)


def test_the_portal_page_loads_without_console_errors(demo: Path, tmp_path: Path) -> None:
    require_chromium()
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(demo / "index.html")
        headers = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
        counts = browser.evaluate("document.querySelector('[data-counts]').textContent")
        errors = browser.console_errors()
    finally:
        browser.close()
    assert errors == []
    assert headers == [
        "Monthly capacity reviews",
        "What-if comparisons",
        "Configuration searches",
        "Nightly runs",
    ]
    assert counts.startswith(
        f"{len(_nightly_days(demo))} nightly runs, 1 monthly review, 1 what-if comparison, "
        "1 configuration search"
    )


def test_a_damaged_report_is_listed_as_unreadable_not_dropped(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "monthly").mkdir()
    (copy / "monthly" / "report.html").write_text("<html></html>")
    (copy / "monthly" / "report.json").write_text('{"month": "2026-10", "pools": [')  # cut short
    whatif = copy / "whatif"
    whatif.mkdir()
    for name in ("report.html", "report.json"):
        (whatif / name).write_bytes((demo / "whatif" / name).read_bytes())
    portal = scan(copy)
    assert portal.unreadable == ["monthly/report.json"]
    assert [e.href for e in portal.entries["whatif"]] == ["whatif/report.html"]
    page = write_portal(copy).read_text()
    assert "1 report file(s) could not be read: monthly/report.json" in page


def test_a_link_loop_and_deep_folders_do_not_trap_the_walk(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    deep = tmp_path.joinpath(*["d"] * 8)
    deep.mkdir(parents=True)
    (deep / "report.html").write_text("x")
    (deep / "report.json").write_text(json.dumps({"comparison": {}, "recommendation": "deep"}))
    portal = scan(tmp_path)
    assert all(not entries for entries in portal.entries.values())  # beyond MAX_DEPTH: not read


def test_an_index_analyzer_did_not_write_is_left_alone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "whatif").mkdir(parents=True)
    own = "<html><title>team wiki</title></html>"
    (site / "index.html").write_text(own)
    assert refresh_parent_portal(site / "whatif") is None
    assert (site / "index.html").read_text() == own
    run = CliRunner().invoke(main, ["report", "index", str(site)])
    assert run.exit_code == documented_exit("portal-foreign-index") == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not an index analyzer wrote" in lines[0]
    assert (site / "index.html").read_text() == own


def test_report_index_rebuilds_the_portal_of_a_folder(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "demo"
    shutil.copytree(demo, copy, ignore=shutil.ignore_patterns("history", "snapshot"))
    before = sorted(_links(copy / "index.html"))
    (copy / "index.html").unlink()
    run = CliRunner().invoke(main, ["report", "index", str(copy)])
    assert run.exit_code == 0, run.output
    assert sorted(_links(copy / "index.html")) == before

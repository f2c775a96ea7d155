"""Printing (issue 29 item 4): the demo's four page kinds printed to PDF by Chromium as ``--pdf``
does, rendered to PNG with ``pdftoppm -r 50``, and checked as a reader holding the paper would.

- No table wider than the paper: in the browser with print media emulated at the paper's content
  width, every table ends inside the page; on the PNGs, nothing is drawn in the right margin.
- The monthly review's decisions and scenarios are on its first two printed pages, on A4 and on
  Letter (the shorter sheet).
- The same type scale as on screen: every text's print size is its screen size times one factor
  (the "Rule (forecast)" lines used to print larger than the text around them).
- Link targets printed (never for in-page anchors), table headers repeated on every page a table
  runs onto.
- ``--pdf`` through the real CLI (paper and orientation in the PDF), and without a browser: one
  line naming the fix, the documented exit code, nothing written.

The PDFs and PNGs are kept under ``test-output/print/`` to be looked at. Cost: five prints of the
session's demo pages (the ``printed`` fixture, 38 s at a load of 17 on two cores), two Chromium
sessions of a few seconds, and one 4-node what-if with --pdf (18 s under that load).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from conftest import DemoRun
from PIL import Image
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.report.pdf import PdfRequest, find_browser, print_pdf

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
KEEP = Path(os.environ.get("ANALYZER_TEST_OUTPUT", REPO / "test-output")) / "print"
MARGIN_MM = 12  # templates/base.html.j2's @page margin
# Paper in mm (portrait) and CSS px per mm (96 px per inch).
PAPER_MM = {"a4": (210.0, 297.0), "letter": (215.9, 279.4)}
PX_PER_MM = 96 / 25.4
# PDF points per mm, for pdfinfo's page size.
PT_PER_MM = 72 / 25.4
ORIENTATION = {"nightly": "landscape", "monthly": "portrait", "whatif": "landscape",
               "search": "landscape"}  # fmt: skip
PRINTS = [("nightly", "a4"), ("monthly", "a4"), ("monthly", "letter"), ("whatif", "a4"),
          ("search", "a4")]  # fmt: skip


def _require_poppler() -> None:
    if shutil.which("pdftoppm") is None or shutil.which("pdftotext") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pdftoppm/pdftotext are missing (install the Debian poppler-utils package)")
        pytest.skip("pdftoppm/pdftotext are missing")


@pytest.fixture(scope="module")
def pages(default_demo: DemoRun) -> dict[str, Path]:
    """The demo's four page kinds: the latest nightly run, the monthly review, what-if, search."""
    require_chromium()
    _require_poppler()
    out = default_demo.out
    nightly = sorted((out / "reports").glob("????-??-??/report.html"))[-1]
    return {
        "nightly": nightly,
        "monthly": out / "monthly" / "report.html",
        "whatif": out / "whatif" / "report.html",
        "search": out / "whatif" / "search.html",
    }


@pytest.fixture(scope="module")
def printed(pages: dict[str, Path]) -> dict[tuple[str, str], Path]:
    """Each page printed as ``--pdf`` prints it, and its pages as PNGs beside it."""
    if KEEP.exists():
        shutil.rmtree(KEEP)
    KEEP.mkdir(parents=True)
    browser = find_browser()
    pdfs = {}
    for kind, paper in PRINTS:
        pdf = KEEP / f"{kind}-{paper}.pdf"
        print_pdf(pages[kind], PdfRequest(pdf, paper, browser))
        subprocess.run(["pdftoppm", "-r", "50", "-png", str(pdf), str(KEEP / f"{kind}-{paper}")],
                       check=True)  # fmt: skip
        pdfs[kind, paper] = pdf
    return pdfs


def _content_width_px(paper: str, orientation: str) -> int:
    """The CSS px width inside the page margins (what a printed table has to fit in)."""
    width, height = PAPER_MM[paper]
    side = height if orientation == "landscape" else width
    return int((side - 2 * MARGIN_MM) * PX_PER_MM)


def _pages_text(pdf: Path, first: int, last: int) -> str:
    run = subprocess.run(["pdftotext", "-f", str(first), "-l", str(last), str(pdf), "-"],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return run.stdout


def _page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True)
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))  # type: ignore[union-attr]


# Every table's right edge and the page's own width, with print media at the paper's width.
TABLE_EDGES = """(() => ({
  width: document.documentElement.clientWidth,
  scroll: document.documentElement.scrollWidth,
  tables: [...document.querySelectorAll('table')].map(t =>
    [t.dataset.table || t.querySelector('th')?.textContent || '?', t.getBoundingClientRect().right]),
  unrepeated: [...document.querySelectorAll('thead')]
    .filter(h => getComputedStyle(h).display !== 'table-header-group').length,
}))()"""

# font-size of every element that holds text of its own, by a path the two media share.
# Each text element keyed by its position among all text elements, numbered before the visible
# ones are picked: an element hidden in one medium (the nav, hidden in print) must not shift the
# keys of those after it, or screen and print would pair different elements.
FONT_SIZES = """(() => [...document.querySelectorAll('body *')]
  .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .map((e, i) => [e, i])
  .filter(([e]) => e.getClientRects().length)
  .map(([e, i]) => [e.tagName + '.' + e.className + ':' + i, parseFloat(getComputedStyle(e).fontSize),
                    e.currentCSSZoom]))()"""


def _in_print(browser: Chromium, page: Path, width: int) -> None:
    browser.events.clear()  # open() waits for a load event: never the previous page's
    browser.call("Emulation.setScrollbarsHidden", hidden=True)
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    browser.call("Emulation.setEmulatedMedia", media="print")
    browser.open(page)


def test_tables_fit_the_paper_width(pages: dict[str, Path], tmp_path: Path) -> None:
    """With print media at the paper's content width, no table (nor the page) is wider; every
    table header is a header group (printed again on each page the table runs onto)."""
    browser = Chromium(tmp_path / "profile")
    problems = []
    try:
        for kind, page in pages.items():
            for paper in PAPER_MM:
                width = _content_width_px(paper, ORIENTATION[kind])
                _in_print(browser, page, width)
                edges = browser.evaluate(TABLE_EDGES)
                assert edges["width"] == width, (kind, paper, edges["width"])
                assert edges["tables"], f"{kind}: no table on the page"
                assert edges["unrepeated"] == 0, f"{kind}: a thead that does not repeat"
                if edges["scroll"] > width:
                    problems.append(
                        f"{kind} {paper}: the page is {edges['scroll']} px wide > {width}"
                    )
                problems += [f"{kind} {paper}: table {name} ends at {right:.0f} px > {width}"
                             for name, right in edges["tables"] if right > width + 0.5]  # fmt: skip
    finally:
        browser.close()
    assert not problems, "\n".join(problems)


def test_nothing_is_drawn_in_the_right_margin(printed: dict[tuple[str, str], Path]) -> None:
    """On every printed page (PNG at 50 dpi), the right margin strip is blank: no table, chart or
    line of text ran off the content area."""
    margin_px = MARGIN_MM / 25.4 * 50
    problems = []
    for (kind, paper), pdf in printed.items():
        pngs = sorted(KEEP.glob(f"{kind}-{paper}-*.png"))
        assert len(pngs) == _page_count(pdf) >= 1
        for png in pngs:
            image = Image.open(png).convert("L")
            width, height = image.size
            # the strip leaves 3 px for anti-aliasing at the content edge
            strip = image.crop((int(width - margin_px + 3), 0, width, height))
            darkest = strip.getextrema()[0]
            if darkest < 245:
                problems.append(f"{png.name}: ink in the right margin (darkest {darkest})")
    assert not problems, "\n".join(problems)


def test_printed_paper_and_orientation(printed: dict[tuple[str, str], Path]) -> None:
    """Each PDF is on the paper asked for, in its page's orientation."""
    for (kind, paper), pdf in printed.items():
        info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True)
        match = re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info.stdout)
        assert match is not None, info.stdout
        width, height = float(match.group(1)), float(match.group(2))
        short, long = (PAPER_MM[paper][0] * PT_PER_MM, PAPER_MM[paper][1] * PT_PER_MM)
        expected = (long, short) if ORIENTATION[kind] == "landscape" else (short, long)
        assert abs(width - expected[0]) < 2 and abs(height - expected[1]) < 2, (kind, paper)


def test_monthly_decisions_and_scenarios_on_the_first_two_pages(
    printed: dict[tuple[str, str], Path], pages: dict[str, Path]
) -> None:
    """What the review is for comes first: every pool's decision and the scenarios' heading and
    table on pages 1–2 of the printed monthly review, on A4 and on Letter."""
    review = json.loads((pages["monthly"].parent / "report.json").read_text())
    pools = [p["name"] for p in review["pools"]]
    assert pools
    for paper in ("a4", "letter"):
        pdf = printed["monthly", paper]
        first_two = _pages_text(pdf, 1, 2)
        assert "Decisions" in first_two, paper
        assert "Scenarios: right-size, repack, both" in first_two, paper
        for pool in pools:
            assert re.search(rf"^{re.escape(pool)}: ", first_two, re.M), (paper, pool)
        # the scenarios table itself, not only its heading: its header and every pool's rows
        assert "Nodes needed" in first_two.replace("\n", " "), paper
        assert _page_count(pdf) > 2  # the rest of the review follows: the check is not vacuous


def test_print_keeps_the_screen_type_scale(pages: dict[str, Path], tmp_path: Path) -> None:
    """Every text's printed size is its screen size times one factor: no line prints larger
    against its neighbours than on screen (the monthly "Rule (forecast)" lines did)."""
    browser = Chromium(tmp_path / "profile")
    try:
        for kind, page in pages.items():
            sizes = {}
            for media in ("screen", "print"):
                browser.events.clear()
                browser.call("Emulation.setEmulatedMedia", media=media)
                browser.call("Emulation.setDeviceMetricsOverride", width=1100, height=1000,
                             deviceScaleFactor=1, mobile=False)  # fmt: skip
                browser.open(page)
                sizes[media] = {k: size * zoom for k, size, zoom in browser.evaluate(FONT_SIZES)}
            shared = sorted(set(sizes["screen"]) & set(sizes["print"]))
            assert len(shared) > 20, kind
            ratios = {round(sizes["print"][k] / sizes["screen"][k], 3) for k in shared}
            assert len(ratios) == 1, f"{kind}: print/screen font-size ratios {sorted(ratios)}"
            (ratio,) = ratios
            assert 0.7 <= ratio <= 1.0, f"{kind}: print type at {ratio:.2f} of the screen's"
    finally:
        browser.close()


def test_link_targets_print_and_anchors_do_not(printed: dict[tuple[str, str], Path]) -> None:
    """A link to another file prints its target beside its words; the in-page navigation does
    not print (nor any "#section" target); a link whose text is its target prints it once."""
    whatif = _pages_text(printed["whatif", "a4"], 1, _page_count(printed["whatif", "a4"]))
    flat = " ".join(whatif.split())
    assert "See the search (search.html)" in flat
    assert "(#" not in flat and "(comparison.csv)" not in flat
    assert "comparison.csv" in flat  # shown once, as the link's own text
    search = " ".join(_pages_text(printed["search", "a4"], 1, 1).split())
    assert "what-if report (report.html)" in search


def test_long_tables_repeat_their_header(
    printed: dict[tuple[str, str], Path], pages: dict[str, Path]
) -> None:
    """A table that runs onto a further page starts that page with its header row again: some
    printed page of the monthly review begins with a table's first header label that the page
    before showed too (its long tables cross pages)."""
    html = pages["monthly"].read_text()
    labels = set(re.findall(r"<thead><tr><th[^>]*>([^<]+)</th>", html))
    assert labels
    pdf = printed["monthly", "a4"]
    continued = []
    for number in range(2, _page_count(pdf) + 1):
        lines = [line.strip() for line in _pages_text(pdf, number, number).splitlines()]
        first = next((line for line in lines if line), "")
        if first in labels and first in _pages_text(pdf, number - 1, number - 1).split("\n"):
            continued.append(number)
    assert continued, f"no page starts with a repeated table header (labels {sorted(labels)})"


@pytest.fixture(scope="module")
def small_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-node, 1-day synthetic snapshot written by the real CLI (a what-if of seconds)."""
    snap = tmp_path_factory.mktemp("print-snap") / "snap"
    made = CliRunner().invoke(main, ["generate", "--out", str(snap), "--nodes", "4", "--days",
                                     "1", "--step", "5m"])  # fmt: skip
    assert made.exit_code == 0, made.output
    return snap


def _whatif(snap: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    args = ["report", "whatif", str(snap), "--out", str(out), "--strategy", "kube-default",
            "--workers", "1", *extra]  # fmt: skip
    return CliRunner().invoke(main, args, env=env)


def test_report_whatif_pdf_through_the_cli(small_snapshot: Path, tmp_path: Path) -> None:
    """``report whatif --pdf --paper letter``: the PDF beside report.html on US Letter, landscape;
    a later run without --pdf replaces the folder, PDF included (report.pdf is one of its files)."""
    require_chromium()
    _require_poppler()
    out = tmp_path / "whatif"
    run = _whatif(small_snapshot, out, "--pdf", "--paper", "letter")
    assert run.exit_code == 0, run.output
    pdf = out / "report.pdf"
    assert f"pdf:    {pdf}" in run.stdout
    assert pdf.read_bytes().startswith(b"%PDF-")
    assert pdf.stat().st_mode & 0o044 == 0o044  # readable by others, as report.html beside it
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True)
    assert re.search(r"Page size:\s+792 x 612 pts \(letter\)", info.stdout), info.stdout
    title = (out / "report.html").read_text().split("<title>")[1].split("</title>")[0]
    assert " ".join(title.split()) in " ".join(_pages_text(pdf, 1, 1).split())
    again = _whatif(small_snapshot, out)
    assert again.exit_code == 0, again.output
    assert not pdf.exists()


def test_a_browser_that_fails_to_print(small_snapshot: Path, tmp_path: Path) -> None:
    """A browser that exits with an error: the report stays as written, one line, the documented
    exit code, no PDF."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "chromium").write_text("#!/bin/sh\necho 'crashed' >&2\nexit 21\n")
    (fake / "chromium").chmod(0o755)
    env = {"PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = tmp_path / "whatif"
    pdf = tmp_path / "printed.pdf"
    run = _whatif(small_snapshot, out, "--pdf", str(pdf), env=env)
    assert run.exit_code == documented_exit("pdf-print-failed"), run.output
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("analyzer: error: --pdf: "), line
    assert "exit 21" in line and "report.html is written" in line
    assert (out / "report.html").is_file()
    assert not pdf.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".printed")] == []


def test_pdf_without_a_browser_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """No Chromium on PATH: before any work, one stderr line naming --pdf and the package to
    install, the documented exit code, no output folder."""
    empty = tmp_path / "bin"
    empty.mkdir()
    history = tmp_path / "history"  # never read: the browser is looked for first
    cases = {
        "monthly": ["report", "monthly", str(history), "--out", str(tmp_path / "m"), "--pdf"],
        "whatif": ["report", "whatif", str(tmp_path), "--out", str(tmp_path / "w"), "--pdf",
                   str(tmp_path / "w.pdf")],
    }  # fmt: skip
    for name, args in cases.items():
        run = CliRunner().invoke(main, args, env={"PATH": str(empty)})
        assert run.exit_code == documented_exit("pdf-no-browser"), (name, run.output)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1, (name, run.stderr)
        assert lines[0].startswith("analyzer: error: --pdf: "), lines[0]
        assert "chromium" in lines[0] and "apt-get install chromium" in lines[0]
        assert run.exception is None or isinstance(run.exception, SystemExit)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_pdf_options_are_checked_before_any_work(tmp_path: Path) -> None:
    """``--paper`` alone, or a ``--pdf`` PATH that is a folder: exit 2 naming the option."""
    runner = CliRunner()
    history = tmp_path / "history"
    for extra, words in ((["--paper", "letter"], "--paper"), (["--pdf", str(tmp_path)], "folder")):
        run = runner.invoke(main, ["report", "monthly", str(history), "--out",
                                   str(tmp_path / "m"), *extra])  # fmt: skip
        assert run.exit_code == 2, run.output
        assert words in run.output
    assert not (tmp_path / "m").exists()

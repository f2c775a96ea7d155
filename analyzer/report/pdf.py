"""A written HTML report printed to PDF by a headless Chromium (``--pdf`` on ``report monthly``
and ``report whatif``; docs/report.md, "Printing").

The pages carry their own print stylesheet (``templates/print.css.j2``); the browser's print is
the one layout engine that reads it as a reader's browser would, so analyzer drives Chromium's
own ``--print-to-pdf`` rather than drawing a second layout. The pages leave the paper size to the
reader's print dialog (``@page { size: portrait }``: orientation only), so the paper of ``--pdf``
is given by printing a temporary copy of the page with one more ``@page`` rule (its paper and the
page's own orientation) and a ``<base>`` that keeps its relative links pointing at the report's
folder. The PDF is written atomically: a failed or interrupted print leaves no file behind.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from analyzer.core.atomic import atomic_write_bytes
from analyzer.core.errors import AnalyzerError, InputError
from analyzer.report.output import make_readable

# Paper names of ``--paper`` → CSS ``@page size`` keywords.
PAPERS = {"a4": "A4", "letter": "letter"}
# Executables tried in this order on PATH: Debian/Ubuntu's and Google's names.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PRINT_TIMEOUT_SECONDS = 180.0  # a page of ours prints in seconds; a hung browser must not hang cron
_ORIENTATION = re.compile(r'<html[^>]*\sdata-print-orientation="(portrait|landscape)"')
_HEAD_END = re.compile(r"</head\s*>", re.IGNORECASE)
_HEAD_START = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)
# Chromium's switches: headless, no first-run work, nothing fetched, no GPU process.
# --no-sandbox: the sandbox cannot start as root (containers, CronJobs); the page printed is our
# own self-contained report (no network, every name escaped), never a page from elsewhere.
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-pdf-header-footer",
)


@dataclass(frozen=True)
class PdfRequest:
    """Where to print, on which paper, with which browser (checked before any work)."""

    path: Path
    paper: str  # a key of PAPERS
    browser: str  # absolute path of the executable


def find_browser(option: str = "--pdf") -> str:
    """The first Chromium or Chrome on PATH; none → InputError naming the fix (exit 2)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found is not None:
            return found
    raise InputError(
        f"{option}: no Chromium or Chrome on PATH (looked for {', '.join(BROWSERS)}); install "
        "one (Debian/Ubuntu: apt-get install chromium) or leave out --pdf and print report.html "
        "from a browser"
    )


def page_for_paper(html: str, folder: Path, paper: str) -> str:
    """``html`` with a ``<base>`` at ``folder`` and an ``@page`` rule for ``paper`` in the page's
    own orientation (``data-print-orientation`` on ``<html>``; landscape, base.html.j2's default, without one)."""
    match = _ORIENTATION.search(html[:4096])
    orientation = match.group(1) if match else "landscape"
    base = f'<base href="{folder.resolve().as_uri()}/">'
    # Last in <head>: a later @page rule wins over the page's own for the size it names.
    rule = f"<style>@page {{ size: {PAPERS[paper]} {orientation}; }}</style>"
    html, starts = _HEAD_START.subn(lambda m: m.group(0) + base, html, count=1)
    html, ends = _HEAD_END.subn(lambda m: rule + m.group(0), html, count=1)
    if not (starts and ends):
        raise AnalyzerError("--pdf: the written page has no <head>; a template lost it")
    return html


def print_pdf(html_path: Path, request: PdfRequest) -> int:
    """Print ``html_path`` to ``request.path`` (atomically); return the PDF's size in bytes."""
    html = html_path.read_text(encoding="utf-8")
    page = page_for_paper(html, html_path.parent, request.paper)
    with tempfile.TemporaryDirectory(prefix="analyzer-pdf-") as tmp:
        work = Path(tmp)
        source = work / "page.html"
        source.write_text(page, encoding="utf-8")
        printed = work / "page.pdf"
        command = [
            request.browser,
            *_FLAGS,
            f"--user-data-dir={work / 'profile'}",  # never the user's own profile
            f"--print-to-pdf={printed}",
            source.as_uri(),
        ]
        # HOME in the work folder too: a CronJob's user may have none Chromium can write to.
        env = {**os.environ, "HOME": str(work)}
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # Chromium logs D-Bus noise even when it prints
                timeout=PRINT_TIMEOUT_SECONDS,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise AnalyzerError(
                f"--pdf: {request.browser} did not print {html_path} within "
                f"{PRINT_TIMEOUT_SECONDS:.0f} s; {html_path.name} is written, print it from a "
                "browser or retry"
            ) from None
        except OSError as exc:
            raise AnalyzerError(
                f"--pdf: cannot run {request.browser} ({exc.strerror}); install Chromium or "
                "leave out --pdf"
            ) from None
        data = printed.read_bytes() if printed.is_file() else b""
        if done.returncode != 0 or not data.startswith(b"%PDF-"):
            raise AnalyzerError(
                f"--pdf: {request.browser} did not print {html_path} (exit {done.returncode}); "
                f"{html_path.name} is written, print it from a browser or retry"
            )
    atomic_write_bytes(request.path, data)
    make_readable(request.path)  # as the report beside it: shared by a web server, colleagues
    return len(data)

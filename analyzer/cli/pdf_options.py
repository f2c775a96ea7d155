"""``--pdf [PATH]`` and ``--paper`` on ``report monthly`` and ``report whatif`` (docs/report.md).

``@pdf_options`` adds the two options; ``pdf_request`` checks them before any work (no browser,
a folder as PATH, an unwritable place, ``--paper`` alone: exit 2, nothing written), and
``print_report`` prints the written ``report.html`` once the report folder is in place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.core.errors import InputError
from analyzer.core.outdir import check_writable
from analyzer.report.pdf import PdfRequest, find_browser, print_pdf

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_NAME = "report.pdf"  # --pdf without PATH: OUT/report.pdf, beside report.html


def pdf_options(func: F) -> F:
    """Add ``--pdf [PATH]`` and ``--paper`` to a report command (below ``@…command``)."""
    func = click.option(
        "--paper",
        type=click.Choice(["a4", "letter"]),
        default=None,
        help="With --pdf: the paper size (default a4).",
    )(func)
    return click.option(
        "--pdf",
        "pdf",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[PATH]",
        help=f"Also print the report to PDF with a headless Chromium (default PATH: "
        f"OUT/{DEFAULT_NAME}).",
    )(func)


def pdf_request(opts: dict[str, Any], out: Path) -> PdfRequest | None:
    """The checked ``PdfRequest`` of ``--pdf``/``--paper``, or None without ``--pdf``."""
    if opts["pdf"] is None:
        if opts["paper"] is not None:
            raise InputError("--paper: only with --pdf (the paper of the printed report)")
        return None
    path = Path(opts["pdf"]) if opts["pdf"] else Path(out) / DEFAULT_NAME
    if path.is_dir():
        raise InputError(f"--pdf {path}: is a folder; give a file name ending in .pdf")
    if path.suffix.lower() != ".pdf":
        raise InputError(f"--pdf {path}: give a file name ending in .pdf")
    check_writable(path, "--pdf")
    return PdfRequest(path=path, paper=opts["paper"] or "a4", browser=find_browser())


def print_report(request: PdfRequest | None, html: Path, width: int = 10) -> None:
    """Print the written ``html`` to the request's PDF and say where it went (the label padded
    to ``width``, as the command's other paths)."""
    if request is None:
        return
    print_pdf(html, request)
    click.echo(f"{'pdf:':<{width}}{request.path}")

"""Help text that never cuts a word: click's layout, but lines break only at spaces.

click wraps at hyphens, so option values such as ``kube-default`` or ``--node-exporter-cpus``
were split across lines (``kube-`` / ``default``); a user copying them got a wrong name. This
formatter wraps like click (paragraphs, ``\\b`` blocks kept verbatim, the two-column option list)
with ``break_on_hyphens=False`` and ``break_long_words=False``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

import click


def wrap_paragraphs(text: str, width: int, indent: str = "") -> list[str]:
    """Paragraphs (split at blank lines) rewrapped to ``width``; a paragraph whose first line is
    ``\\b`` is kept line for line, as click documents."""
    lines: list[str] = []
    for paragraph in textwrap.dedent(text.expandtabs()).strip("\n").split("\n\n"):
        if lines:
            lines.append("")
        rows = paragraph.splitlines()
        if rows and rows[0].strip() == "\b":
            lines += [indent + row for row in rows[1:]]
            continue
        lines += textwrap.wrap(
            " ".join(row.strip() for row in rows),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [""]
    return lines


class HelpFormatter(click.HelpFormatter):
    """click's HelpFormatter with word-preserving wrapping."""

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        self.write("\n".join(wrap_paragraphs(text, self.width, indent)) + "\n")

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        rows = list(rows)
        first_col = min(max((len(term) for term, _ in rows), default=0), col_max) + col_spacing
        margin = " " * (first_col + self.current_indent)
        for term, text in rows:
            self.write(f"{'':>{self.current_indent}}{term}")
            if not text:
                self.write("\n")
                continue
            if len(term) <= first_col - col_spacing:
                self.write(" " * (first_col - len(term)))
            else:
                self.write("\n" + margin)
            lines = wrap_paragraphs(text, max(self.width - first_col - 2, 10))
            self.write(lines[0] + "\n" + "".join(f"{margin}{line}\n" for line in lines[1:]))


class AnalyzerContext(click.Context):
    """A context whose help is formatted by ``HelpFormatter``."""

    formatter_class = HelpFormatter


class AnalyzerCommand(click.Command):
    """A command whose help is formatted by ``HelpFormatter``."""

    context_class = AnalyzerContext


def summary(command: click.Command) -> str:
    """A command's line in its group's list: ``short_help``, else its help's first paragraph
    (whole, to be wrapped — click cuts it at the width and adds "...")."""
    if command.short_help:
        return command.short_help
    text = (command.help or "").split("\f", 1)[0]
    first = textwrap.dedent(text).strip().split("\n\n", 1)[0]
    return " ".join(first.split())

"""Plain-text listings that fit the terminal: aligned columns, descriptions wrapped, never cut."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

MIN_WIDTH = 40
MAX_WIDTH = 100


def terminal_width() -> int:
    """Columns to wrap at: ``$COLUMNS`` or the terminal's width, kept within 40–100."""
    columns = shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return max(MIN_WIDTH, min(columns, MAX_WIDTH))


def wrapped_listing(rows: Sequence[tuple[Sequence[str], str]], width: int) -> str:
    """Each row's cells aligned in columns, then its description wrapped below, indented.

    Words are never split (a word longer than the line stays whole on its own line).
    """
    if not rows:
        return ""
    widths = [max(len(cells[c]) for cells, _ in rows) for c in range(len(rows[0][0]))]
    wrapper = textwrap.TextWrapper(
        width=width,
        initial_indent="    ",
        subsequent_indent="    ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    lines: list[str] = []
    for cells, description in rows:
        lines.append(
            "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()
        )
        if description:
            lines.extend(wrapper.wrap(description))
    return "\n".join(lines)

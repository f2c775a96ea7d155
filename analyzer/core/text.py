"""Text from the cluster or the user, made safe to show on one line: one rule for every place.

Names (pods, pools, namespaces, workloads, files) and input values reach YAML comments, error
messages and terminals. Any of them may hold a line break (``\\n``, ``\\r``, ``\\x85``,
``\\u2028``, ``\\u2029``, ``\\x0b`` …), a terminal escape (``\\x1b``), a bidi override
(``\\u202e``, which makes a line read differently from what it says) or a lone surrogate.
:func:`escaped` writes every character Python does not call printable (``str.isprintable``:
control, format, separator, surrogate, private-use and unassigned characters; the plain space is
kept) as its Python escape, so the text is one line of printable characters and the escapes
read back as the original. :func:`one_line` also cuts it short.
"""

from __future__ import annotations

SHOWN = 80  # characters of a name or value a message shows


def escaped(text: object, *, backslash: bool = False) -> str:
    """``str(text)`` with every non-printable character as its escape (``\\n``, ``\\x85``,
    ``\\u2028``, ``\\U000e0001``); with ``backslash`` a backslash is doubled too, so that the
    escapes are unambiguous (a YAML comment that must read back exactly)."""
    value = str(text)
    if value.isprintable() and not (backslash and "\\" in value):
        return value  # the common case: a plain name, unchanged
    return "".join(
        ch if ch.isprintable() and not (backslash and ch == "\\") else repr(ch)[1:-1]
        for ch in value
    )


def shortened(text: str, limit: int = SHOWN) -> str:
    """``text`` cut to ``limit`` characters, ``…`` marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: object, limit: int = SHOWN) -> str:
    """:func:`escaped` (backslashes doubled) cut to ``limit`` characters: a name or value shown
    in an error message, which must stay one short line whatever the input holds."""
    return shortened(escaped(text, backslash=True), limit)

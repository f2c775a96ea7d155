"""Text analyzer writes into YAML outside ``yaml.dump``: comment lines that a name cannot leave.

A YAML file analyzer writes (right-sizing patches, the search's KubeSchedulerConfiguration) is
meant for ``kubectl apply``. Its body is dumped by PyYAML, which quotes every string; its ``#``
comment lines are written by hand and name namespaces, workloads and files, and those names
come from Prometheus labels or the user's file names, which can hold anything. A comment ends at
the first line break, and PyYAML breaks lines on ``\\n``, ``\\r``, ``\\x85``, ``\\u2028`` and
``\\u2029`` (YAML 1.1's ``b-char``): a name holding ``\\n---\\n`` would start a new document of
its own. PyYAML also refuses a whole stream holding a non-printable character (``\\x00``, a lone
surrogate, ``\\ufffe``), and a bidi override (``\\u202e``) makes a comment read differently from
what it says.

So every such text goes through :func:`comment_text`: a backslash becomes ``\\\\`` and every
character Python does not call printable (``str.isprintable``: control, format, separator,
surrogate, private-use and unassigned characters; the plain space is kept) becomes its visible
escape (``\\n``, ``\\x85``, ``\\u2028``, ``\\U000e0001``), so the text is one line of printable
characters, unambiguous (the escapes read back as the original), and nothing in it can end
the comment. :func:`comment` prefixes ``# ``; :func:`comment_block` joins several lines;
``core/text.py`` holds the rule itself, and ``one_line`` for names quoted in error messages.
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from analyzer.core.text import escaped

# libyaml's safe dumper when PyYAML has it: the text ``yaml.safe_dump`` writes, ~5-10x faster
# (the monthly review's patches, the demo's NodeMetrics)
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def comment_text(text: object) -> str:
    """``text`` (``str()`` of anything) as one line of printable characters, escapes visible
    and backslashes doubled, so the comment reads back as the original (``core/text.py``)."""
    return escaped(text, backslash=True)


def comment(text: object) -> str:
    """One YAML comment line, ``# `` + :func:`comment_text` (no trailing newline)."""
    return "# " + comment_text(text)


def comment_block(lines: Iterable[object]) -> str:
    """Several comment lines, each through :func:`comment`, joined by newlines."""
    return "\n".join(comment(line) for line in lines)

"""One cluster of many behind one Prometheus: a label matcher added to every selector of a query.

``--cluster-label NAME --cluster X`` (docs/fleet.md) reads cluster X of a Thanos, Mimir or
VictoriaMetrics holding many clusters apart by a label. Every vector selector of every expression
the client sends — the query profile's, the pre-flight's, the scrape-interval probe's — gets
``NAME="X"`` as its first matcher, so no series of another cluster reaches the snapshot whatever
the expression aggregates by. The client applies it (``client.PromClient``), so no query can
forget it, a user's own ``--queries-dir`` included.

The expression is scanned, not parsed: strings are skipped whole, ``[...]`` (ranges, subqueries)
and the label lists after ``by``/``without``/``on``/``ignoring``/``group_left``/``group_right``
are left alone, a name followed by ``(`` is a function or aggregation, and every other name is a
metric (``{…}`` added or extended). The value is written as a PromQL double-quoted string (JSON's
escaping, which PromQL's Go-style strings read the same), so a value holding ``"``, ``\\``, ``}``
or a line break stays one value: it cannot end the matcher or add a second one.
"""

from __future__ import annotations

import json
import re

from analyzer.core.errors import InputError
from analyzer.core.text import one_line

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_NUMBER = re.compile(r"(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)([a-zA-Z]+[0-9]*)*")
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
# Aggregation operators are keywords (``sum by (x) (…)``: the name is not followed by "("); PromQL
# does not let a metric be named as one without {__name__="…"}.
_AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                 "bottomk", "topk", "quantile", "limitk", "limit_ratio"}  # fmt: skip
_KEYWORDS = _GROUPING | _AGGREGATIONS | {"bool", "offset", "and", "or", "unless", "atan2", "inf",
                                         "nan", "start", "end"}  # fmt: skip


def check_label(name: str, option: str = "--cluster-label") -> str:
    """``name`` when it is a Prometheus label name, else one line naming ``option``."""
    if not LABEL_NAME.match(name or "") or name.startswith("__"):
        raise InputError(
            f"{option}: {one_line(name)!r} is not a label name (letters, digits and _ , not "
            "starting with a digit or __), e.g. cluster"
        )
    return name


def matcher(label: str, value: str) -> str:
    """``label="value"`` with the value quoted safely (see the module docstring)."""
    return f"{check_label(label)}={json.dumps(value, ensure_ascii=False)}"


def _skip_string(expr: str, i: int) -> int:
    quote = expr[i]
    j = i + 1
    while j < len(expr):
        if expr[j] == "\\" and quote != "`":
            j += 2
            continue
        if expr[j] == quote:
            return j + 1
        j += 1
    return j


def _close(expr: str, i: int, open_: str, close: str) -> int:
    """Index after the bracket matching ``expr[i]`` (strings inside skipped)."""
    depth = 0
    j = i
    while j < len(expr):
        ch = expr[j]
        if ch in "\"'`":
            j = _skip_string(expr, j)
            continue
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def _next_char(expr: str, i: int) -> str:
    while i < len(expr) and expr[i].isspace():
        i += 1
    return expr[i] if i < len(expr) else ""


def with_matcher(expr: str, label: str, value: str) -> str:
    """``expr`` with ``label="value"`` as the first matcher of every vector selector."""
    added = matcher(label, value)
    out: list[str] = []
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch in "\"'`":
            j = _skip_string(expr, i)
            out.append(expr[i:j])
            i = j
        elif ch == "[":
            j = _close(expr, i, "[", "]")
            out.append(expr[i:j])
            i = j
        elif ch == "{":  # a selector without a metric name: {__name__=~"…"}
            out.append(_braces(expr, i, added))
            i = _close(expr, i, "{", "}")
        elif ch == "#":  # a comment runs to the end of the line
            j = expr.find("\n", i)
            j = len(expr) if j < 0 else j
            out.append(expr[i:j])
            i = j
        elif ch.isdigit() or (ch == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            m = _NUMBER.match(expr, i)
            j = m.end() if m and m.end() > i else i + 1
            out.append(expr[i:j])
            i = j
        elif _NAME.match(expr, i):
            m = _NAME.match(expr, i)
            assert m is not None
            name, j = m.group(0), m.end()
            out.append(name)
            after = _next_char(expr, j)
            if name.lower() in _GROUPING and after == "(":
                k = expr.index("(", j)
                end = _close(expr, k, "(", ")")
                out.append(expr[j:end])
                j = end
            elif name.lower() in _KEYWORDS or after == "(":
                pass  # a keyword, or a function / aggregation call
            elif after == "{":
                k = expr.index("{", j)
                out.append(expr[j:k])
                out.append(_braces(expr, k, added))
                j = _close(expr, k, "{", "}")
            else:
                out.append("{" + added + "}")
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _braces(expr: str, i: int, added: str) -> str:
    """The ``{…}`` at ``i`` with ``added`` first."""
    end = _close(expr, i, "{", "}")
    inner = expr[i + 1 : end - 1]
    return "{" + added + ("," + inner if inner.strip() else "") + "}"

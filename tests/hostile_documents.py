"""Hypothesis strategies for hostile structured input: a valid document with one thing broken.

``mutated(base)`` draws a path inside ``base`` (every mapping value, list item and key is a
candidate) and puts a hostile value there: a wrong type, a non-finite or huge number, a name
holding a Unicode line break, a control character or a formula prefix, a list nested past the
loaders' depth bound. ``as_file`` writes the result as YAML or JSON, sometimes with an alias bomb
appended or random bytes in front, so every reader meets aliases, bad UTF-8 and syntax errors too.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import yaml

# the line breaks and formula prefixes every hostile-input test uses
from hostile_names import FORMULA_PREFIXES, LINE_BREAKS
from hypothesis import strategies as st


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


hostile_text = st.one_of(
    st.builds(
        lambda brk, word: f"evil{brk}kind: Secret{brk}metadata: {{name: pwned}}{brk}#",
        st.sampled_from(LINE_BREAKS),
        st.sampled_from(["", "x"]),
    ),
    st.builds(
        lambda p, rest: p + rest,
        st.sampled_from(FORMULA_PREFIXES),
        st.sampled_from(['HYPERLINK("http://evil.example/x","click")', "SUM(1+1)", "2+3"]),
    ),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20),
    st.sampled_from(
        [
            "<script>alert(1)</script>",
            "rtl\u202etxt.exe",
            "W" * 5000,
            "",
            " ",
            "5e-2",
            "1e308",
            "0.38",
            "250m",
            "-1",
            "null",
            "true",
            "2026-13-45",
            "\x00\x07",
        ]
    ),
)

hostile_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**63, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1e-320, float("inf"), float("nan")]),
    hostile_text,
)

hostile_value = st.one_of(
    hostile_scalar,
    st.lists(hostile_scalar, max_size=3),
    st.dictionaries(hostile_text, hostile_scalar, max_size=3),
    st.builds(_deep, st.just(150)),  # past the loaders' 100 levels (a fresh list each time)
    st.builds(_deep, st.just(60)),  # inside them
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value``: mapping values, list items, and ("key", k) for a mapping key
    (not inside a hostile value already put there: the base documents nest ~15 deep)."""
    found = [prefix]
    if len(prefix) > 20:
        return found
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*prefix, ("key", key)))
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found.extend(_paths(child, (*prefix, i)))
    return found


def _put(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    *parents, last = path
    target = document
    for step in parents:
        target = target[step]
    if isinstance(last, tuple):  # rename a key
        old = last[1]
        key = new if isinstance(new, str | int | float | bool) or new is None else str(new)[:40]
        target[key] = target.pop(old)
    else:
        target[last] = new
    return document


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with 0 to 2 places replaced by hostile values."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        document = _put(document, path, draw(hostile_value))
    return document


def _bomb(levels: int) -> str:
    names = "abcdefghi"[:levels]
    parts = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    parts += [f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in itertools.pairwise(names)]
    return "[" + ", ".join(parts) + "]"


@st.composite
def as_file(draw: st.DrawFn, document: Any, path: Path, *, json_only: bool = False) -> Path:
    """Write ``document`` to ``path``: YAML or JSON, sometimes damaged (a bomb, bytes, a cut)."""
    if json_only or path.suffix == ".json":
        text = json.dumps(document, allow_nan=True)
    else:
        text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=10_000)
    damage = draw(st.sampled_from(["none", "none", "none", "bomb", "bytes", "cut"]))
    data = text.encode("utf-8")
    if damage == "bomb" and path.suffix != ".json" and isinstance(document, dict):
        data += f"zz-bomb: {_bomb(draw(st.integers(min_value=2, max_value=9)))}\n".encode()
    elif damage == "bytes":
        data = draw(st.binary(min_size=1, max_size=8)) + data
    elif damage == "cut":
        data = data[: draw(st.integers(min_value=0, max_value=max(0, len(data) - 1)))]
    path.write_bytes(data)
    return path

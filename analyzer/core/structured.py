"""One safe way to read the structured files a user gives analyzer: YAML, JSON and TOML.

Every reader of a user-supplied file (``--config``, ``--prices``, ``score`` scenarios,
KubeSchedulerConfiguration files, ``--search-grid``, ``--kube-objects``, stored forecasts) goes
through ``load_yaml`` / ``load_yaml_all`` / ``load_json`` / ``load_toml``. Whatever the bytes, the
result is the parsed value or one ``InputError`` line (exit 2) that names the option the user typed
and the file:

- YAML aliases may not expand the document by more than ``MAX_ALIAS_NODES`` nodes. PyYAML keeps an
  alias as a shared reference, so a 438-byte "billion laughs" loads at once; whatever walks it
  afterwards (an error message's ``repr``, ``json.dumps``, click's ``str`` of a default) meets 9^9
  elements. The node graph is measured before anything is constructed, without expanding it; an
  alias inside its own anchor (a cycle) is refused too. Ordinary anchors and merge keys
  (``<<: *base``) add a few nodes each and load as before.
- Nesting deeper than ``MAX_DEPTH`` is refused (counted while composing YAML, so the refusal comes
  before Python's recursion limit; measured after parsing JSON and TOML), so no reader meets a
  ``RecursionError`` later. Real files nest about 15 deep (a node affinity in a Deployment).
- Bytes that are not UTF-8, syntax errors, folders and unreadable files are one line each.

``describe_value`` shows an input value in a message: its type and at most 80 characters, with
line breaks and control characters escaped, never the whole value.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from analyzer.core.errors import InputError
from analyzer.core.text import escaped

MAX_DEPTH = 100  # nesting levels; kubectl's output of a Deployment with affinity is ~15
MAX_ALIAS_NODES = 100_000  # nodes YAML aliases may add beyond those written in the file
PREVIEW_CHARS = 80  # characters of an input value an error message may show
_CONTAINER_TYPES = frozenset({dict, list})  # what json, tomllib and SafeLoader build


class _Piece(str):
    """Punctuation ``_preview`` writes as is (a subclass, so input strings never pass for it)."""

    __slots__ = ()


class _Refused(Exception):
    """A bound of this module refused the document (turned into an ``InputError`` naming it)."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that counts nesting while composing and measures alias expansion.

    ``compose_node`` recurses once per level; counting there refuses a 100,000-deep file at level
    ``MAX_DEPTH + 1``, long before the interpreter's recursion limit.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # the scanner looks ahead over every open ``[`` / ``{`` for a possible key, quadratic in
        # their number: refuse while scanning, before the composer would see that level
        super().fetch_flow_collection_start(TokenClass)
        if self.flow_level > MAX_DEPTH:
            self._too_deep(self.get_mark().line)

    def add_indent(self, column: int) -> bool:
        added: bool = super().add_indent(column)
        if len(self.indents) > MAX_DEPTH:
            self._too_deep(self.line)
        return added

    @staticmethod
    def _too_deep(line: int) -> None:
        raise _Refused(
            f"nested deeper than {MAX_DEPTH} levels (line {line + 1}); "
            "no analyzer input nests that deep"
        )

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                self._too_deep(self.peek_event().start_mark.line)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)  # type: ignore[return-value]
        finally:
            self._depth -= 1

    def compose_document(self) -> Node | None:
        node = super().compose_document()
        if node is not None:
            _check_expansion(node)
        return node


def _children(node: Node) -> Iterable[Node]:
    if isinstance(node, SequenceNode):
        return node.value  # type: ignore[no-any-return]
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return ()


def _check_expansion(root: Node) -> None:
    """Refuse a node graph whose aliases expand it beyond the bounds (or into a cycle).

    A depth-first walk over the distinct nodes (an explicit stack, no recursion) gives each node
    its expanded size and depth, memoised by identity, so a bomb is measured in microseconds.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            kids = [id(kid) for kid in _children(node)]
            size[key] = 1 + sum(size[kid] for kid in kids)
            depth[key] = 1 + max((depth[kid] for kid in kids), default=0)
            continue
        if key in size:
            continue
        if key in open_nodes:
            mark = node.start_mark
            raise _Refused(
                f"an alias refers to a node that contains it (line {mark.line + 1}); "
                "write the value out instead"
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((kid, False) for kid in _children(node) if id(kid) not in size)
    written = len(size)
    if size[id(root)] - written > MAX_ALIAS_NODES:
        raise _Refused(
            f"its aliases (*name) expand {written:,} written nodes to {size[id(root)]:,} "
            f"(at most {MAX_ALIAS_NODES:,} more are allowed); write the values out instead "
            "of repeating anchors"
        )
    if depth[id(root)] > MAX_DEPTH:
        raise _Refused(f"its aliases nest it deeper than {MAX_DEPTH} levels; write it flatter")


def _label(what: str, path: Path) -> str:
    return f"{what} {path}" if what else str(path)


def _one_line(text: str, limit: int = 200) -> str:
    """A library's message as one escaped line of at most ``limit`` characters."""
    line = " ".join(text.split())
    line = _escape(line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _escape(text: str) -> str:
    """Line breaks and other non-printables as Python escapes (``core/text.py``'s rule)."""
    return escaped(text)


def read_text(path: Path | str, *, what: str = "") -> str:
    """The UTF-8 text of a user's file (a leading BOM dropped); ``InputError`` naming it."""
    path = Path(path)
    label = _label(what, path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{label}: is a folder; give a file") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read it ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{label}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return _one_line(f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}")
    return _one_line(str(exc) or type(exc).__name__)


def _parse_yaml(text: str, label: str, *, many: bool) -> Any:
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # its reader already refuses some characters
        if many:
            documents = []
            while loader.check_data():  # type: ignore[no-untyped-call]
                documents.append(loader.get_data())
            return documents
        return loader.get_single_data()
    except _Refused as exc:
        raise InputError(f"{label}: refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{label}: not valid YAML ({_yaml_problem(exc)})") from None
    except RecursionError:
        raise InputError(_too_deep_message(label)) from None
    except ValueError as exc:  # an integer of more than 4,300 digits (int's conversion limit)
        raise InputError(f"{label}: not valid YAML ({_one_line(str(exc))})") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: Path | str, *, what: str = "") -> Any:
    """The one YAML document of ``path`` (None when empty), within the bounds; else ``InputError``.

    ``what`` is what the user typed to name the file (``--prices``, ``scenario``), put before it
    in every message.
    """
    path = Path(path)
    return _parse_yaml(read_text(path, what=what), _label(what, path), many=False)


def load_yaml_all(path: Path | str, *, what: str = "") -> list[Any]:
    """Every YAML document of ``path`` (``---`` separated), each within the bounds."""
    path = Path(path)
    documents: list[Any] = _parse_yaml(read_text(path, what=what), _label(what, path), many=True)
    return documents


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep lists and mappings nest in ``value`` (a scalar is 0), counted up to ``limit + 1``.

    Level by level (no recursion, so any depth is measured), each level's containers gathered by
    list comprehensions: about a third of ``json.loads``' own time on an 80 MB kubectl List
    (``bench/structured_load.py``). The walk stops at the first level past ``limit``.
    """
    # parsers build plain dicts and lists: exact type tests are several times cheaper than
    # isinstance against the Mapping ABC on millions of values
    level = [value] if type(value) in _CONTAINER_TYPES else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            below += [child for child in children if type(child) in _CONTAINER_TYPES]
        level = below
    return depth


def _too_deep_message(label: str) -> str:
    return f"{label}: refused: nested deeper than {MAX_DEPTH} levels; no analyzer input nests that deep"


def _check_depth(value: Any, label: str) -> Any:
    if nesting_depth(value) > MAX_DEPTH:
        raise InputError(_too_deep_message(label))
    return value


def parse_json_text(text: str, label: str) -> Any:
    """``text`` as JSON, within the depth bound; ``InputError`` starting with ``label``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = _one_line(f"line {exc.lineno}, column {exc.colno}: {exc.msg}")
        raise InputError(f"{label}: not valid JSON ({problem})") from None
    except RecursionError:
        raise InputError(_too_deep_message(label)) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"{label}: not valid JSON ({_one_line(str(exc))})") from None
    return _check_depth(value, label)


def load_json(path: Path | str, *, what: str = "") -> Any:
    """The JSON value of ``path``, within the depth bound; else ``InputError`` naming the file."""
    path = Path(path)
    return parse_json_text(read_text(path, what=what), _label(what, path))


def load_toml(path: Path | str, *, what: str = "") -> dict[str, Any]:
    """The TOML table of ``path``, within the depth bound; else ``InputError`` naming the file."""
    path = Path(path)
    label = _label(what, path)
    text = read_text(path, what=what)
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML ({_one_line(str(exc))})") from None
    except RecursionError:
        raise InputError(_too_deep_message(label)) from None
    except ValueError as exc:
        raise InputError(f"{label}: not valid TOML ({_one_line(str(exc))})") from None
    checked: dict[str, Any] = _check_depth(value, label)
    return checked


def load_yaml_or_json(path: Path | str, *, what: str = "") -> Any:
    """``path`` as JSON when it ends in ``.json``, else as YAML (the same bounds either way)."""
    if Path(path).suffix.lower() == ".json":
        return load_json(path, what=what)
    return load_yaml(path, what=what)


def _preview(value: Any, budget: int) -> str:
    """A repr-like rendering of ``value`` cut after ``budget`` characters (built piecewise, so a
    huge or deeply nested value costs no more than the characters shown)."""
    out: list[str] = []
    used = 0
    stack: list[Any] = [value]  # values still to render, and punctuation (_Piece)
    while stack and used <= budget:
        item = stack.pop()
        piece: str
        if type(item) is _Piece:
            piece = item
        elif isinstance(item, Mapping):
            pairs = list(item.items())[: budget // 2 + 1]
            parts: list[Any] = [_Piece("{")]
            for i, (key, val) in enumerate(pairs):
                parts += [_Piece(", ")] if i else []
                parts += [key, _Piece(": "), val]
            parts.append(_Piece("}" if len(pairs) == len(item) else ", …}"))
            stack.extend(reversed(parts))
            continue
        elif isinstance(item, list | tuple):
            head = list(item[: budget // 2 + 1])
            parts = [_Piece("[")]
            for i, val in enumerate(head):
                parts += [_Piece(", ")] if i else []
                parts.append(val)
            parts.append(_Piece("]" if len(head) == len(item) else ", …]"))
            stack.extend(reversed(parts))
            continue
        elif isinstance(item, str):
            piece = repr(item[: budget + 1])
        elif isinstance(item, bool) or item is None or isinstance(item, float):
            piece = repr(item)
        elif isinstance(item, int):
            piece = str(item) if item.bit_length() < 256 else f"<{item.bit_length()}-bit integer>"
        else:
            piece = f"<{type(item).__name__}>"
        out.append(str(piece))
        used += len(piece)
    text = _escape("".join(out))
    return text if len(text) <= budget else text[: budget - 1] + "…"


def plain(value: Any) -> str:
    """``str(value)`` escaped and cut to 80 characters, without quotes: a name inside a path of
    fields (``collect.stepp``)."""
    text = _escape(str(value)[: PREVIEW_CHARS + 1]) if isinstance(value, str) else preview(value)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def preview(value: Any) -> str:
    """At most 80 characters of ``value`` as ``repr`` would write it (``'stepp'``), escaped: for a
    name or key whose type goes without saying."""
    return _preview(value, PREVIEW_CHARS)


def describe_value(value: Any) -> str:
    """``value`` for an error message: its type, then at most 80 characters of it, escaped.

    ``describe_value("5e-2")`` is ``str '5e-2'``; a list adds its length:
    ``list of 9 items ['lol', ['lol', …``.
    """
    kind = type(value).__name__
    if isinstance(value, list | tuple | Mapping):
        count = len(value)
        kind = f"{kind} of {count} item{'s' if count != 1 else ''}"
    return f"{kind} {_preview(value, PREVIEW_CHARS)}"

"""Typed access to parsed YAML/JSON with ``InputError``s that name the field (no tracebacks).

Every field a reader takes from a user's Kubernetes object, scenario or configuration goes through
one of these accessors: a value of the wrong type (``labels`` as a list, ``replicas`` as text, a
label value that is a mapping) is one line naming the field, its type and at most 80 characters of
it (``core.structured.describe_value``), never the whole value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, plain

_CONTAINERS = (Mapping, list, tuple, set)


def mapping(raw: Any, where: str) -> Mapping[str, Any]:
    """``raw`` as a mapping (None → empty)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping, got {describe_value(raw)}")
    return raw


def listing(raw: Any, where: str) -> list[Any]:
    """``raw`` as a list (None → empty)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list, got {describe_value(raw)}")
    return raw


def integer(raw: Any, where: str) -> int:
    """``raw`` as an int (booleans and floats refused)."""
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"{where}: {describe_value(raw)} is not an integer")
    return raw


def optional_integer(raw: Any, where: str) -> int | None:
    """``raw`` as an int, or None when absent."""
    return None if raw is None else integer(raw, where)


def text(raw: Any, where: str) -> str:
    """A scalar field as text (None → ""; a number or boolean as written); a list or mapping is
    refused."""
    if raw is None:
        return ""
    if isinstance(raw, _CONTAINERS):
        raise InputError(f"{where}: expected a string, got {describe_value(raw)}")
    return str(raw)


def string_map(raw: Any, where: str) -> dict[str, str]:
    """A ``map[string]string`` (labels, annotations, nodeSelector, a selector's matchLabels):
    None → empty; keys and values must be scalars (kept as their text)."""
    out: dict[str, str] = {}
    for key, value in mapping(raw, where).items():
        if isinstance(key, _CONTAINERS) or key is None:
            raise InputError(f"{where}: a key is {describe_value(key)}; keys are strings")
        out[str(key)] = text(value, f"{where}.{plain(key)}")
    return out

"""Typed access to parsed YAML with ``InputError``s that name the field (no tracebacks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.core.errors import InputError


def mapping(raw: Any, where: str) -> Mapping[str, Any]:
    """``raw`` as a mapping (None → empty)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping, got {type(raw).__name__} {raw!r}")
    return raw


def listing(raw: Any, where: str) -> list[Any]:
    """``raw`` as a list (None → empty)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list, got {type(raw).__name__} {raw!r}")
    return raw


def integer(raw: Any, where: str) -> int:
    """``raw`` as an int (booleans and floats refused)."""
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"{where}: {raw!r} is not an integer")
    return raw

"""Where the bundled ``queries/`` and ``templates/`` folders are.

In a checkout they sit at the top level of the repository; in an installed wheel they are packed
into ``analyzer/_data/`` (pyproject ``force-include``). Users may point at their own folders.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.core.errors import InputError

_PACKAGE = Path(__file__).resolve().parents[1]  # analyzer/, this file being analyzer/core/paths.py


def bundled_dir(name: str) -> Path:
    """The bundled ``queries`` or ``templates`` folder, from a wheel or a checkout."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise InputError(f"bundled folder {name!r} not found next to {_PACKAGE}; reinstall analyzer")


def queries_dir(override: Path | None = None) -> Path:
    """The query profile folder: ``override`` if given (must exist), else the bundled one."""
    if override is not None:
        if not Path(override).is_dir():
            raise InputError(f"--queries-dir: {override} is not a folder")
        return Path(override)
    return bundled_dir("queries")


def templates_dir() -> Path:
    """The bundled templates folder."""
    return bundled_dir("templates")

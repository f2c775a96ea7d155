"""Output folders: ``--out`` never deletes what analyzer did not write, and fails before the work.

Every command that writes a folder replaces (a snapshot, a report run) or fills (the nightly
``OUT``, the demo folder) checks it first, before any fetch or computation:

- the folder, if it exists, must be a folder, and the nearest existing ancestor must be writable
  (otherwise a whole fetch would end in a ``PermissionError``);
- an existing non-empty folder must be one of ours: every entry must be a name that kind of
  output writes (``owned``). A folder holding anything else is refused with exit 2, never
  emptied: the user points ``--out`` at a new or empty folder, or removes it themself.

The same check runs again right before an atomic swap (``analyzer.core.atomic.atomic_directory``),
so library callers are covered too.
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from analyzer.core.errors import InputError

# A predicate on an entry name of the folder: True when analyzer writes entries of that name.
Owned = Callable[[str], bool]


def names_matching(patterns: Iterable[str]) -> Owned:
    """An ``Owned`` predicate from shell patterns (``*.csv``, ``report.html``)."""
    frozen = tuple(patterns)
    return lambda name: any(fnmatch.fnmatchcase(name, pattern) for pattern in frozen)


def foreign_entries(folder: Path, owned: Owned) -> list[str]:
    """Names in ``folder`` that ``owned`` does not claim, sorted ([] if it does not exist)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(entry.name for entry in folder.iterdir() if not owned(entry.name))


def check_not_foreign(folder: Path, owned: Owned, option: str = "--out", what: str = "") -> None:
    """Refuse ``folder`` if it is a file or holds entries analyzer did not write."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{option} {folder}: is a file, not a folder; give a folder path")
    foreign = foreign_entries(folder, owned)
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        kind = f"not {what} analyzer wrote" if what else "not written by analyzer"
        raise InputError(
            f"{option} {folder}: exists and is {kind} (it holds {shown}); analyzer never deletes "
            "what it did not write: give a new or empty folder"
        )


def check_writable(path: Path, option: str = "--out") -> None:
    """``path`` can be created or replaced: its nearest existing ancestor takes a new folder.

    Probed by creating (and removing) a folder there: permission bits alone do not tell, for
    root on a read-only or virtual file system.
    """
    path = Path(path)
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{option} {path}: {parent} is a file, not a folder; give another path")
    try:
        probe = tempfile.mkdtemp(prefix=".analyzer-probe-", dir=parent)
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise InputError(
            f"{option} {path}: cannot write to {parent} ({reason}); give a folder you can write to"
        ) from None
    Path(probe).rmdir()


def check_output_folder(
    folder: Path, owned: Owned, option: str = "--out", what: str = "", inside: bool = False
) -> None:
    """Both checks, for a folder that is replaced (``inside=False``) or written into (``True``)."""
    folder = Path(folder)
    check_not_foreign(folder, owned, option, what)
    check_writable(folder / "x" if inside and folder.is_dir() else folder, option)

"""Atomic writes: readers see the old output or the new one, never half of either.

Files: write a temporary file in the same folder, fsync, then ``os.replace``. Directories (a
snapshot, a report run): build everything in a temporary sibling folder, then swap it in with
renames; on any error the temporary folder is removed and the old output stays untouched.

An existing folder is replaced only when every entry in it is one the caller owns
(``analyzer.core.outdir``): analyzer never deletes what it did not write. SIGTERM and SIGINT
unwind like an error (``handle_termination``), so their temporary folders go too; the temporary
folders of a run killed harder (SIGKILL, power loss) are removed by a later write to the same
place once they are older than ``STALE_TEMP_SECONDS``, matched by our exact name pattern only.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from analyzer.core.errors import EXIT_SIGNAL_BASE, Terminated
from analyzer.core.outdir import Owned, check_not_foreign

STALE_TEMP_SECONDS = 3600  # a temporary folder older than this belongs to a run that died


class _Writes:
    """How many atomic writes are under way (any thread): a signal then unwinds, else exits."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0

    @contextlib.contextmanager
    def tracked(self) -> Iterator[None]:
        with self.lock:
            self.active += 1
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1


_WRITES = _Writes()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (same-folder temp file + ``os.replace``).

    An OS error (disk full, file too large) names ``path``: ``write()`` itself carries no file
    name, and the message must say which output the machine refused.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    with _WRITES.tracked():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                Path(tmp).unlink()
            if isinstance(exc, OSError):
                name_the_file(exc, path)
            raise


def name_the_file(exc: OSError, path: Path) -> None:
    """Give ``exc`` the file it was about (``path``) when the OS did not, and never the name of
    our temporary sibling: the user knows the output, not ``.report.json.x1y2z3ab.tmp``."""
    if exc.filename is None or _is_temporary(str(exc.filename)):
        exc.filename = str(path)


def _is_temporary(name: str) -> bool:
    return bool(re.match(r"^\..+\.[a-z0-9_]{8}\.tmp$", Path(name).name))


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _temp_pattern(target: Path) -> re.Pattern[str]:
    """Names ``atomic_directory`` gives its temporary folders next to ``target``."""
    # mkdtemp's random part is 8 characters of [a-z0-9_], as is a folder moved aside; older
    # versions named the folder moved aside ``old-PID``.
    return re.compile(rf"^\.{re.escape(target.name)}\.(?:[a-z0-9_]{{8}}\.tmp|old-\d+)$")


def remove_stale_temporaries(target: Path, max_age: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove our temporary folders and files next to ``target`` older than ``max_age`` s.

    Only the names ``atomic_directory`` and ``atomic_write_bytes`` make for this ``target`` are
    touched (never a symlink), and only old ones: a young one may belong to a run still writing.
    Returns what was removed.
    """
    target = Path(target)
    if not target.parent.is_dir():
        return []
    pattern = _temp_pattern(target)
    now = time.time()
    removed = []
    for path in target.parent.glob(f".{glob.escape(target.name)}.*"):
        if not pattern.match(path.name) or path.is_symlink():
            continue
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > max_age:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
    return removed


@contextlib.contextmanager
def atomic_directory(
    target: Path, owned: Owned | None = None, option: str = "--out"
) -> Iterator[Path]:
    """Yield an empty temporary folder; on success it replaces ``target`` as a whole.

    The temporary folder is a sibling of ``target`` (same filesystem, so renames are atomic).
    If ``target`` exists it is moved aside first and deleted only after the swap succeeded; with
    ``owned`` given, an existing ``target`` holding any entry ``owned`` does not claim is refused
    (``InputError``) before anything is written and again right before the swap.
    """
    with _WRITES.tracked(), _swap_in(Path(target), owned, option) as tmp:
        yield tmp


@contextlib.contextmanager
def _swap_in(target: Path, owned: Owned | None, option: str) -> Iterator[Path]:
    if owned is not None:
        check_not_foreign(target, owned, option)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if owned is not None:
            check_not_foreign(target, owned, option)
    except BaseException as exc:
        if isinstance(exc, OSError):
            exc.filename = str(_in_target(exc.filename, tmp, target))
        _remove(tmp)
        raise
    _put_in_place(tmp, target)


SWAP_TRIES = 5  # other writers finishing between our two renames, each time: give up after this


def _put_in_place(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` to ``target``, moving an existing ``target`` aside first; race-safe.

    Two renames are not one atomic step: another writer (a second run into the same ``--out``)
    may put its own whole folder at ``target`` between them, or move ``target`` away first.
    rename(2) then refuses ours (ENOTEMPTY/EEXIST: ``target`` is a non-empty folder again) or
    finds nothing to move aside (ENOENT). Neither is a fault: every folder involved is a whole
    output. We move the newcomer aside too and try again, so the last writer wins and
    ``target`` is never missing nor half of anything. Restoring our old folder after a genuine
    failure is itself guarded: if another writer's folder already sits at ``target``, theirs is
    newer than our old one and stays. Every aside folder gets a fresh random name (two writers,
    even two threads of one process, never share it) and is removed, never left behind.
    """
    for _ in range(SWAP_TRIES):
        old = _move_aside(target)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            if old is not None:
                _restore(old, target)
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                continue  # another writer's folder landed in between: move it aside too
            _remove(tmp)
            raise
        except BaseException:
            if old is not None:
                _restore(old, target)
            _remove(tmp)
            raise
        if old is not None:
            _remove(old)
        return
    _remove(tmp)
    raise OSError(
        errno.EBUSY,
        f"other writers replaced it {SWAP_TRIES} times while this run swapped its output in",
        str(target),
    )


def _aside_name(target: Path) -> Path:
    """A fresh name next to ``target`` in the temporary pattern (so a crash leaves only what
    ``remove_stale_temporaries`` removes later)."""
    while True:
        path = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        if not os.path.lexists(path):
            return path


def _move_aside(target: Path) -> Path | None:
    """Rename ``target`` to a fresh aside name; ``None`` if there is none (or another writer
    moved it away first)."""
    if not target.exists():
        return None
    old = _aside_name(target)
    try:
        os.replace(target, old)
    except FileNotFoundError:
        return None  # another writer moved it aside between our check and the rename
    return old


def _restore(old: Path, target: Path) -> None:
    """Put ``old`` back at ``target``, unless another writer's whole folder is there now."""
    try:
        os.replace(old, target)
    except OSError:
        _remove(old)


def _remove(path: Path) -> None:
    """Remove a folder of ours, or a symlink moved aside (rmtree refuses links)."""
    if path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _in_target(name: object, tmp: Path, target: Path) -> object:
    """The name an OS error inside a folder write should show: a file of ``tmp`` as it would be
    named under ``target`` (the user never saw ``tmp``); none at all: the file written last."""
    if name is None:
        return _being_written(tmp, target)
    try:
        return target / Path(str(name)).relative_to(tmp)
    except ValueError:
        return name  # a file elsewhere (a history store beside the report): as it is


def _being_written(tmp: Path, target: Path) -> Path:
    """The file an OS error inside a folder write was about: the newest entry of ``tmp`` (the
    one written last), as it will be named under ``target``; ``target`` when ``tmp`` is empty."""
    newest: tuple[int, Path] | None = None
    for path in tmp.rglob("*"):
        with contextlib.suppress(OSError):
            stamp = path.lstat().st_mtime_ns
            if newest is None or stamp >= newest[0]:
                newest = (stamp, path)
    return target if newest is None else target / newest[1].relative_to(tmp)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM/SIGINT: unwind if an atomic write is under way (its ``except`` removes the
    temporary folder), else end now with one line, as the default action would, minus the noise.

    Unwinding only then keeps a signal during a long fetch from waiting for the fetch's worker
    threads. A second signal while unwinding is ignored: it would interrupt the cleanup.
    """
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if _WRITES.active:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)
    name = signal.Signals(signum).name
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.write(f"analyzer: error: stopped by {name}; no output was being written\n")
        sys.stderr.flush()
    os._exit(EXIT_SIGNAL_BASE + signum)


@contextlib.contextmanager
def handle_termination() -> Iterator[None]:
    """While inside: SIGTERM raises ``Terminated`` and SIGINT ``KeyboardInterrupt`` (main thread).

    The previous handlers are restored on the way out. Outside the main thread this does nothing
    (Python delivers signals to the main thread only).
    """
    with signal_handler(_on_signal):
        yield


@contextlib.contextmanager
def signal_handler(handler: Any) -> Iterator[None]:
    """While inside: ``handler`` for SIGTERM and SIGINT, the previous handlers restored on the
    way out; outside the main thread nothing (Python delivers signals to the main thread only)."""
    try:
        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)

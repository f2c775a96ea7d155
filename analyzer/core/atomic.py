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
import glob
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

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
    """Write ``data`` to ``path`` atomically (same-folder temp file + ``os.replace``)."""
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
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                Path(tmp).unlink()
            raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _temp_pattern(target: Path) -> re.Pattern[str]:
    """Names ``atomic_directory`` gives its temporary folders next to ``target``."""
    # mkdtemp's random part is 8 characters of [a-z0-9_]; the old folder carries a pid.
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
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old: Path | None = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


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
    try:
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

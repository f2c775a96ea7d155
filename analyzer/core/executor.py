"""Where a sweep's independent replays run: in this process, a local process pool, or Dask.

The what-if (strategies × seeds, the ``--search`` grid, the ``--autoscaler`` rows), the monthly
review's joint scenarios and the trace protocols are sweeps of independent tasks over one input
(a prepared snapshot or trace). They all go through one ``Session`` (``open_session``):

- ``--executor local`` (the default): sequential when one worker is asked for, else a
  ``ProcessPoolExecutor`` of ``--workers`` processes, each handed the caller's in-memory input
  once by its initializer (the snapshot is pickled once per process, never per task) — or a
  loader over it, which each process runs in its initializer (the what-if's preparation of
  the snapshot, in parallel as before);
- ``--executor dask://HOST:PORT``: a running ``dask.distributed`` scheduler. Its workers are on
  other machines, so they cannot be handed the caller's memory: every task carries a ``Shared``
  — a small, picklable *loader* (the snapshot's path and the settings that derive the input from
  it) and a key. A worker runs the loader the first time it sees the key and keeps the result
  for every later task with that key (``_MEMO``), so each worker reads the snapshot itself, once,
  from storage it shares with the caller, and the pickled task stays a few kilobytes.

A task function is ``fn(shared_value, *args)``, defined at module level (pickled by name).
Results come back in submission order, so every executor gives byte-identical outputs.
``distributed`` is an optional extra (``pip install 'analyzer[dask]'``), imported only here and
only for a ``dask://`` executor. docs/executor.md is the user's page.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from analyzer.core.errors import AnalyzerError, InputError

LOCAL = "local"
DASK_SCHEME = "dask://"
OPTION = "--executor"
INSTALL_HINT = "pip install 'analyzer[dask]'"

T = TypeVar("T")


@dataclass(frozen=True)
class ExecutorSpec:
    """Where tasks run: ``address`` None is this machine, else a Dask scheduler's host:port."""

    address: str | None = None

    @property
    def is_dask(self) -> bool:
        """True for a ``dask://`` executor."""
        return self.address is not None

    def __str__(self) -> str:
        return LOCAL if self.address is None else f"{DASK_SCHEME}{self.address}"


def parse_executor(text: str | None) -> ExecutorSpec:
    """``local`` or ``dask://HOST:PORT`` → the spec; ``InputError`` naming ``--executor``."""
    if text is None or text == LOCAL:
        return ExecutorSpec()
    if text.startswith(DASK_SCHEME):
        host, sep, port = text[len(DASK_SCHEME) :].rpartition(":")
        if sep and host and port.isdigit() and 0 < int(port) < 65536 and "/" not in host:
            return ExecutorSpec(f"{host}:{port}")
    raise InputError(
        f"{OPTION} {text!r}: use {LOCAL} or {DASK_SCHEME}HOST:PORT (a dask scheduler, "
        f"e.g. {DASK_SCHEME}scheduler:8786)"
    )


@dataclass(frozen=True)
class Shared(Generic[T]):
    """The input every task of a sweep reads: ``value`` in this process when the caller holds
    it, ``load()`` (small and picklable: a path and settings) wherever it is not. ``key`` names
    the input for the worker's memo: two sweeps over different inputs never share a key."""

    key: str
    load: Callable[[], T] | None = None
    value: T | None = None

    def __getstate__(self) -> dict[str, Any]:  # the value stays home: workers use load()
        return {"key": self.key, "load": self.load, "value": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, item in state.items():
            object.__setattr__(self, name, item)

    def get_fresh(self) -> T:
        """The input loaded now, outside the memo."""
        if self.load is None:
            raise AnalyzerError(f"{self.key}: neither a value nor a loader")
        return self.load()

    def get(self) -> T:
        """The input: the value held, else the worker's memo, else loaded (once per key)."""
        if self.value is not None:
            return self.value
        with _MEMO_LOCK:  # a Dask worker runs tasks in threads: load once, not once per thread
            if self.key not in _MEMO:
                if self.load is None:
                    raise AnalyzerError(f"{self.key}: no loader for a remote worker")
                _MEMO.clear()  # one sweep's input at a time: a worker's memory stays bounded
                _MEMO[self.key] = self.load()
            return _MEMO[self.key]  # type: ignore[no-any-return]


_MEMO: dict[str, Any] = {}
_MEMO_LOCK = threading.Lock()
_LOCAL_VALUE: list[Any] = []  # a local pool worker's input, set once by the initializer


class Handle(Protocol[T]):  # type: ignore[misc]
    """A submitted task: ``result()`` waits for it (a future of either executor)."""

    def result(self) -> T:
        """The task's result, once it has finished; its error re-raised."""
        ...


def _call(shared: Shared[Any], fn: Callable[..., T], *args: Any) -> T:
    return fn(shared.get(), *args)


def _init_local(value: Any, load: Callable[[], Any] | None) -> None:
    _LOCAL_VALUE[:] = [value if load is None else load()]


def _call_local(fn: Callable[..., T], *args: Any) -> T:
    return fn(_LOCAL_VALUE[0], *args)


class _Done(Generic[T]):
    """A task run inline (one local worker): already finished."""

    def __init__(self, value: T) -> None:
        self._value = value

    def result(self) -> T:
        return self._value


class Session(Generic[T]):
    """Submit ``fn(input, *args)`` tasks over one shared input; ``map`` keeps the order."""

    def __init__(self, shared: Shared[T], submit: Callable[..., Any], kind: str) -> None:
        self._shared = shared
        self._submit = submit
        self.kind = kind  # "inline", "local" or "dask"

    def submit(self, fn: Callable[..., Any], *args: Any) -> Handle[Any]:
        """Run one task; its handle's ``result()`` re-raises the task's error."""
        return self._submit(fn, *args)  # type: ignore[no-any-return]

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        on_done: Callable[[int, int], None] | None = None,
    ) -> list[Any]:
        """Every task's result in the order of ``tasks``; ``on_done(index, done)`` as each one
        finishes (in the order they finish)."""
        handles = [self.submit(fn, *args) for args in tasks]
        if on_done is not None:
            for done, index in enumerate(_finished(handles), start=1):
                on_done(index, done)
        return [h.result() for h in handles]


def _finished(handles: list[Any]) -> Iterator[int]:
    """Indexes of ``handles`` as they finish (a failure is raised on reaching it)."""
    if not handles or isinstance(handles[0], _Done):
        yield from range(len(handles))
        return
    index = {id(h): i for i, h in enumerate(handles)}
    if isinstance(handles[0], Future):
        finished: Any = as_completed(handles)
    else:  # distributed's futures
        from distributed import as_completed as dask_completed

        finished = dask_completed(handles)  # type: ignore[no-untyped-call]
    for handle in finished:
        handle.result()  # a failed task stops the sweep here
        yield index[id(handle)]


@contextmanager
def open_session(
    executor: ExecutorSpec, workers: int, shared: Shared[T], *, spawn: bool = False
) -> Iterator[Session[T]]:
    """A session on ``executor``: inline for one local worker, a local pool of ``workers``
    processes (started by ``spawn`` when the parent may hold threads a fork would copy
    half-way), or a client of the Dask scheduler (``workers`` is then the cluster's)."""
    if executor.address is not None:
        with _dask_client(executor.address) as client:

            def submit(fn: Callable[..., Any], *args: Any) -> Any:
                return client.submit(_call, shared, fn, *args, pure=False)

            yield Session(shared, submit, "dask")
        return
    if workers <= 1:
        # here, not through the worker memo: the caller's process keeps nothing after the sweep
        value = shared.value if shared.value is not None else shared.get_fresh()
        yield Session(shared, lambda fn, *args: _Done(fn(value, *args)), "inline")
        return
    context = multiprocessing.get_context("spawn") if spawn else None
    # a held value is pickled to each process once; else each process runs the loader itself
    # (in parallel: e.g. the what-if's preparation of the snapshot it is handed)
    initargs = (shared.value, None) if shared.value is not None else (None, shared.load)
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_local, initargs=initargs
    ) as pool:
        yield Session(shared, lambda fn, *args: pool.submit(_call_local, fn, *args), "local")


@contextmanager
def _dask_client(address: str) -> Iterator[Any]:
    """A connected ``distributed.Client``; one line when the extra or the scheduler is missing."""
    try:
        import dask.config
        from distributed import Client
    except ImportError:
        raise InputError(
            f"{OPTION} {DASK_SCHEME}{address}: dask.distributed is not installed; "
            f"{INSTALL_HINT} (or use {OPTION} {LOCAL})"
        ) from None
    # dask's own connect timeout (30 s unless DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT says)
    timeout = dask.config.get("distributed.comm.timeouts.connect")
    try:
        client = Client(f"tcp://{address}")  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as exc:
        raise AnalyzerError(
            f"{OPTION} {DASK_SCHEME}{address}: no dask scheduler answered in {timeout} "
            f"({type(exc).__name__}); start one ('dask scheduler') or check the address"
        ) from None
    try:
        # a scheduler with no worker accepts tasks and never runs them: the sweep would wait
        # forever, so the same timeout bounds the wait for a first worker
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise AnalyzerError(
                f"{OPTION} {DASK_SCHEME}{address}: the dask scheduler has no worker (none joined "
                f"in {timeout}); start one ('dask worker tcp://{address}') or check the address"
            ) from None
        yield client
    finally:
        client.close()  # type: ignore[no-untyped-call]

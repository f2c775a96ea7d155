"""``core.memory.gc_frozen`` (around ``replay``): the objects alive at the call are frozen for
the cycle collector only while the wrapped function runs, and a caller's own freeze is left
alone."""

from __future__ import annotations

import gc

import pytest

from analyzer.core.memory import gc_frozen


def test_frozen_during_the_call_only() -> None:
    assert gc.get_freeze_count() == 0
    seen: list[int] = []

    @gc_frozen()
    def run(x: int) -> int:
        seen.append(gc.get_freeze_count())
        return x + 1

    assert run(1) == 2
    assert seen[0] > 0  # this module's objects, at least, were alive at the call
    assert gc.get_freeze_count() == 0


def test_a_callers_freeze_stays_and_errors_unfreeze() -> None:
    @gc_frozen()
    def fails() -> None:
        assert gc.get_freeze_count() > 0
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fails()
    assert gc.get_freeze_count() == 0  # unfrozen although the call raised
    gc.freeze()
    try:
        before = gc.get_freeze_count()

        @gc_frozen()
        def inner() -> int:
            return gc.get_freeze_count()

        assert inner() == before
        assert gc.get_freeze_count() == before  # not unfrozen by the wrapper
    finally:
        gc.unfreeze()

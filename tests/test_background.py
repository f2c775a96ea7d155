"""``analyzer.cli.background.Background``: the demo's what-if runs in a forked child; its answer,
its exception or its death come back to the caller as a call in the caller would give them."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from analyzer.cli.background import Background
from analyzer.core.errors import AnalyzerError, InputError


def _pid_and_sum(values: list[int]) -> tuple[int, int]:
    return os.getpid(), sum(values)


def _refuse(name: str) -> None:
    raise InputError(f"--strategy: {name} is no preset")


def _die() -> None:
    os._exit(7)  # no answer sent: the pipe's end of file is all the caller sees


def _sleep() -> None:
    time.sleep(60)


def test_the_answer_comes_from_another_process() -> None:
    big = list(range(100_000))  # inherited by fork, not pickled
    pid, total = Background(_pid_and_sum, big).result()
    assert pid != os.getpid()
    assert total == 100_000 * 99_999 // 2


def test_an_error_is_raised_in_the_caller_with_its_type_and_message() -> None:
    with pytest.raises(InputError, match="--strategy: nope is no preset"):
        Background(_refuse, "nope").result()


def test_a_child_that_dies_is_one_error_naming_its_exit_code() -> None:
    with pytest.raises(AnalyzerError, match=r"exit code 7\) without an answer"):
        Background(_die).result()


def test_stop_ends_a_child_still_running() -> None:
    job = Background(_sleep)
    began = time.monotonic()
    job.stop()
    assert time.monotonic() - began < 30  # terminated, not waited for (it sleeps 60 s)
    assert not job._process.is_alive()


def _niceness_and_pool_niceness() -> tuple[int, int]:
    """This process's niceness, and that of a process it starts (a pool worker would be one)."""
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        inherited = pool.apply(os.nice, (0,))
    return os.nice(0), inherited


def test_nice_lowers_the_child_and_what_it_starts_but_not_the_caller() -> None:
    before = os.nice(0)
    child, grandchild = Background(_niceness_and_pool_niceness, nice=5).result()
    # the kernel caps niceness at 19: a caller already at 15 or more ends there
    assert child == grandchild == min(before + 5, 19)
    assert os.nice(0) == before  # the caller keeps its own priority

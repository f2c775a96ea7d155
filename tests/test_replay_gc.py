"""``replay`` runs with the cycle collector paused (``core.memory.gc_paused``): it is off
while the loop runs, on again after it, also when the replay raises; and the loop makes no
cyclic garbage, the fact that makes the pause safe (nothing waits for the collector: memory
stays as with it)."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from analyzer.replay.autoscale_loop import ClusterAutoscaler
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate


@pytest.fixture(scope="module")
def ca_run() -> Callable[[], Any]:
    """A small replay under cluster-autoscaler (its ``settle`` is called once per instant)."""
    cluster = generate(SyntheticSpec(seed=2, nodes=16, days=0.25, step=300))
    inp = prepare(cluster.snapshot)
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    settings = dataclasses.replace(
        parse_settings(None), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    auto, groups = with_node_groups(inp, settings)
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    return lambda: replay(auto, strategy, 2, autoscaler=(groups, settings))


@pytest.fixture
def enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _hooked(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    settle = ClusterAutoscaler.settle

    def wrapped(self: ClusterAutoscaler) -> None:
        hook()
        settle(self)

    monkeypatch.setattr(ClusterAutoscaler, "settle", wrapped)


def test_off_in_the_loop_on_after(
    ca_run: Callable[[], Any], enabled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    _hooked(monkeypatch, lambda: seen.append(gc.isenabled()))
    result = ca_run()
    assert result.autoscaler.passes > 0  # the loop ran (the hook saw its instants)
    assert len(seen) > 100 and not any(seen)
    assert gc.isenabled()


def test_on_again_after_an_error(
    ca_run: Callable[[], Any], enabled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom() -> None:
        raise RuntimeError("stop")

    _hooked(monkeypatch, boom)
    with pytest.raises(RuntimeError, match="stop"):
        ca_run()
    assert gc.isenabled()


def test_the_loop_makes_no_cyclic_garbage(
    ca_run: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a full collection at some instants of the loop finds nothing unreachable: what the loop
    # dropped so far was freed by reference counting (the replay's own state is alive then)
    found: list[int] = []
    calls = [0]

    def collect() -> None:
        calls[0] += 1
        if calls[0] % 50 == 0:
            found.append(gc.collect())

    _hooked(monkeypatch, collect)
    gc.collect()  # what earlier tests left
    ca_run()
    assert len(found) >= 3
    assert found == [0] * len(found)


def test_the_autoscalers_state_is_freed_as_the_replay_returns(
    ca_run: Callable[[], Any], enabled: None
) -> None:
    # no reference cycle holds cluster-autoscaler's state (as ``functools.partial(ratios,
    # self)`` kept on it did): reference counting frees it, nothing is left to the collector
    # (whose first run after the pause would otherwise walk and free all of it)
    collected: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["collected"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        result = ca_run()
        assert result.autoscaler.passes > 0
        del result
        gc.collect()
    finally:
        gc.callbacks.remove(count)
    assert collected and sum(collected) == 0

"""The replay under Karpenter with the consolidation simulation's exact shortcuts
(``analyzer.replay.karpenter_simulate``, ``KarpenterSettings.fast``) decides as the plain path.

Seeded generator clusters (small, half a day at a 5-minute step), Karpenter's defaults; both paths
run in the same process on the same input. The same decisions mean: the same nodes present over
the same spans, removed and added at the same instants, the same pods evicted, the same
disruption reasons at every pass, and every pod on the same node at the same time and wait. Each
seed must have consolidated something (nodes removed, pods evicted), else the simulations the
shortcuts change were barely run and the comparison would prove little.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.karpenter_setup import parse_karpenter, with_shapes
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate


def _run(seed: int, strategy: str, constraints: bool) -> tuple[Any, Any]:
    cluster = generate(
        # with constraints (spread, affinity) a try costs more: a quarter day is enough
        SyntheticSpec(
            seed=seed,
            nodes=16,
            days=0.25 if constraints else 0.5,
            step=300,
            pod_constraints=constraints,
        )
    )
    inp = prepare(cluster.snapshot)
    settings = parse_karpenter(None, 120 * 1_000_000_000)
    assert settings.fast  # the default is the fast path
    auto, pools = with_shapes(inp, settings, None)
    chosen = Strategy(strategy, load_strategy(strategy))
    fast = replay(auto, chosen, seed, autoscaler=(pools, settings))
    plain_settings = dataclasses.replace(settings, fast=False)
    plain = replay(auto, chosen, seed, autoscaler=(pools, plain_settings))
    return fast, plain


@pytest.mark.parametrize(
    ("seed", "strategy", "constraints"),
    [(1, "kube-default", False), (2, "most-allocated", False), (3, "kube-default", True)],
)
def test_the_fast_simulation_decides_as_the_plain_one(
    seed: int, strategy: str, constraints: bool
) -> None:
    fast, plain = _run(seed, strategy, constraints)
    a, b = fast.autoscaler, plain.autoscaler
    assert a.removed and a.evictions, "Karpenter consolidated nothing: the seed proves little"
    assert a.presence == b.presence
    assert a.removed == b.removed and a.added == b.added and a.scale_ups == b.scale_ups
    assert a.evictions == b.evictions
    assert a.reasons == b.reasons
    assert np.array_equal(fast.node, plain.node)
    assert np.array_equal(fast.placed_at, plain.placed_at)
    assert np.array_equal(fast.wait, plain.wait)

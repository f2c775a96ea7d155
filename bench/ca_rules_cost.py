"""What two of cluster-autoscaler's rules cost the replay (docs/benchmarks.md, session check 21).

The generator's cluster (``--nodes``, ``--days`` at a 5-minute step, seed 1) replayed without an
autoscaler and under CA (kube-default, every pool at minSize 0), with each rule on or off:

- ``frequent``: ``--frequent-loops-enabled`` (on by default at the default version, 1.36); off
  through the setting;
- ``budget``: deletions in progress taking from the scale-down budgets (``planner.select``'s
  ``in_progress``); off by a monkeypatch of the replay's ``select`` that passes none.

One line per mode: CPU seconds without and with CA, the ratio, nodes removed, passes run, answers
simulated and taken again.

    .venv/bin/python bench/ca_rules_cost.py [--nodes 2000] [--days 0.5]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from analyzer.replay import autoscale_scaledown
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

MODES = [("both", True, True), ("frequent off", False, True), ("budget off", True, False),
         ("neither", False, False)]  # fmt: skip


def main() -> None:
    """Run every mode (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--days", type=float, default=0.5)
    args = parser.parse_args()
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300))
    inp = prepare(cluster.snapshot)
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    bounds = {p or "default": GroupBounds(min_size=0) for p in pools}
    strategy = Strategy("kube-default", load_strategy("kube-default", None))
    real = autoscale_scaledown.select
    for name, frequent, budget in MODES:
        settings = dataclasses.replace(
            parse_settings(None), groups=bounds, frequent_loops=None if frequent else False
        )

        def none_in_progress(due: Any, cluster: Any, options: Any, _: Any = (0, 0)) -> Any:
            return real(due, cluster, options, (0, 0))

        autoscale_scaledown.select = real if budget else none_in_progress  # type: ignore[assignment]
        auto, groups = with_node_groups(inp, settings)
        t0 = time.process_time()
        replay(inp, strategy, 0)
        base = time.process_time() - t0
        t0 = time.process_time()
        result = replay(auto, strategy, 0, autoscaler=(groups, settings))
        with_ca = time.process_time() - t0
        record = result.autoscaler
        assert record is not None
        print(f"{name}: without {base:.2f} s, with CA {with_ca:.2f} s CPU "
              f"(x{with_ca / base:.1f}); removed {len(record.removed)}, passes {record.passes}, "
              f"simulated {record.simulated}, taken again {record.reused}", flush=True)  # fmt: skip
    autoscale_scaledown.select = real


if __name__ == "__main__":
    main()

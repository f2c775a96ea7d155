"""The joint scenarios under a node autoscaler: what it would release, per pool and scenario
(the monthly review's ``--autoscaler``, issue 25 item 3).

Without an autoscaler a scenario's "nodes removable" counts the nodes its replay left empty at
the pool's peak: nodes that *could* go. A cluster whose nodes a cluster-autoscaler drives keeps a
node until CA finds it under its utilisation threshold, drainable and unneeded for its unneeded
time, within the group's minSize. So each scenario is also replayed with CA driving the nodes
(``analyzer.whatif.autoscaled.run_autoscaled``: same requests, same window, same strategy —
"today" with today's scheduler, as CA cannot drive the observed placement), and per pool:

- ``nodes_released``: how many fewer nodes the pool runs under the autoscaler on average over the
  window — the data's node-hours minus the autoscaler's, over the window's hours
  (``nodes_released_mean``) — to the nearest whole node, never below 0 (a scenario under which
  CA added nodes releases none). Not a difference of peaks: CA starts from the nodes present at
  the window's start, so a cluster whose nodes never changed would show the same peak however
  many CA drained an hour later;
- ``node_hours`` / ``observed_node_hours``, ``peak_nodes`` / ``observed_peak_nodes``,
  ``nodes_added``, ``nodes_removed``, ``pods_evicted`` by scale-down.

``run_joint`` runs the four in its process pool beside the plain replays (one after another
with one worker), on the same prepared inputs.
"""

from __future__ import annotations

import math
from typing import Any

from analyzer.core.prices import Prices
from analyzer.replay.autoscale_setup import AutoscalerSettings
from analyzer.replay.engine import OBSERVED
from analyzer.replay.input import ReplayInput
from analyzer.replay.karpenter_setup import KarpenterSettings
from analyzer.whatif.autoscaled import AutoscaledOutcome, run_autoscaled
from analyzer.whatif.compare import resolve_strategy


def scenario_strategy(strategy: str, baseline: str) -> str:
    """The strategy a scenario replays under the autoscaler: today's scheduler for "today"."""
    return baseline if strategy == OBSERVED else strategy


def run_scenario(
    inp: ReplayInput,
    strategy: str,
    baseline: str,
    kubernetes_version: str | None,
    seed: int,
    autoscaling: AutoscalerSettings | KarpenterSettings,
    prices: Prices | None,
) -> AutoscaledOutcome:
    """One scenario replayed with the node autoscaler (cluster-autoscaler or Karpenter, by its
    settings) driving the nodes."""
    name = scenario_strategy(strategy, baseline)
    return run_autoscaled(
        inp, resolve_strategy(name, kubernetes_version), seed, autoscaling, prices
    )


def pool_release(outcome: AutoscaledOutcome, pool: str) -> dict[str, Any]:
    """``pool``'s figures under the autoscaler (module docstring); zeros for a pool it did not
    see (no node of the pool in the window)."""
    fig = outcome.pools.get(pool)
    times = outcome.series["time"]
    hours = (times.iloc[-1] - times.iloc[0]).total_seconds() / 3600 if len(times) > 1 else 0.0
    if fig is None or hours <= 0:
        return {
            "autoscaler": outcome.autoscaler, "nodes_released": 0, "nodes_released_mean": 0.0,
            "peak_nodes": 0,
            "observed_peak_nodes": 0, "node_hours": 0.0, "observed_node_hours": 0.0,
            "nodes_added": 0, "nodes_removed": 0, "pods_evicted": 0, "min_size": None,
            "ordered_for_evicted": 0,
        }  # fmt: skip
    mean = (fig.observed_node_hours - fig.node_hours) / hours
    return {
        "autoscaler": outcome.autoscaler,
        "nodes_released": max(0, math.floor(mean + 0.5)),  # half a node and more: one
        "nodes_released_mean": round(mean, 6),
        "peak_nodes": fig.peak_nodes,
        "observed_peak_nodes": fig.observed_peak_nodes,
        "node_hours": round(fig.node_hours, 6),
        "observed_node_hours": round(fig.observed_node_hours, 6),
        "nodes_added": fig.nodes_added,
        "nodes_removed": fig.nodes_removed,
        "pods_evicted": fig.pods_evicted,
        "min_size": fig.min_size,
        "ordered_for_evicted": fig.ordered_for_evicted,
    }

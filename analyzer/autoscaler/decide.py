"""One entry point for ``analyzer autoscale``: the scenario's autoscaler decides."""

from __future__ import annotations

from typing import Any

from analyzer.autoscaler.karpenter import consolidate, karpenter_json
from analyzer.autoscaler.planner import plan
from analyzer.autoscaler.result import ca_json
from analyzer.autoscaler.scenario import AutoscaleScenario


def decide(scenario: AutoscaleScenario) -> dict[str, Any]:
    """The JSON result for the scenario's autoscaler."""
    if scenario.autoscaler == "karpenter":
        return karpenter_json(scenario, consolidate(scenario))
    return ca_json(
        scenario,
        plan(
            scenario.cluster,
            scenario.profile,
            scenario.options,
            scenario.now,
            scenario.in_progress,
        ),
    )

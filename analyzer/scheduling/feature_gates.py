"""Feature gates that change what the modelled plugins do, their defaults per version.

A scenario's ``featureGates: {Name: true|false}`` overrides the default of its
``kubernetesVersion`` (as ``kube-scheduler --feature-gates`` does). Gates the analyzer does not
model are accepted with a note, and so is an override of a gate upstream locks to its default
from some version (``LOCKED``: kube-scheduler would refuse to start; the plugins' unit tests,
whose cases the project's vectors carry, set such a flag directly, which is what the override
does). Defaults (first minor where the gate is on by default, from the
Kubernetes feature-gate reference): NodeInclusionPolicyInPodTopologySpread 1.26 (beta),
MatchLabelKeysInPodTopologySpread 1.27 (beta), MinDomainsInPodTopologySpread 1.27 (beta; GA
1.30), TaintTolerationComparisonOperators alpha in 1.35 (off), PreferNominatedNode 1.22 (beta; GA
1.24: a pod's nominated node tried first, ``nominated_pods``), PodDisruptionConditions 1.26
(beta; GA 1.31: only a victim the scheduler preempted — its ``DisruptionTarget`` condition —
makes a preemptor wait, DefaultPreemption's ``PodEligibleToPreemptOthers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, plain
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.versions import KubeVersion

NODE_INCLUSION_POLICY = "NodeInclusionPolicyInPodTopologySpread"
MATCH_LABEL_KEYS = "MatchLabelKeysInPodTopologySpread"
MIN_DOMAINS = "MinDomainsInPodTopologySpread"
TAINT_COMPARISON = "TaintTolerationComparisonOperators"
PREFER_NOMINATED_NODE = "PreferNominatedNode"
POD_DISRUPTION_CONDITIONS = "PodDisruptionConditions"

# gate -> (major, minor) from which it is on by default; None: off in every modelled version
GATES: dict[str, tuple[int, int] | None] = {
    NODE_INCLUSION_POLICY: (1, 26),
    MATCH_LABEL_KEYS: (1, 27),
    MIN_DOMAINS: (1, 27),
    TAINT_COMPARISON: None,
    PREFER_NOMINATED_NODE: (1, 22),
    POD_DISRUPTION_CONDITIONS: (1, 26),
}


# gate -> (major, minor) from which it is GA and locked to its default (``LockToDefault`` in
# upstream's versioned feature list, pkg/features/kube_features.go)
LOCKED: dict[str, tuple[int, int]] = {
    PREFER_NOMINATED_NODE: (1, 24),
    MIN_DOMAINS: (1, 30),
    POD_DISRUPTION_CONDITIONS: (1, 31),
    NODE_INCLUSION_POLICY: (1, 33),
}


def default_gates(version: KubeVersion) -> dict[str, bool]:
    """Every modelled gate's default for ``version``."""
    here = (version.major, version.minor)
    return {name: since is not None and here >= since for name, since in GATES.items()}


def resolve_gates(
    version: KubeVersion, raw: Any, where: str = "featureGates"
) -> tuple[dict[str, bool], list[str]]:
    """Defaults for ``version`` with the scenario's overrides applied, and notes."""
    gates = default_gates(version)
    notes = []
    overrides: Mapping[str, Any] = mapping(raw, where)
    here = (version.major, version.minor)
    for name, value in overrides.items():
        if not isinstance(value, bool):
            raise InputError(f"{where}.{plain(name)}: {describe_value(value)} is not true or false")
        if name in GATES:
            locked = LOCKED.get(str(name))
            if locked is not None and here >= locked and value != gates[str(name)]:
                # kube-scheduler --feature-gates refuses this ("feature is locked"); upstream's
                # unit tests set the plugin's flag directly, as this override does
                notes.append(
                    f"feature gate {name} is locked to {str(gates[str(name)]).lower()} from "
                    f"{locked[0]}.{locked[1]} (a kube-scheduler {version.major}.{version.minor} refuses "
                    f"--feature-gates={name}={str(value).lower()}); applied here as the "
                    "plugins' flag, as upstream's unit tests set it"
                )
            gates[str(name)] = value
        else:
            notes.append(f"feature gate {name} does not change anything the analyzer models")
    return gates, notes

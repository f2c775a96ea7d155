"""Whether a node Karpenter would launch could take a pod, by the pod's node selection alone
(``nodeSelector`` and required node affinity), for ``analyzer autoscale``'s consolidation.

Upstream's scheduler (``pkg/controllers/provisioning/scheduling``) gives a pod a new NodeClaim
only where the NodePool's template and an instance type's requirements are compatible with the
pod's: a key the template's labels fix must take the pod's value; the well-known labels
(``pkg/apis/v1/labels.go`` ``WellKnownLabels``: nodepool, zone, region, instance type,
architecture, OS, capacity type, Windows build) are on every new node, with a value the cloud
provider's offerings choose — here any value, but the instance type one of the pool's
``instanceTypes``; a key the template's requirements ask for (``In``, ``Exists``) takes one of
their values; a key none of these sets is absent. A cloud provider's own labels (a ``karpenter.``
domain, e.g. ``karpenter.k8s.aws/instance-family``) are read as well-known too: the scenario
lists no offerings to check them against. A pod no new node could take gets only a scheduling
error upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from analyzer.scheduling.constraint_types import PodConstraints, Requirement

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
WELL_KNOWN = frozenset(
    {
        "karpenter.sh/nodepool",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        INSTANCE_TYPE,
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "karpenter.sh/capacity-type",
        "node.kubernetes.io/windows-build",
    }
)


def _well_known(key: str) -> bool:
    domain = key.split("/", 1)[0] if "/" in key else ""
    return key in WELL_KNOWN or domain.startswith("karpenter.") or ".karpenter." in domain


def _some_value(reqs: Sequence[Requirement], values: Sequence[str] | None) -> bool:
    """Whether a present label with one of ``values`` (None: any value) satisfies ``reqs``."""
    allowed: set[str] | None = None if values is None else set(values)
    banned: set[str] = set()
    for r in reqs:
        if r.operator == "DoesNotExist":
            return False
        if r.operator == "In":
            allowed = set(r.values) if allowed is None else allowed & set(r.values)
        elif r.operator == "NotIn":
            banned |= set(r.values)
        # Exists: any value; Gt/Lt: a number the offerings may have (not checked)
    return allowed is None or bool(allowed - banned)


def _term_launchable(
    reqs: Sequence[Requirement],
    labels: Mapping[str, str],
    types: Sequence[str],
    pool: Sequence[Requirement],
) -> bool:
    for key in {r.key for r in reqs}:
        on_key = [r for r in reqs if r.key == key]
        required = [r for r in pool if r.key == key]  # the template's own requirements
        if key in labels:  # the template fixes it
            if not all(r.matches({key: labels[key]}) for r in on_key):
                return False
        elif key == INSTANCE_TYPE:
            if not _some_value([*on_key, *required], types):
                return False
        elif _well_known(key) or any(r.operator in ("In", "Exists") for r in required):
            if not _some_value([*on_key, *required], None):
                return False
        elif not all(r.matches({}) for r in on_key):  # absent on every new node
            return False
    return True


def launchable(
    constraints: PodConstraints,
    labels: Mapping[str, str],
    types: Sequence[str],
    pool: Sequence[Requirement] = (),
) -> bool:
    """Whether some new node of the pool (template ``labels`` and requirements ``pool``,
    instance types ``types``) meets ``constraints``' nodeSelector and one of its required
    node-affinity terms (module docstring)."""
    selector = [Requirement(k, "In", (v,)) for k, v in constraints.node_selector]
    terms = constraints.required_terms
    if terms is None:
        return _term_launchable(selector, labels, types, pool)
    return any(term and _term_launchable([*selector, *term], labels, types, pool) for term in terms)

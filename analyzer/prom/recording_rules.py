"""kubernetes-mixin recording rules: found with one cheap query, used as a cross-check only.

Many clusters run the kubernetes-mixin rules, which record the cpu and memory requests of the
pods that are Pending or Running, summed per namespace
(``namespace_cpu:kube_pod_container_resource_requests:sum``, ``namespace_memory:...``). A
long backfill asks once, at the end of its range, whether the cpu rule has any series; when it
has, the same instant is read both from the rule and from the raw expression the mixin records
(requests joined to the pods' phase), and the two cluster totals are printed side by side.

Why only a cross-check: the figures a day records are computed per pod (pools, workloads,
time-weighted means), which a per-namespace total cannot give, so the rule never replaces a
raw query; what it tells is whether the server's rules agree with what analyzer reads (a rule
on another job label, or a stale rule group, shows as a difference). Two instant queries per
run, whatever the range's length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyzer.prom.client import PromClient

CPU_RULE = "namespace_cpu:kube_pod_container_resource_requests:sum"
MEMORY_RULE = "namespace_memory:kube_pod_container_resource_requests:sum"
# What the mixin's rule records (its "job" matcher left out: analyzer reads any job's series).
RAW_CPU = (
    'kube_pod_container_resource_requests{resource="cpu"} * on(namespace, pod) group_left() '
    'max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)'
)
# A relative difference below this is rounding (sums taken in a different order), not a mismatch.
TOLERANCE = 1e-6


@dataclass(frozen=True)
class RuleCheck:
    """The cpu requests total at ``at`` read from the rule and from the raw series (cores)."""

    at: float
    rule_cores: float
    raw_cores: float | None  # None: the raw expression returned nothing at that instant

    @property
    def agrees(self) -> bool:
        """The two totals are equal to rounding."""
        if self.raw_cores is None:
            return False
        scale = max(abs(self.rule_cores), abs(self.raw_cores), 1.0)
        return abs(self.rule_cores - self.raw_cores) <= TOLERANCE * scale

    def line(self) -> str:
        """One stdout line naming the rule, both totals and whether they agree."""
        raw = "no data" if self.raw_cores is None else f"{self.raw_cores:.3f} cores"
        verdict = "agree" if self.agrees else "DIFFER (the rule is not what analyzer reads)"
        return (
            f"recording rule {CPU_RULE}: present; cpu requests at the range's end "
            f"{self.rule_cores:.3f} cores (rule) vs {raw} (raw series): {verdict}"
        )


def _total(client: PromClient, expr: str, at: float) -> float | None:
    series = client.query(f"sum({expr})", at, what="recording-rule check")
    values = [float(s.values[-1]) for s in series if len(s.values)]
    return values[0] if values and math.isfinite(values[0]) else None


def check_cpu_rule(client: PromClient, at: float) -> RuleCheck | None:
    """The cross-check at unix time ``at``; None when the rule has no series there."""
    rule = _total(client, CPU_RULE, at)
    if rule is None:
        return None
    return RuleCheck(at=at, rule_cores=rule, raw_cores=_total(client, RAW_CPU, at))

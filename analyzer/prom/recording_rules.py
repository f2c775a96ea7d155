"""kubernetes-mixin recording rules: found with cheap queries, used as a cross-check only.

Many clusters run the kubernetes-mixin rules, which record the cpu and memory requests of the
pods that are Pending or Running, summed per namespace
(``namespace_cpu:kube_pod_container_resource_requests:sum``, ``namespace_memory:...``). A
long backfill asks once, at the end of its range, whether each of the two rules has any series;
for each that has, the same instant is read both from the rule and from the raw expression the
mixin records (requests joined to the pods' phase), and the two cluster totals are printed side
by side (cores for cpu, GiB for memory).

Why only a cross-check: the figures a day records are computed per pod (pools, workloads,
time-weighted means), which a per-namespace total cannot give, so the rule never replaces a
raw query; what it tells is whether the server's rules agree with what analyzer reads (a rule
on another job label, or a stale rule group, shows as a difference). At most four instant
queries per run, whatever the range's length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyzer.prom.client import PromClient

CPU_RULE = "namespace_cpu:kube_pod_container_resource_requests:sum"
MEMORY_RULE = "namespace_memory:kube_pod_container_resource_requests:sum"
# What the mixin's rules record (its "job" matcher left out: analyzer reads any job's series).
_PHASE = (
    " * on(namespace, pod) group_left() max by (namespace, pod) "
    '(kube_pod_status_phase{phase=~"Pending|Running"} == 1)'
)
RAW_CPU = 'kube_pod_container_resource_requests{resource="cpu"}' + _PHASE
RAW_MEMORY = 'kube_pod_container_resource_requests{resource="memory"}' + _PHASE
# A relative difference below this is rounding (sums taken in a different order), not a mismatch.
TOLERANCE = 1e-6
GIB = 2.0**30


@dataclass(frozen=True)
class RequestRule:
    """One mixin rule: its name, the raw expression it records, and the unit it is shown in."""

    resource: str
    name: str
    raw: str
    unit: str
    scale: float  # the rule's unit (cores, bytes) per shown unit


CPU = RequestRule("cpu", CPU_RULE, RAW_CPU, "cores", 1.0)
MEMORY = RequestRule("memory", MEMORY_RULE, RAW_MEMORY, "GiB", GIB)
RULES = (CPU, MEMORY)


@dataclass(frozen=True)
class RuleCheck:
    """A rule's requests total at ``at`` read from the rule and from the raw series (the rule's
    own unit: cores, bytes)."""

    at: float
    rule_total: float
    raw_total: float | None  # None: the raw expression returned nothing at that instant
    rule: RequestRule = CPU

    @property
    def agrees(self) -> bool:
        """The two totals are equal to rounding."""
        if self.raw_total is None:
            return False
        scale = max(abs(self.rule_total), abs(self.raw_total), 1.0)
        return abs(self.rule_total - self.raw_total) <= TOLERANCE * scale

    def line(self) -> str:
        """One stdout line naming the rule, both totals and whether they agree."""
        unit, per = self.rule.unit, self.rule.scale
        raw = "no data" if self.raw_total is None else f"{self.raw_total / per:.3f} {unit}"
        verdict = "agree" if self.agrees else "DIFFER (the rule is not what analyzer reads)"
        return (
            f"recording rule {self.rule.name}: present; {self.rule.resource} requests at the "
            f"range's end {self.rule_total / per:.3f} {unit} (rule) vs {raw} (raw series): "
            f"{verdict}"
        )


def _total(client: PromClient, expr: str, at: float) -> float | None:
    series = client.query(f"sum({expr})", at, what="recording-rule check")
    values = [float(s.values[-1]) for s in series if len(s.values)]
    return values[0] if values and math.isfinite(values[0]) else None


def check_rule(client: PromClient, rule: RequestRule, at: float) -> RuleCheck | None:
    """The cross-check of ``rule`` at unix time ``at``; None when it has no series there."""
    total = _total(client, rule.name, at)
    if total is None:
        return None
    return RuleCheck(at=at, rule_total=total, raw_total=_total(client, rule.raw, at), rule=rule)

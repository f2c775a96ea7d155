"""``kubernetesVersion``: which upstream formulas apply (research/kube-scoring.md §10).

| version | effect here |
|---|---|
| ≤ 1.16 | legacy priority functions on a 0–10 scale (MaxPriority 10): Least/Most over cpu+memory `(a+b)/2`, Balanced `1-|Δf|`, RTCR shape scores used as-is |
| 1.17–1.21 | 0–100 scale; RTCR utilisation rounds **up**; Most gives 0 above capacity; Balanced `1-|Δf|` |
| 1.22 | RTCR utilisation floors; Most caps at capacity; Balanced = 1 − std over configured resources |
| < 1.23 | Balanced reads the non-zero (100m/200Mi defaulted) requests; from 1.23 the real requests |
| 1.23–1.35 | Balanced = int((1 − std) × 100) of the state with the pod |
| ≥ 1.36 | Balanced = 50 + (50 + with − without) / 2 (PR #135573) — the default |
| < 1.20 | preemption dry-runs every potential node; from 1.20 (PR #94814) a random offset and ``max(10 %, 100)`` candidates (DefaultPreemptionArgs) |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.core.errors import InputError
from analyzer.core.structured import preview

DEFAULT_VERSION = "1.36"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes minor version and the formula switches it implies."""

    major: int
    minor: int

    @property
    def legacy_scale(self) -> bool:
        """≤ 1.16: priority functions scored 0–10."""
        return (self.major, self.minor) <= (1, 16)

    @property
    def max_node_score(self) -> int:
        """MaxNodeScore (100) or the legacy MaxPriority (10)."""
        return 10 if self.legacy_scale else 100

    @property
    def rtcr_ceil_utilisation(self) -> bool:
        """Before 1.22 RTCR utilisation was ``100 - (cap-req)*100//cap`` (rounds up)."""
        return (self.major, self.minor) < (1, 22)

    @property
    def most_allocated_zero_over_capacity(self) -> bool:
        """Before 1.22 (PR #102925) MostAllocated scored 0 when requests exceeded capacity."""
        return (self.major, self.minor) < (1, 22)

    @property
    def balanced_two_resource_legacy(self) -> bool:
        """Before 1.22 Balanced was ``1 - |f_cpu - f_mem|`` and 0 once a fraction reached 1."""
        return (self.major, self.minor) < (1, 22)

    @property
    def balanced_uses_nonzero(self) -> bool:
        """Before ≈1.23 Balanced read the non-zero (defaulted) cpu/memory requests."""
        return (self.major, self.minor) < (1, 23)

    @property
    def balanced_delta(self) -> bool:
        """1.36+: Balanced scores the change in balance (PR #135573)."""
        return (self.major, self.minor) >= (1, 36)

    @property
    def ca_least_waste_default(self) -> bool:
        """cluster-autoscaler 1.33+ (commit f8a68efe63): ``--expander`` defaults to
        ``least-waste``; before, to ``random``."""
        return (self.major, self.minor) >= (1, 33)

    @property
    def ca_frequent_loops_default(self) -> bool:
        """cluster-autoscaler 1.35+ (commit 7b9a707f5f): ``--frequent-loops-enabled`` defaults to
        true: the next loop starts at once after a scale-up or a scale-down deletion, or when a
        pod becomes unschedulable (``loop/trigger.go``); the replay's loop follows it
        (``analyzer.replay.autoscale_settle.trigger``) unless the config sets the flag."""
        return (self.major, self.minor) >= (1, 35)

    @property
    def ca_system_pod_timeout(self) -> bool:
        """cluster-autoscaler 1.33+ (commit 696af986ed): a kube-system pod no PDB covers is
        drainable once older than ``--blocking-system-pod-distruption-timeout``; before, it
        always blocked a drain."""
        return (self.major, self.minor) >= (1, 33)

    @property
    def preemption_sampling(self) -> bool:
        """1.20+ (PR #94814): preemption gathers candidates from a random offset over the
        potential nodes and stops at ``max(n · pct / 100, abs)``; before, every node was tried."""
        return (self.major, self.minor) >= (1, 20)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def parse_version(text: str | float | None, *, field: str = "kubernetesVersion") -> KubeVersion:
    """Parse ``"1.16"``, ``"v1.30.2"`` (default 1.36 when None)."""
    if isinstance(text, float):
        # YAML reads an unquoted 1.30 as the number 1.3; refuse rather than guess
        raise InputError(f'{field}: {preview(text)} is a number; quote the version, e.g. "1.30"')
    raw = DEFAULT_VERSION if text is None else str(text).strip()
    match = _VERSION.match(raw)
    if not match:
        raise InputError(
            f"{field}: {preview(text)} is not a Kubernetes version (expected e.g. 1.30)"
        )
    version = KubeVersion(int(match.group(1)), int(match.group(2)))
    if version.major != 1 or version.minor < 10:
        raise InputError(
            f"{field}: {preview(text)} is not supported (use 1.10 .. 1.36 or newer 1.x)"
        )
    return version


def or_default(version: KubeVersion | None) -> KubeVersion:
    """``version``, or the default version where there is none (a profile built by hand)."""
    return version if version is not None else parse_version(None)

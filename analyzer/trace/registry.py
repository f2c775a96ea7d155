"""Name → placement policy for trace replays: the paper's six policies and four kube strategies.

The paper's policies are also core presets (``fgd``, ``bestfit``, ... in
``analyzer.scheduling.strategies``, on the core's per-GPU device state, same math in
``analyzer.scheduling.gpu.scores``); the trace replays keep this small registry (``register``
/ ``get_policy`` / ``available``) for the artifact's tie rule and the trace protocols. It also
offers the core's presets ``kube-default``, ``most-allocated`` and ``rtcr-binpack``, evaluated by the core's
own plugins (``analyzer.trace.core_profiles``). An unknown name raises ``InputError`` listing the
valid names.
"""

from __future__ import annotations

from analyzer.core.errors import InputError
from analyzer.trace.core_profiles import CORE_PRESETS, core_policy
from analyzer.trace.kube import KUBE_STRATEGIES
from analyzer.trace.policies import POLICIES, PolicyFn

PAPER_POLICIES = tuple(POLICIES)
KUBE_POLICIES = tuple(KUBE_STRATEGIES)
_REGISTRY: dict[str, PolicyFn] = {
    **POLICIES,
    **KUBE_STRATEGIES,
    **{preset: core_policy(preset) for preset in CORE_PRESETS},
}


def register(name: str, policy: PolicyFn) -> None:
    """Add a policy (e.g. a user plugin); re-registering a name replaces it."""
    _REGISTRY[name] = policy


def available() -> list[str]:
    """Registered policy names: the paper's six first, then the kube strategies, then others."""
    return list(_REGISTRY)


def get_policy(name: str) -> PolicyFn:
    """The policy called ``name`` (case-insensitive)."""
    for key, policy in _REGISTRY.items():
        if key.lower() == name.lower():
            return policy
    raise InputError(f"--policy {name!r}: unknown; choose from {', '.join(available())}")


def canonical_name(name: str) -> str:
    """The registered spelling of ``name``."""
    get_policy(name)
    return next(key for key in _REGISTRY if key.lower() == name.lower())

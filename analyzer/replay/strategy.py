"""A named placement strategy for the replay (``analyzer.replay.engine``): a scheduler profile, or
the baseline ``observed`` that keeps every pod on its real node."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.scheduling.framework import Profile

OBSERVED = "observed"


@dataclass(frozen=True)
class Strategy:
    """A named placement strategy: a scheduler profile, or ``None`` for ``observed``."""

    name: str
    profile: Profile | None = None
    source: str = ""  # preset name or the configuration file it came from

    @property
    def observed(self) -> bool:
        """True for the baseline that keeps every pod on its real node."""
        return self.profile is None


OBSERVED_STRATEGY = Strategy(OBSERVED, None, "built-in")

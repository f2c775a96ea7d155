"""FGD candidate scores for trace replays: the scheduling core's ``fgd_candidates`` (one copy)."""

from __future__ import annotations

from analyzer.scheduling.fgd_score import fgd_candidates

__all__ = ["fgd_candidates"]

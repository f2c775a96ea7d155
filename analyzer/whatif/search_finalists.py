"""``whatif --search --autoscaler karpenter``: the grid on fixed nodes, then its finalists
replayed under Karpenter and ranked there.

Karpenter's replay simulates consolidation at every disruption poll: about 200× the CPU of the
plain replay on a 500-node day (docs/benchmarks.md, "karpenter"). Replaying every grid point
under it, as the search does under cluster-autoscaler, would multiply a grid of 250 by that. So
the search runs in two rounds:

1. every configuration and baseline replayed on the fixed nodes (``run_whatif`` without an
   autoscaler, its executor and progress as ever) and judged as without ``--autoscaler``;
2. the **finalists** — every baseline and the ``FINALISTS`` best searched configurations of
   round 1 (the recommended one first, then the eligible ones, then those on the Pareto front,
   each by capacity released; ties in grid order) — replayed again, on the same executor, with
   Karpenter driving the nodes (``run_whatif`` with ``--autoscaler karpenter``).

The front and the recommendation are then those of the finalists under Karpenter
(``search_autoscaled``); the other rows keep their fixed-node figures, off the front, with no
Karpenter figures (the page leaves those cells empty). The Karpenter replays are bounded by
``(FINALISTS + baselines) × seeds`` whatever the grid's size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from analyzer.core.snapshot import Snapshot
from analyzer.whatif.compare import run_whatif
from analyzer.whatif.search import (
    SearchResult,
    SearchSettings,
    grid_files,
    plural,
    run_search,
    search_result,
    search_settings,
)
from analyzer.whatif.search_rule import SearchRow

# Searched configurations replayed under Karpenter besides the baselines: the search's answer is
# one configuration, and round 1 already ranked them; three leave room for the fixed-node best to
# lose under consolidation without tripling the slowest part of the search.
FINALISTS = 3


def finalists(rows: Sequence[SearchRow], count: int = FINALISTS) -> list[SearchRow]:
    """The baselines and the ``count`` best searched rows of a fixed-node ranking (module
    docstring), in that order."""
    searched = [r for r in rows if r.kind == "searched"]
    best = sorted(
        searched,
        key=lambda r: (not r.recommended, not r.eligible, not r.on_front, -r.released,
                       searched.index(r)),
    )  # fmt: skip
    return [r for r in rows if r.kind == "baseline"] + best[:count]


def run_finalists(
    snapshot: Snapshot,
    settings: SearchSettings,
    progress: Callable[[str, int, int], None] | None = None,
    source: Path | None = None,
    count: int = FINALISTS,
) -> SearchResult:
    """The search under Karpenter in two rounds (module docstring); ``count``: the searched
    configurations among the finalists (``FINALISTS``; the benchmark raises it to all)."""
    fixed = replace(settings, autoscaler="none")
    with grid_files(settings.grid.configs()) as files:
        first = run_whatif(snapshot, search_settings(fixed, list(files)), progress, source)
        ranked = search_result(first, files, fixed, snapshot)
        chosen = finalists(ranked.rows, count)
        names = {r.name for r in chosen}
        paths = [path for path, config in files.items() if config.name in names]
        # observed and the finalists' plain replays run again beside the Karpenter ones: a
        # fraction of a per cent of their cost, and run_whatif stays the one way to replay
        second = run_whatif(snapshot, search_settings(settings, paths), None, source)
        both = replace(first, autoscaler=settings.autoscaler, autoscaled=second.autoscaled)
        result = search_result(both, files, settings, snapshot)
    searched = sum(r.kind == "searched" for r in ranked.rows)
    picked = sum(r.kind == "searched" for r in chosen)
    result.finalists = [r.name for r in chosen]
    lead = f"Ranked on the replay under {settings.autoscaler} ("
    if result.sentence.startswith(lead):  # the sentence says the ranking is the finalists'
        result.sentence = (
            f"Ranked on the replay under {settings.autoscaler} of the "
            f"{plural(len(chosen), 'finalist')} (" + result.sentence[len(lead) :]
        )
    result.notes.insert(
        0,
        f"Under {settings.autoscaler} only the finalists were replayed and ranked: the "
        f"baselines and the {plural(picked, 'best configuration')} of the "
        f"{plural(searched, 'configuration')} searched on fixed nodes (its replay is about 200× "
        "slower; docs/whatif.md). The other rows show their fixed-node figures, off the front.",
    )
    return result


def run_any(
    snapshot: Snapshot,
    settings: SearchSettings,
    progress: Callable[[str, int, int], None] | None = None,
    source: Path | None = None,
) -> SearchResult:
    """The search as ``whatif --search`` runs it: the finalists only under Karpenter
    (``run_finalists``), every row under any other autoscaler or none (``run_search``)."""
    if settings.autoscaler == "karpenter":
        return run_finalists(snapshot, settings, progress, source)
    return run_search(snapshot, settings, progress, source)

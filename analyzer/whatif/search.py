"""``analyzer whatif --search``: replay a grid of configurations, keep the Pareto front, recommend.

Every configuration of the grid (``search_grid.py``) and every baseline preset (default
``kube-default``) is replayed and evaluated by the what-if comparison itself (``run_whatif``: its
process pool, ``replay`` and ``evaluate``), with ``observed`` as the reference. Each row is then
judged on three figures: **capacity released** vs observed (mean over seeds; money when
``--prices`` prices every pool, else the mean of the core-hour and GiB-hour shares released:
``analyzer.whatif.capacity``; more is better), **threshold violations** and **waiting pods**
(worst seed for both, as the what-if recommendation reads them; fewer is better). Peak active
nodes (mean over seeds) stand beside.

- **Pareto front**: a configuration is on the front when no other configuration is at least as good
  on all three figures and strictly better on one (``observed`` is the reference, not a candidate).
- **Recommendation**: among the configurations with no more violations, waiting pods and
  never-placed pods than observed that release capacity and are no pool-mix shift (peak nodes
  down 2 % or more with less than 1 % of core-hours and of GiB-hours released), the one that
  releases the most (ties: fewer violations, then fewer waiting pods, then fewer peak nodes, then
  grid order). Its KubeSchedulerConfiguration is what the page prints and the report writes.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.executor import ExecutorSpec
from analyzer.core.prices import Prices
from analyzer.core.snapshot import Snapshot
from analyzer.replay.autoscale_setup import AutoscalerSettings
from analyzer.replay.engine import OBSERVED, OBSERVED_STRATEGY, Strategy
from analyzer.replay.karpenter_setup import KarpenterSettings
from analyzer.scheduling.cluster_version import ClusterVersion
from analyzer.scheduling.strategies import STRATEGIES, document_profile
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.autoscaled import all_held
from analyzer.whatif.capacity import Capacity, released
from analyzer.whatif.compare import (
    UNITS,
    StrategyComparison,
    WhatIfResult,
    WhatIfSettings,
    resolve_strategy,
    run_whatif,
)
from analyzer.whatif.notes import whatif_notes
from analyzer.whatif.search_autoscaled import attach
from analyzer.whatif.search_autoscaled import rule as autoscaled_rule
from analyzer.whatif.search_grid import DEFAULT_GRID, SearchConfig, SearchGrid, scheduler_yaml
from analyzer.whatif.search_rule import FRONT_RULE, RULE, SearchRow, pareto_front, recommend
from analyzer.whatif.verdict import recommend as compare_recommend

HREF = "search.html"
# Replays (configurations and baselines × seeds) a search runs without --max-configurations:
# on this project's 2-core machine a 500-node day replays at ≈ 4.2 s each with 2 workers
# (docs/benchmarks.md, search), so 250 is ≈ 17 min there (≈ 2 min on a 20-node snapshot);
# a grid of thousands is a mistyped axis, refused before it runs for hours.
DEFAULT_MAX_CONFIGURATIONS = 250


@dataclass(frozen=True)
class SearchSettings:
    """What to search: the grid, seeds, scheduler version, thresholds, pool size."""

    grid: SearchGrid = DEFAULT_GRID
    seeds: int = 1
    kubernetes_version: str | None = None
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    workers: int | None = None
    prices: Prices | None = None  # ``--prices``: capacity released in money too
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # ``--executor``
    # ``--autoscaler``: every row also replayed under it and ranked on that (search_autoscaled)
    autoscaler: str = "none"
    autoscaling: AutoscalerSettings | KarpenterSettings = field(default_factory=AutoscalerSettings)


@dataclass
class SearchResult:
    """The searched rows (observed first), the front, the recommendation and its YAML."""

    source: str
    start: str
    end: str
    grid: SearchGrid
    seeds: int
    thresholds: ThresholdConfig
    rows: list[SearchRow]
    recommended: str | None
    sentence: str
    notes: list[str] = field(default_factory=list)
    version: ClusterVersion | None = None  # the Kubernetes version the replays used
    prices: dict[str, Any] | None = None  # the what-if's ``prices`` block (``--prices``)
    autoscaler: str = "none"  # the rows' ``autoscaled`` figures and the ranking are under it
    autoscaler_choice: dict[str, str] | None = None  # ``--autoscaler auto``: which and why
    # under Karpenter only these rows were replayed under it and ranked (search_finalists)
    finalists: list[str] | None = None

    @property
    def observed(self) -> SearchRow:
        """The reference row."""
        return self.rows[0]

    def best(self) -> SearchRow | None:
        """The recommended row, if any."""
        return next((r for r in self.rows if r.recommended), None)

    def recommended_yaml(self) -> str | None:
        """The recommended configuration as a KubeSchedulerConfiguration YAML document."""
        best = self.best()
        if best is None or best.document is None:
            return None
        return scheduler_yaml(best.document, best.name)

    def question(self) -> str:
        """The question the search answers, naming what it compared (not the what-if's presets)."""
        candidates = self.rows[1:]
        baselines = [r.name for r in candidates if r.kind == "baseline"]
        searched = sum(r.kind == "searched" for r in candidates)
        parts = [*baselines, f"{searched} grid configuration{'s' if searched != 1 else ''}"]
        listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
        what = (
            "capacity of active nodes"
            if self.autoscaler == "none"
            else f"node capacity under {self.autoscaler}"
        )
        return (
            f"Which of the {len(candidates)} configurations searched ({listed}) would have "
            f"released the most {what} without more threshold violations, "
            "waiting or never-placed pods than observed?"
        )

    def first_screen(self) -> dict[str, Any]:
        """What the what-if page shows as its first card: the question, the answer, the link and
        the names of the configurations searched (``searched``: the page says when its own
        verdict names a strategy that was not among them)."""
        best = self.best()
        return {
            "question": self.question(),
            "sentence": self.sentence,
            "href": HREF,
            "searched": [r.name for r in self.rows[1:]],
            "recommended": None if best is None else best.name,
        }

    def to_dict(self) -> dict[str, Any]:
        """Every number of the search, JSON-ready."""
        return {
            "source": self.source,
            "kubernetes_version": self.version.to_dict() if self.version else None,
            "start": self.start,
            "end": self.end,
            "seeds": self.seeds,
            "grid": self.grid.to_dict(),
            "thresholds": self.thresholds.to_dict(),
            "rule": RULE if self.autoscaler == "none" else autoscaled_rule(self.autoscaler),
            "ranked_on": "fixed nodes" if self.autoscaler == "none" else self.autoscaler,
            **({} if self.finalists is None else {"finalists": list(self.finalists)}),
            **(
                {}
                if self.autoscaler_choice is None
                else {"autoscaler_choice": dict(self.autoscaler_choice)}
            ),
            "front_rule": FRONT_RULE,
            "units": {k: v for k, v in UNITS.items() if "released" in k},
            "prices": self.prices,
            "recommended": self.recommended,
            "sentence": self.sentence,
            "rows": [r.to_dict() for r in self.rows],
            "scheduler_yaml": self.recommended_yaml(),
            "notes": list(self.notes),
        }


def _row(c: StrategyComparison, kind: str, name: str, config: SearchConfig | None) -> SearchRow:
    parameters: dict[str, Any] = {
        "scoring": c.name if kind == "baseline" else "as observed",
        "resource_weights": None,
        "loadaware_thresholds": None,
        "loadaware_weight": 0,
    }
    document: dict[str, Any] | None = None
    if config is not None:
        parameters, document = config.parameters(), config.document()
    elif kind == "baseline" and c.name in STRATEGIES:
        document = dict(STRATEGIES.get(c.name).document)
    return SearchRow(
        name=name,
        kind=kind,
        parameters=parameters,
        peak_nodes=c.stat("active_nodes_peak")["mean"],
        mean_nodes=c.stat("active_nodes_mean")["mean"],
        violations=c.stat("violations")["max"],
        waited=c.stat("waited")["max"],
        never_placed=c.stat("never_placed")["max"],
        node_hours_released=c.stat("node_hours_released")["mean"],
        document=document,
        core_hours_released=c.stat("core_hours_released")["mean"],
        gib_hours_released=c.stat("gib_hours_released")["mean"],
        core_hours_released_pct=c.stat("core_hours_released_pct")["mean"],
        gib_hours_released_pct=c.stat("gib_hours_released_pct")["mean"],
        cost_released=c.stat("cost_released")["mean"] if c.priced else None,
        active_core_hours=c.stat("active_core_hours")["mean"],
        active_gib_hours=c.stat("active_gib_hours")["mean"],
    )


@contextlib.contextmanager
def grid_files(configs: Sequence[SearchConfig]) -> Iterator[dict[str, SearchConfig]]:
    """One KubeSchedulerConfiguration file per configuration, in a temporary folder, by path.

    The what-if comparison takes presets or configuration files, so the paths are strategies.
    """
    with tempfile.TemporaryDirectory(prefix="analyzer-search-") as folder:
        files = {}
        for i, config in enumerate(configs):
            path = Path(folder) / f"config-{i:03d}.yaml"
            path.write_text(config.yaml())
            files[str(path)] = config
        yield files


def search_result(
    whatif: WhatIfResult,
    files: Mapping[str, SearchConfig],
    settings: SearchSettings,
    snapshot: Snapshot,
) -> SearchResult:
    """The search's rows from a comparison of ``snapshot`` that replayed the grid's files and
    baselines (strategies the comparison ran besides those are left out). Its notes name its
    own rows, a configuration by its label (``SearchConfig.name``), never by its file."""
    rows = []
    shown: list[Strategy] = []
    version = whatif.kubernetes_version or settings.kubernetes_version
    for c in whatif.strategies:
        if c.name == OBSERVED:
            rows.append(_row(c, "observed", OBSERVED, None))
            shown.append(OBSERVED_STRATEGY)
        elif c.name in files:
            config = files[c.name]
            rows.append(_row(c, "searched", config.name, config))
            profile = document_profile(config.document(), config.name, version)
            shown.append(Strategy(config.name, profile, "file"))
        elif c.name in settings.grid.baselines:
            rows.append(_row(c, "baseline", c.name, None))
            shown.append(resolve_strategy(c.name, version))
    observed, candidates = rows[0], rows[1:]
    baseline = next((r for r in candidates if r.kind == "baseline"), None)
    for row in candidates:
        if baseline is None:
            break
        # vs today's scheduler replayed: what the configuration itself frees, replay effects aside
        freed = released(
            Capacity(baseline.active_core_hours, baseline.active_gib_hours),
            Capacity(row.active_core_hours, row.active_gib_hours),
        )
        row.vs_baseline = {
            "baseline": baseline.name,
            "core_hours_released": freed.core_hours,
            "gib_hours_released": freed.gib_hours,
            "core_hours_released_pct": freed.core_hours_pct,
            "gib_hours_released_pct": freed.gib_hours_pct,
        }
    if whatif.autoscaled:  # before the front and the ranking, which read them
        strategy_of = {c.name: path for path, c in files.items()}
        strategy_of.update({r.name: r.name for r in candidates if r.kind == "baseline"})
        attach(rows, whatif.autoscaled, strategy_of)
        # ranked on the rows replayed under it: all under CA, the finalists under Karpenter
        candidates = [r for r in candidates if r.autoscaled is not None]
    for row, front in zip(
        candidates, pareto_front([r.objectives for r in candidates]), strict=True
    ):
        row.on_front = front
    currency = whatif.prices["currency"] if whatif.prices else None
    best, sentence = recommend(observed, candidates, currency)
    if whatif.autoscaled:
        sentence = (
            f"Ranked on the replay under {whatif.autoscaler} (the nodes a team running it pays "
            f"for, not the active ones): {sentence}"
        )
        if all(all_held(o) for o in whatif.autoscaled):
            sentence += (
                f" Under {whatif.autoscaler} no configuration could remove a node: every pool's "
                "minSize is as many nodes as it ran in the data (by default its observed "
                "range; set autoscaler.node-groups to let it go lower)."
            )
    return SearchResult(
        autoscaler=whatif.autoscaler if whatif.autoscaled else "none",
        prices=whatif.prices,
        source=whatif.source,
        start=whatif.start,
        end=whatif.end,
        grid=settings.grid,
        seeds=settings.seeds,
        thresholds=settings.thresholds,
        rows=rows,
        recommended=best.name if best else None,
        sentence=sentence,
        notes=whatif_notes(snapshot, shown),
        version=whatif.version,
    )


def search_settings(settings: SearchSettings, files: Sequence[str], *more: str) -> WhatIfSettings:
    """The comparison that replays the baselines, ``more`` presets and the grid's files."""
    names = [b for b in settings.grid.baselines if b != OBSERVED]
    names += [m for m in more if m not in names and m != OBSERVED]
    return WhatIfSettings(
        strategies=(*names, *files),
        seeds=settings.seeds,
        kubernetes_version=settings.kubernetes_version,
        thresholds=settings.thresholds,
        workers=settings.workers,
        prices=settings.prices,
        executor=settings.executor,
        autoscaler=settings.autoscaler,
        autoscaling=settings.autoscaling,
    )


@dataclass(frozen=True)
class SearchSize:
    """What a search will replay, counted from the grid before anything runs."""

    configurations: int  # distinct grid configurations
    baselines: int  # baseline strategies (observed is the reference, not counted)
    seeds: int

    @property
    def replays(self) -> int:
        """Configurations and baselines × seeds: what ``--max-configurations`` bounds."""
        return (self.configurations + self.baselines) * self.seeds

    def line(self) -> str:
        """``8 configurations + 1 baseline × 1 seed = 9 replays``."""
        return (
            f"{plural(self.configurations, 'configuration')} + "
            f"{plural(self.baselines, 'baseline')} × {plural(self.seeds, 'seed')} = "
            f"{plural(self.replays, 'replay')}"
        )


def plural(count: int, word: str) -> str:
    """``1 seed``, ``2 seeds``, ``30,300 configurations``."""
    return f"{count:,} {word}{'s' if count != 1 else ''}"


def search_size(settings: SearchSettings) -> SearchSize:
    """The size of ``settings``' search, from the grid's axes alone (``SearchGrid.count``)."""
    baselines = {b for b in settings.grid.baselines if b != OBSERVED}
    return SearchSize(settings.grid.count(), len(baselines), settings.seeds)


def check_search_size(size: SearchSize, limit: int, option: str = "--max-configurations") -> None:
    """Refuse a search of more than ``limit`` replays, in one line naming the count and the fix."""
    if size.replays > limit:
        raise InputError(
            f"--search: the grid makes {size.line()}, more than {option} {limit:,}; use a "
            f"smaller --search-grid (fewer values per axis) or pass {option} {size.replays}"
        )


def run_search(
    snapshot: Snapshot,
    settings: SearchSettings,
    progress: Callable[[str, int, int], None] | None = None,
    source: Path | None = None,
) -> SearchResult:
    """Replay every configuration of the grid and every baseline; front and recommendation.

    ``progress(strategy, done, total)`` after each replay (``run_whatif``'s); ``source``: the
    snapshot's directory, which a Dask executor's workers read (``run_whatif``). Every row is
    replayed under ``settings.autoscaler``: under Karpenter the command runs
    ``search_finalists.run_any`` instead, which replays only the finalists under it."""
    with grid_files(settings.grid.configs()) as files:
        whatif = run_whatif(snapshot, search_settings(settings, list(files)), progress, source)
    return search_result(whatif, files, settings, snapshot)


def restrict(
    whatif: WhatIfResult,
    names: Sequence[str],
    snapshot: Snapshot,
    kubernetes_version: str | None = None,
) -> WhatIfResult:
    """The comparison of ``observed`` and ``names`` only, its recommendation and notes
    recomputed (for a what-if page when one comparison of ``snapshot`` also replayed the
    search's configurations: the page's notes name only its own strategies)."""
    kept = [c for c in whatif.strategies if c.name == OBSERVED or c.name in names]
    best, sentence = compare_recommend(kept, whatif.prices["currency"] if whatif.prices else None)
    version = whatif.kubernetes_version or kubernetes_version
    strategies = [resolve_strategy(c.name, version) for c in kept]
    return replace(
        whatif,
        strategies=kept,
        best=best,
        recommendation=sentence,
        notes=whatif_notes(snapshot, strategies),
        pool_mix=[n for n in whatif.pool_mix if n in names],
    )

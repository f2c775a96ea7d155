"""``analyzer whatif --search``: load-aware bin-packing presets, the grid, the Pareto front, the
recommendation rule, the scheduler YAML round trip, and the search on a small snapshot."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.scheduling.strategies import load_strategy, strategy_config
from analyzer.whatif.search import SearchSettings, run_search
from analyzer.whatif.search_grid import DEFAULT_GRID, SearchConfig, SearchGrid, parse_grid
from analyzer.whatif.search_rule import SearchRow, pareto_front, recommend

SCENARIO = Path(__file__).parent / "data" / "scenarios" / "score-loadaware.yaml"
C1M1 = (("cpu", 1), ("memory", 1))
LA65 = (("cpu", 65), ("memory", 95))


def _scenario(scheduler: Any) -> dict[str, Any]:
    """Koordinator's "score load node" scenario plus a second, emptier node with a bound pod."""
    doc = yaml.safe_load(SCENARIO.read_text())
    doc["scheduler"] = scheduler
    second = copy.deepcopy(doc["nodes"][0])
    second["metadata"]["name"] = "test-node-2"
    doc["nodes"].append(second)
    metric = copy.deepcopy(doc["nodeMetrics"][0])
    metric["metadata"]["name"] = "test-node-2"
    metric["status"]["nodeMetric"]["nodeUsage"]["resources"] = {"cpu": "8", "memory": "4Gi"}
    doc["nodeMetrics"].append(metric)
    doc["pods"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bound", "namespace": "default"},
            "spec": {
                "nodeName": "test-node-1",
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "40", "memory": "64Gi"}}}
                ],
            },
        }
    ]
    return doc


def _score(tmp_path: Path, scheduler: Any) -> dict[str, Any]:
    path = tmp_path / f"scenario-{abs(hash(str(scheduler)))}.yaml"
    path.write_text(yaml.safe_dump(_scenario(scheduler)))
    run = CliRunner().invoke(main, ["score", str(path)], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    out: dict[str, Any] = json.loads(run.output)
    return out


def _scores(result: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {n["name"]: n["scores"] for n in result["nodes"]}


def test_loadaware_presets_are_the_existing_plugins_combined(tmp_path: Path) -> None:
    # Each plugin's raw score under the combined preset is the one the plugin gives alone: the
    # packing score from the bin-packing preset, the load score from the koord-loadaware preset.
    pairs = {
        "most-allocated-loadaware": "most-allocated",
        "rtcr-binpack-loadaware": "rtcr-binpack",
    }
    koord = _scores(_score(tmp_path, "koord-loadaware"))
    for combined, packing in pairs.items():
        result = _score(tmp_path, combined)
        scores = _scores(result)
        alone = _scores(_score(tmp_path, packing))
        for node, got in scores.items():
            # NodeAffinity skips (no preferred terms); TaintToleration scores as in the v1 default;
            # ImageLocality has no PreScore skip: 0, no node lists images
            assert set(got) == {
                "TaintToleration",
                "NodeResourcesFit",
                "NodeResourcesBalancedAllocation",
                "LoadAwareScheduling",
                "ImageLocality",
            }
            assert got["ImageLocality"] == 0
            assert got["NodeResourcesFit"] == alone[node]["NodeResourcesFit"]
            assert got["LoadAwareScheduling"] == koord[node]["LoadAwareScheduling"]
        # weights 3 (TaintToleration) and 1/1/1/1: the total is that weighted sum
        for node in result["nodes"]:
            scores_of = node["scores"]
            assert node["total"] == sum(scores_of.values()) + 2 * scores_of["TaintToleration"]
        # bin packing prefers the fuller node 1; LoadAware prefers the less loaded node 2
        assert scores["test-node-1"]["NodeResourcesFit"] > scores["test-node-2"]["NodeResourcesFit"]
        assert (
            scores["test-node-1"]["LoadAwareScheduling"]
            < scores["test-node-2"]["LoadAwareScheduling"]
        )


def test_presets_filter_with_loadaware() -> None:
    for name in ("most-allocated-loadaware", "rtcr-binpack-loadaware"):
        spec = strategy_config(name).profile()
        assert spec.filters[-1] == "LoadAwareScheduling"
        assert dict(spec.scores)["LoadAwareScheduling"] == 1
        assert dict(spec.args["LoadAwareScheduling"].usage_thresholds) == {"cpu": 65, "memory": 95}


def test_searched_yaml_round_trips_to_the_preset(tmp_path: Path) -> None:
    # The grid point equal to the preset emits a file that parses to the preset's profile, and
    # `analyzer score` gives the same verdict with the file as with the preset name.
    config = SearchConfig("MostAllocated", C1M1, LA65, 1)
    path = tmp_path / "emitted.yaml"
    path.write_text(config.yaml())
    doc = yaml.safe_load(path.read_text())
    assert doc["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    args = {c["name"]: c["args"] for c in doc["profiles"][0]["pluginConfig"]}
    assert args["NodeResourcesFit"]["kind"] == "NodeResourcesFitArgs"
    assert args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"
    assert args["LoadAwareScheduling"]["kind"] == "LoadAwareSchedulingArgs"
    assert args["LoadAwareScheduling"]["usageThresholds"] == {"cpu": 65, "memory": 95}
    emitted = strategy_config(str(path)).profile()
    preset = strategy_config("most-allocated-loadaware").profile()
    assert (emitted.filters, emitted.scores, emitted.args) == (
        preset.filters,
        preset.scores,
        preset.args,
    )
    loaded, named = load_strategy(str(path)), load_strategy("most-allocated-loadaware")
    assert [type(f).__name__ for f in loaded.filters] == [type(f).__name__ for f in named.filters]
    assert [(type(s.plugin).__name__, s.weight) for s in loaded.scorers] == [
        (type(s.plugin).__name__, s.weight) for s in named.scorers
    ]
    by_file, by_name = _score(tmp_path, str(path)), _score(tmp_path, "most-allocated-loadaware")
    assert by_file["nodes"] == by_name["nodes"] and by_file["selected"] == by_name["selected"]
    # an RTCR point with other weights keeps its shape and weights through the file
    rtcr = SearchConfig("RequestedToCapacityRatio", (("cpu", 3), ("memory", 1)), None, 0)
    path.write_text(rtcr.yaml())
    fit = strategy_config(str(path)).profile().args["NodeResourcesFit"]
    assert fit.strategy == "RequestedToCapacityRatio"
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 3), ("memory", 1)]
    assert [(p.utilization, p.score) for p in fit.shape] == [(0, 0), (100, 10)]


def test_pareto_front_by_hand() -> None:
    points = [
        (10, 5, 0),  # A: front (fewest violations at 10 nodes)
        (8, 9, 0),  # B: front (fewest nodes)
        (10, 6, 0),  # C: dominated by A (same nodes and waits, more violations)
        (9, 9, 1),  # D: dominated by B (8 ≤ 9 nodes, 9 ≤ 9 violations, 0 ≤ 1 wait)
        (12, 5, 0),  # E: dominated by A (more nodes, same rest)
        (10, 5, 0),  # F: equal to A: neither dominates the other, both on the front
    ]
    assert pareto_front(points) == [True, True, False, False, False, True]
    assert pareto_front([]) == []
    assert pareto_front([(1, 1, 1)]) == [True]


def _row(
    name: str, peak: float, violations: float, waited: float, never: float = 0, freed: float = 0
) -> SearchRow:
    """A row releasing ``freed`` % of both core-hours and GiB-hours (and as many of each)."""
    return SearchRow(
        name, "searched", {}, peak, peak, violations, waited, never, 0.0, {},
        core_hours_released=freed, gib_hours_released=freed,
        core_hours_released_pct=freed, gib_hours_released_pct=freed,
    )  # fmt: skip


def test_recommendation_rule() -> None:
    observed = _row("observed", 20, 10, 2, 1)
    rows = [
        _row("packs-too-hot", 12, 11, 0, 0, 40),  # most freed, but one more violation
        _row("waits-more", 13, 0, 3, 0, 35),  # more waiting pods than observed
        _row("unplaced", 13, 0, 0, 2, 35),  # more never-placed pods
        _row("ok-15", 15, 10, 2, 1, 20),  # as bad as observed on all three, 20 % freed
        _row("ok-14", 14, 9, 2, 0, 25),
        _row("ok-14-tie", 14, 9, 2, 0, 25),  # same as ok-14: grid order decides
        _row("shift", 10, 0, 0, 0, 0.5),  # fewest nodes, 0.5 % freed: a pool-mix shift
    ]
    best, sentence = recommend(observed, rows)
    assert best is rows[4] and best.recommended and not rows[5].recommended
    assert [r.eligible for r in rows] == [False, False, False, True, True, True, True]
    assert [r.pool_mix for r in rows] == [False] * 6 + [True]
    assert sentence.startswith(
        "Apply ok-14: it releases 25 core-hours (25.0 %) and 25 GiB-hours (25.0 %) of active "
        "nodes' capacity over the window, peaking at 14 nodes (observed 20)"
    )
    assert sentence.endswith(
        "shift peaks at 10 fewer nodes, but releases only 0.5 % of core-hours: pods moved to "
        "bigger nodes (a pool-mix shift)."
    )
    # nothing eligible releases capacity (fewer nodes alone is no saving)
    none, why = recommend(observed, [_row("same", 18, 0, 0), _row("hot", 10, 30, 0, 0, 50)])
    assert none is None and why.startswith("No configuration releases capacity:")
    # nothing is eligible at all
    none, why = recommend(observed, [_row("hot", 10, 30, 0)])
    assert none is None and "every one of the 1 searched had more" in why


def test_grid_replace_and_extend() -> None:
    assert len(DEFAULT_GRID.configs()) == 2 * 1 * 2 * 2
    replaced = parse_grid({"scoring": ["MostAllocated"], "loadAwareThresholds": [None]})
    assert [c.name for c in replaced.configs()] == ["MostAllocated"]
    extended = parse_grid({"extend": True, "loadAwareWeights": [3]})
    assert extended.loadaware_weights == (1, 2, 3)
    assert len(extended.configs()) == 2 * 2 * 3
    # without LoadAware the weight axis collapses: no duplicate configurations
    grid = SearchGrid(loadaware_thresholds=(None, LA65), loadaware_weights=(1, 2))
    assert len(grid.configs()) == 2 * (1 + 2)
    for bad, message in (
        ({"scoring": ["Fastest"]}, "scoring[0]"),
        ({"loadAwareWeights": [0]}, "loadAwareWeights[0]"),
        ({"resourceWeights": [{"cpu": 101}]}, "resourceWeights[0].cpu"),
        ({"loadAwareThreshold": [{"cpu": 50}]}, "unknown key 'loadAwareThreshold'"),
        ({"shape": [{"utilization": 0}]}, "shape[0].score"),
    ):
        with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_grid(bad)


def spread_cluster() -> Snapshot:
    """Six 4000m nodes; six 1000m pods that really ran one per node, each using 300m."""
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(6)]
    pods = [P(f"p{i}", f"n{i}", cpu=1000, start=i + 1, cpu_used=300.0) for i in range(6)]
    return build(nodes, pods, minutes=30)


def test_search_finds_fewer_nodes_than_kube_default() -> None:
    # Why it must: kube-default (LeastAllocated) puts each 1000m pod on an empty node (six nodes
    # at peak, like observed). MostAllocated puts them together: four fill a 4000m node, so two
    # nodes suffice. Usage stays far below the 65 % cpu threshold either way (4 × 300m + 100m
    # overhead = 33 % of a node), so packing adds no violation and no pod waits.
    grid = SearchGrid(
        scoring=("MostAllocated",),
        loadaware_thresholds=(None, LA65),
        loadaware_weights=(1,),
    )
    result = run_search(spread_cluster(), SearchSettings(grid=grid, workers=1))
    rows = {r.name: r for r in result.rows}
    assert [r.kind for r in result.rows] == ["observed", "baseline", "searched", "searched"]
    assert rows["observed"].peak_nodes == 6 and rows["kube-default"].peak_nodes == 6
    best = result.best()
    assert best is not None and best.kind == "searched"
    assert best.peak_nodes == 2 < rows["kube-default"].peak_nodes
    assert best.violations <= rows["kube-default"].violations
    assert best.waited == 0 and best.never_placed == 0
    assert result.first_screen() == {
        "question": "Which of the 3 configurations searched (kube-default and 2 grid "
        "configurations) would have released the most capacity of active nodes without more "
        "threshold violations, waiting or never-placed pods than observed?",
        "sentence": result.sentence,
        "href": "search.html",
        "searched": [r.name for r in result.rows[1:]],
        "recommended": best.name,  # the what-if page says whether its verdict agrees
    }
    # observed: six 4-core nodes active from minutes 1..6 to the end (31 − start grid points);
    # packed: one from minute 1 (p0..p3), one from minute 5 (p4, p5): the runs from minutes 2,
    # 3, 4 and 6 are freed
    freed = sum(4 * (31 - start) for start in (2, 3, 4, 6)) / 60
    assert best.core_hours_released == pytest.approx(freed)
    assert f"releases {freed:,.0f} core-hours" in result.sentence and best.name in result.sentence
    # kube-default, the baseline, spreads like observed: vs it the packer frees the same
    assert rows["kube-default"].core_hours_released == pytest.approx(0.0)
    assert best.vs_baseline["baseline"] == "kube-default"
    assert best.vs_baseline["core_hours_released"] == pytest.approx(freed)
    assert rows["kube-default"].vs_baseline["core_hours_released"] == 0.0
    # the front: kube-default is dominated by the packed configurations
    assert not rows["kube-default"].on_front and best.on_front
    text = result.recommended_yaml()
    assert text is not None and yaml.safe_load(text) == best.document


def test_cli_search_writes_page_json_csv_and_yaml(tmp_path: Path) -> None:
    snap = write_snapshot(spread_cluster(), tmp_path / "snap")
    grid = tmp_path / "grid.yaml"
    grid.write_text("scoring: [MostAllocated]\nloadAwareThresholds: [{cpu: 65, memory: 95}]\n")
    out = tmp_path / "out"
    args = ["whatif", str(snap), "--search", "--search-grid", str(grid), "--workers", "1"]
    run = CliRunner().invoke(main, [*args, "--out", str(out)], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    folder = out
    assert {p.name for p in folder.iterdir()} == {
        "search.html",
        "search.json",
        "search.csv",
        "search-scheduler.yaml",
    }
    data = json.loads((folder / "search.json").read_text())
    assert data["first_screen"]["href"] == "search.html"
    assert data["sentence"] in run.output
    scheduler = (folder / "search-scheduler.yaml").read_text()
    assert scheduler.strip() in run.output  # printed ready to apply
    spec = strategy_config(str(folder / "search-scheduler.yaml")).profile()
    assert spec.filters[-1] == "LoadAwareScheduling"
    # --format json prints the whole search (strict JSON: no NaN)
    as_json = CliRunner().invoke(main, [*args, "--format", "json"], catch_exceptions=False)
    assert as_json.exit_code == 0, as_json.output
    printed = json.loads(as_json.output)
    assert printed["rows"] == data["search"]["rows"] and printed["sentence"] == data["sentence"]
    # a bad grid: exit 2, one line naming the key
    grid.write_text("scoring: [Fastest]\n")
    bad = CliRunner().invoke(main, args)
    assert bad.exit_code == 2
    assert "scoring[0]" in bad.output and "MostAllocated" in bad.output
    # --out without --search is refused
    plain = CliRunner().invoke(main, ["whatif", str(snap), "--strategy", "x", "--out", str(out)])
    assert plain.exit_code == 2 and "--out: only with --search" in plain.output


def test_example_grid_and_docs_name_every_key() -> None:
    root = Path(__file__).parent.parent
    grid = parse_grid(yaml.safe_load((root / "examples" / "search-grid.yaml").read_text()))
    assert len(grid.configs()) == 2 * 2 * (1 + 2 * 2)  # null thresholds: no weight axis
    docs = (root / "docs" / "whatif.md").read_text()
    for key in ("scoring", "resourceWeights", "loadAwareThresholds", "loadAwareWeights",
                "shape", "baselines", "extend"):  # fmt: skip
        assert f"`{key}`" in docs


def test_emitted_yaml_keeps_the_default_plugins() -> None:
    # Pasted into a real kube-scheduler, a profile that disabled "*" would also drop the plugins
    # analyzer does not model (VolumeBinding, PodTopologySpread, …): the YAML only adds
    # LoadAwareScheduling and sets NodeResourcesFit's scoring strategy, and has no YAML anchors.
    text = SearchConfig("MostAllocated", C1M1, LA65, 1).yaml()
    assert "&id" not in text and "*id" not in text
    assert "disabled" not in text
    profile = yaml.safe_load(text)["profiles"][0]
    assert profile["plugins"] == {
        "filter": {"enabled": [{"name": "LoadAwareScheduling"}]},
        "score": {"enabled": [{"name": "LoadAwareScheduling", "weight": 1}]},
    }
    assert (
        "plugins"
        not in yaml.safe_load(SearchConfig("MostAllocated", C1M1, None, 0).yaml())["profiles"][0]
    )


def test_one_comparison_split_into_the_whatif_and_the_search() -> None:
    # What the demo does: presets and the grid in one comparison, then two results. Each must
    # be what its own run gives (every replay is independent of the others in the pool).
    from analyzer.whatif.compare import WhatIfSettings, run_whatif
    from analyzer.whatif.search import grid_files, restrict, search_result, search_settings

    snap = spread_cluster()
    grid = SearchGrid(scoring=("MostAllocated",), loadaware_weights=(1,))
    settings = SearchSettings(grid=grid, workers=1)
    presets = ("kube-default", "most-allocated")
    with grid_files(grid.configs()) as files:
        combined = run_whatif(snap, search_settings(settings, list(files), *presets))
    alone = run_whatif(snap, WhatIfSettings(strategies=presets, workers=1))
    whatif = restrict(combined, presets, snap)
    assert [c.name for c in whatif.strategies] == ["observed", *presets]
    assert (whatif.best, whatif.recommendation) == (alone.best, alone.recommendation)
    assert whatif.notes == alone.notes  # they name the presets only, as the run of them alone
    searched = search_result(combined, files, settings, snap)
    own = run_search(snap, settings)
    assert [r.to_dict() for r in searched.rows] == [r.to_dict() for r in own.rows]
    assert searched.notes == own.notes
    assert "most-allocated" not in [r.name for r in searched.rows]  # not a baseline of the grid

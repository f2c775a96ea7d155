"""Property-based tests of every reader of a user's structured file (issue 31, item 8).

For each reader — the config file, ``--prices``, ``score`` scenarios, KubeSchedulerConfiguration
files, ``--search-grid``, ``--kube-objects`` — Hypothesis breaks a valid document in one or two
places (``hostile_documents``: wrong types at any field or key, non-finite and huge numbers, names
with every Unicode line break, control characters, formula prefixes, nesting past the bound,
alias bombs, random bytes, cut files). In-process, the reader either returns or raises one
``InputError`` line; no other exception. Through the real CLI (fewer examples: each is a child
process), every run keeps ``cli_contract``'s rules: exit 0, 2 or 3, at most one stderr line, no
traceback, the time and memory bounds, nothing half-written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_contract import assert_contract, run_cli
from hostile_documents import as_file, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_structured_cli import HEAVY_IMPORT_S, QUICK_S, time_bound

from analyzer.cli.base import command_options, main
from analyzer.collect.kube_objects import read_kube_objects
from analyzer.core.config import build_default_map, load_config_file
from analyzer.core.errors import InputError
from analyzer.core.prices import load_prices
from analyzer.scheduling.scenario import load_scenario, result_json
from analyzer.scheduling.strategies import STRATEGIES, load_strategy
from analyzer.whatif.search_grid import load_grid

ROOT = Path(__file__).resolve().parents[1]
IN_PROCESS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
THROUGH_CLI = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PRICES: dict[str, Any] = {
    "currency": "EUR",
    "pools": {"general": {"node_hour": 0.38}, "highmem": {"core_hour": 0.031, "gib_hour": 0.0042}},
    "default": {"core_hour": 0.03, "gib_hour": 0.004},
}
CONFIG: dict[str, Any] = {
    "prometheus": "http://127.0.0.1:1",
    "collect": {"step": "1m", "max-requests": 100},
    "report-monthly": {"month": "2026-10"},
    "thresholds": {"usageThresholds": {"cpu": 65, "memory": 95}},
    "node_thresholds": {"node-a": {"usageThresholds": {"cpu": 50}}},
}
SCENARIO: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "score-scenario.yaml").read_text())
GRID: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "search-grid.yaml").read_text())
SCHEDULER: dict[str, Any] = json.loads(json.dumps(STRATEGIES.get("most-allocated").document))
KUBE_OBJECTS: dict[str, Any] = {
    "kind": "List",
    "items": [
        {
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "web", "image": "nginx"}],
                        "tolerations": [{"key": "spot", "operator": "Exists"}],
                        "nodeSelector": {"pool": "general"},
                        "priorityClassName": "high",
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "ScheduleAnyway",
                                "labelSelector": {"matchLabels": {"app": "web"}},
                            }
                        ],
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "topologyKey": "kubernetes.io/hostname",
                                        "labelSelector": {"matchLabels": {"app": "web"}},
                                    }
                                ]
                            }
                        },
                    },
                },
            },
        },
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-5d9f8",
                "namespace": "shop",
                "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}],
            },
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 0},
        },
        {
            "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"pool": "general", "zone": "a"}},
            "spec": {"taints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]},
        },
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {"kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}},
        {
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}},
        },
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
        {"kind": "ConfigMap", "metadata": {"name": "ignored"}, "data": {"a": "b"}},
    ],
}


def _score(path: Path) -> None:
    scenario = load_scenario(path)
    result_json(scenario, scenario.evaluate(), 0)


def _config(path: Path) -> None:
    build_default_map(load_config_file(path), command_options(main), source=str(path))


def _grid(path: Path) -> None:
    load_grid(path).configs()


def _kube_objects(path: Path) -> None:
    objects = read_kube_objects(path)
    objects.kept(set())
    objects.priority_values()
    objects.global_default()


def _scheduler(path: Path) -> None:
    load_strategy(str(path))


READERS: dict[str, tuple[dict[str, Any], str, Callable[[Path], None]]] = {
    "prices": (PRICES, "p.yaml", load_prices),
    "config": (CONFIG, "c.yaml", _config),
    "scenario": (SCENARIO, "s.yaml", _score),
    "grid": (GRID, "g.yaml", _grid),
    "scheduler": (SCHEDULER, "k.yaml", _scheduler),
    "kube-objects": (KUBE_OBJECTS, "o.json", _kube_objects),
}


def _one_line(exc: InputError, path: Path) -> None:
    message = str(exc)
    assert len(message.splitlines()) == 1 and message == message.strip(), message
    assert len(message) < 1000 + len(str(path)), message[:300]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_valid_base_documents_are_read(
    tmp_path: Path, reader: str
) -> None:  # else every property below would test refusals only
    base, name, read = READERS[reader]
    path = tmp_path / name
    path.write_text(json.dumps(base) if name.endswith(".json") else yaml.safe_dump(base))
    read(path)


@pytest.mark.parametrize("reader", sorted(READERS))
@IN_PROCESS
@given(data=st.data())
def test_hostile_documents_in_process(
    tmp_path_factory: pytest.TempPathFactory, reader: str, data: st.DataObject
) -> None:
    base, name, read = READERS[reader]
    document = data.draw(mutated(base))
    path = data.draw(as_file(document, tmp_path_factory.mktemp(reader) / name))
    try:
        read(path)
    except InputError as exc:
        _one_line(exc, path)


def _cli_args(reader: str, path: Path) -> tuple[list[str], float]:
    """The command that reads ``path`` first, and its time bound."""
    if reader == "prices":
        return ["report", "monthly", "h", "--out", "m", "--prices", str(path)], QUICK_S
    if reader == "config":
        return ["--config", str(path), "report", "monthly", "h", "--out", "m"], QUICK_S
    if reader == "scenario":
        return ["score", str(path)], QUICK_S
    if reader == "scheduler":
        return [
            "score",
            str(ROOT / "examples" / "score-scenario.yaml"),
            "--config",
            str(path),
        ], QUICK_S
    if reader == "grid":
        return ["whatif", "snap", "--search", "--search-grid", str(path)], HEAVY_IMPORT_S
    return ["collect", "--prometheus", "http://127.0.0.1:1", "--since", "0s", "--out", "snap",
            "--kube-objects", str(path)], HEAVY_IMPORT_S  # fmt: skip


@pytest.mark.parametrize("reader", sorted(READERS))
@THROUGH_CLI
@given(data=st.data())
def test_hostile_documents_through_the_cli(
    tmp_path_factory: pytest.TempPathFactory, reader: str, data: st.DataObject
) -> None:
    base, name, _ = READERS[reader]
    folder = tmp_path_factory.mktemp(f"cli-{reader}")
    (folder / "snap").mkdir()  # the search's SNAPSHOT argument must exist; the grid comes first
    document = data.draw(mutated(base))
    path = data.draw(as_file(document, folder / name))
    args, seconds = _cli_args(reader, path)
    outcome = run_cli(args, cwd=folder, timeout=180)
    # without a history or a server, even a good file ends in exit 2 (missing history, empty
    # range); a review or snapshot is never written by these runs
    assert_contract(
        outcome,
        allowed_exits=(0, 2, 3),
        max_seconds=time_bound(seconds),
        watched=[folder],
        absent_unless_ok=[folder / "m"],
    )


WRONG_TYPES: tuple[Any, ...] = (["a", "b"], "pool=general", {"nested": {"x": 1}}, 7, None, 1e308)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_field_of_every_wrong_type_in_process(tmp_path: Path, reader: str) -> None:
    """Exhaustive where Hypothesis samples: each place of the base document, in turn, holds a
    list, a string, a mapping, a number, null and a huge float; each read returns or is one line."""
    from hostile_documents import _paths, _put

    base, name, read = READERS[reader]
    places = [p for p in _paths(base) if p and not isinstance(p[-1], tuple)]
    assert len(places) >= 8  # the walk sees the document's fields
    refusals = 0
    for place in places:
        for wrong in WRONG_TYPES:
            document = _put(json.loads(json.dumps(base)), place, json.loads(json.dumps(wrong)))
            path = tmp_path / name
            path.write_text(json.dumps(document))  # JSON is YAML too
            try:
                read(path)
            except InputError as exc:
                _one_line(exc, path)
                refusals += 1
    assert refusals > 0  # wrong types are refused, not all silently taken

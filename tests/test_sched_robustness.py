"""Malformed scenarios end with exit 2 and one message — never a traceback (hypothesis fuzzing)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.cli import main

SCENARIOS = Path(__file__).parent / "data" / "scenarios"
DOCS = [yaml.safe_load(p.read_text()) for p in sorted(SCENARIOS.glob("*.yaml"))]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_mutated_scenarios_exit_0_or_2(tmp_path: Path, data: st.DataObject) -> None:
    doc = data.draw(st.sampled_from(DOCS))
    path = data.draw(st.sampled_from(_paths(doc)))
    mutated = _replace(doc, path, data.draw(JUNK))
    file = tmp_path / "scenario.yaml"
    file.write_text(yaml.safe_dump(mutated))
    result = CliRunner().invoke(main, ["score", str(file)])
    assert result.exit_code in (0, 2), (path, result.exception, result.stderr)
    if result.exit_code == 2:
        assert result.stderr.startswith("analyzer: error: ")
        assert "Traceback" not in result.stderr

"""Every case of the second fault campaign is a test (issue 31, "Proof that generalises").

``../shared/research/reliability-2026-11.md`` numbers its cases 1..133. Each area's tests map the
cases they cover in ``tests/campaign_cases_<area>.py`` (``CASES: dict[int, str]``, the value
``file.py::test_name``). This test reads the report's own table, so a case added to or dropped
from the report shows here, and checks that every case is mapped exactly once, to a test function
that exists.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPORT = TESTS.parents[1] / "shared" / "research" / "reliability-2026-11.md"
_CASE_ROW = re.compile(r"^\|\s*(\d+)\s*\|")


def _report_cases() -> set[int]:
    if not REPORT.is_file():
        pytest.skip(f"{REPORT} is not beside the checkout (../shared)")
    return {
        int(match.group(1))
        for line in REPORT.read_text(encoding="utf-8").splitlines()
        if (match := _CASE_ROW.match(line))
    }


def _mappings() -> dict[str, dict[int, str]]:
    found = {}
    for path in sorted(TESTS.glob("campaign_cases_*.py")):
        module = importlib.import_module(path.stem)
        found[path.stem] = dict(module.CASES)
    return found


def _test_functions(file_name: str) -> set[str]:
    path = TESTS / file_name
    if not path.is_file():
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_the_report_has_its_133_cases() -> None:
    assert _report_cases() == set(range(1, 134))


def test_every_case_is_mapped_once() -> None:
    cases = _report_cases()
    seen: dict[int, str] = {}
    for area, mapping in _mappings().items():
        for case in mapping:
            assert case not in seen, f"case {case} mapped by both {seen[case]} and {area}"
            seen[case] = area
    assert sorted(cases - seen.keys()) == [], "cases no test covers"
    assert sorted(seen.keys() - cases) == [], "mapped numbers the report does not have"


def test_every_mapped_test_exists() -> None:
    missing = []
    for area, mapping in _mappings().items():
        for case, target in mapping.items():
            file_name, _, function = target.partition("::")
            if function not in _test_functions(file_name):
                missing.append(f"{area}: case {case} -> {target}")
    assert not missing, missing

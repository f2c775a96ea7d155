"""docs/reliability.md and the fault tests agree: every documented fault is driven by a test."""

from __future__ import annotations

from pathlib import Path

from reliability_doc import fault_rows

from analyzer.core import errors

TESTS = Path(__file__).resolve().parent


def test_every_documented_fault_has_a_test() -> None:
    sources = "\n".join(
        path.read_text(encoding="utf-8")
        for path in TESTS.glob("test_*.py")
        if path.name != "test_reliability_doc.py"
    )
    rows = fault_rows()
    untested = sorted(
        fault_id for fault_id in rows if f'documented_exit("{fault_id}")' not in sources
    )
    assert not untested, f"documented faults no test checks: {untested}"


def test_exit_codes_are_documented_codes() -> None:
    for row in fault_rows().values():
        documented = (errors.EXIT_ERROR, errors.EXIT_BAD_INPUT, errors.EXIT_PARTIAL,
                      errors.EXIT_VIOLATIONS, errors.EXIT_PUBLISH_FAILED)  # fmt: skip
        assert row.exit in documented, row

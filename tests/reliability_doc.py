"""docs/reliability.md's fault table, read by the fault tests so that the page cannot drift.

A row is ``| `id` | fault | what analyzer does | exit |``. A fault test asks ``documented_exit("id")``
for the exit code it must see; ``tests/test_reliability_doc.py`` checks that every row is used by a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
_ROW = re.compile(
    r"^\|\s*`(?P<id>[a-z0-9-]+)`\s*\|(?P<fault>[^|]+)\|(?P<does>[^|]+)\|\s*(?P<exit>\d+)\s*\|\s*$"
)


@dataclass(frozen=True)
class FaultRow:
    """One documented fault."""

    id: str
    fault: str
    does: str
    exit: int


def fault_rows() -> dict[str, FaultRow]:
    """Every row of the fault tables, by id (a repeated id is an error)."""
    rows: dict[str, FaultRow] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        fault_id = match["id"]
        if fault_id in rows:
            raise AssertionError(f"docs/reliability.md: fault id {fault_id!r} appears twice")
        rows[fault_id] = FaultRow(
            fault_id, match["fault"].strip(), match["does"].strip(), int(match["exit"])
        )
    return rows


def documented_exit(fault_id: str) -> int:
    """The exit code docs/reliability.md gives for ``fault_id`` (KeyError if it has no row)."""
    return fault_rows()[fault_id].exit

"""The notes of a search page name the strategies that page shows, by the names its table uses.

The search replays its configurations from temporary KubeSchedulerConfiguration files; those paths
are an implementation detail and must never reach the page or its JSON, and a note that lists
strategies (e.g. which preempt, which score ImageLocality) lists exactly the page's rows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from markupsafe import escape  # jinja's autoescape
from test_search import spread_cluster

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

# the notes that list strategies by name: (pattern whose group 1 is the list)
LISTING = (
    re.compile(r"^(.+) order the pending queue by priority"),
    re.compile(r"so it scores 0 on every node in (.+), as kube-scheduler does"),
)


def _named(note: str) -> str | None:
    """The list of strategy names a note starts or ends with, if it is one of ``LISTING``."""
    for pattern in LISTING:
        found = pattern.search(note)
        if found:
            return found.group(1)
    return None


def _leftover(listed: str, names: list[str]) -> str:
    """``listed`` with every name of ``names`` removed (longest first) and the separators."""
    for name in sorted(names, key=len, reverse=True):
        listed = listed.replace(name, "")
    return listed.replace(",", "").strip()


def test_cli_search_notes_name_only_the_searched_strategies(tmp_path: Path) -> None:
    snap = write_snapshot(spread_cluster(), tmp_path / "snap")
    grid = tmp_path / "grid.yaml"
    grid.write_text("scoring: [MostAllocated]\nloadAwareThresholds: [{cpu: 65, memory: 95}]\n")
    out = tmp_path / "out"
    args = ["whatif", str(snap), "--search", "--search-grid", str(grid), "--workers", "1"]
    run = CliRunner().invoke(main, [*args, "--out", str(out)], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    data = json.loads((out / "search.json").read_text())
    search = data["search"]
    names = [r["name"] for r in search["rows"] if r["name"] != "observed"]
    searched = [r["name"] for r in search["rows"] if r["kind"] == "searched"]
    assert searched and "kube-default" in names
    # every note that lists strategies lists the page's rows by their labels, and nothing else;
    # kube-default and the MostAllocated configurations both keep the v1 default plugins
    # (DefaultPreemption, ImageLocality), so each listing names a searched label
    listings = [listed for note in search["notes"] if (listed := _named(note)) is not None]
    assert len(listings) == 2, search["notes"]
    for listed in listings:
        assert any(label in listed for label in searched), listed
        assert _leftover(listed, names) == "", listed
    # the page lists the notes in the JSON's order (a follow-up note stays after its note)
    html = (out / "search.html").read_text()
    notes = html[html.index("<h3>Notes</h3>") :]
    where = [notes.find(f"<li>{escape(note)}</li>") for note in search["notes"]]
    assert min(where) >= 0 and where == sorted(where), where
    # no temporary configuration path anywhere in what the search wrote
    for path in out.iterdir():
        text = path.read_text()
        assert "analyzer-search-" not in text, path.name  # grid_files' folder prefix
        assert not re.search(r"config-\d{3}\.yaml", text), path.name

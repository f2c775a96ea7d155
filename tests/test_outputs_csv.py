"""Every CSV every command writes, from a snapshot full of hostile names (issue 31 item 1; campaign
rows 63, 91, 101, 102): no cell begins like a formula (``=`` ``+`` ``-`` ``@`` tab, carriage return)
unless it is a plain number.

The snapshot is the generator's 6-node, 2-day cluster with its pools, namespaces, workloads, pod
names and one node renamed after ``hostile_names``. It goes through ``inspect``, ``aggregate``,
``violations``, two ``report nightly`` days (which make the history), ``report whatif``,
``whatif --search`` against baseline files named like formulas, ``rightsize`` and ``report
monthly``; every CSV on stdout or under an output folder is parsed with the csv module.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hostile_names import FORMULA, FORMULA_PREFIXES, NAMESPACES, WORKLOAD_NAMES
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.cli import main
from analyzer.core.csvsafe import csv_text, read_csv_written_by_us, safe_cell, unsafe_cell
from analyzer.core.snapshot import read_snapshot, write_snapshot

PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
POOLS = {
    "general": "=1+1",
    "memory": "<b>mem</b>",
    "compute": '"}}\u202ecompute',
    "gpu": "@gpu\n---\n#",  # no \r: matplotlib warns of a missing glyph (not this test's)
}
NODE = '=HYPERLINK("http://evil.example/n","n")'
# baseline KubeSchedulerConfiguration files of the search, named like the campaign's (row 91)
BASELINES = ('=HYPERLINK("http:evil.example","x").yaml', "@SUM(1+1).yaml", "-cmd\u2028x.yaml")
BASELINE_TEXT = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    "profiles:\n- schedulerName: default-scheduler\n"
)


def _invoke(args: list[str]) -> str:
    """Run a command that must succeed quietly: exit 0 and nothing on stderr (rows 101, 102)."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and result.stderr == "", (args[:3], result.output[-2000:])
    return result.stdout


@pytest.fixture(scope="module")
def hostile_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("csvwalk")
    _invoke(["generate", "--out", str(folder / "plain"), "--nodes", "6", "--days", "2"])
    snap = read_snapshot(folder / "plain")
    old_node = "general-0000"

    def node(column: pd.Series) -> pd.Series:
        return column.astype(object).where(column != old_node, NODE).astype("string")

    pods = snap.pods.copy()
    workloads = sorted(set(pods["workload_name"].dropna()))
    hostile = {w: WORKLOAD_NAMES[i % len(WORKLOAD_NAMES)] for i, w in enumerate(workloads)}
    pods["workload_name"] = pods["workload_name"].map(hostile).astype("string")
    pods["owner_name"] = pods["owner_name"].map(lambda n: f"{FORMULA}{n}").astype("string")
    namespaces = sorted(set(pods["namespace"]))
    pods["namespace"] = (
        pods["namespace"]
        .map({n: NAMESPACES[i % len(NAMESPACES)] for i, n in enumerate(namespaces)})
        .astype("string")
    )
    pods["name"] = ("+" + pods["name"].astype(str)).astype("string")
    pods["node"] = node(pods["node"])
    nodes = snap.nodes.assign(
        node=node(snap.nodes["node"]), pool=snap.nodes["pool"].map(POOLS).astype("string")
    )
    renamed = dataclasses.replace(
        snap,
        nodes=nodes,
        pods=pods,
        node_usage=snap.node_usage.assign(node=node(snap.node_usage["node"])),
    )
    return write_snapshot(renamed, folder / "snap")


def _cells(text: str, where: str = "") -> list[str]:
    """Every cell, as a spreadsheet or the csv module splits the text (no newline translation);
    every row must be as wide as the header (a name's line break never splits a row)."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert all(len(row) == len(rows[0]) for row in rows), where
    return [cell for row in rows for cell in row]


def test_every_csv_of_every_command_is_formula_safe(
    hostile_snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the baseline files are named relative, as the campaign did
    snap = str(hostile_snapshot)
    texts: dict[str, str] = {}
    for table in ("nodes", "pods"):
        texts[f"inspect {table}"] = _invoke(["inspect", snap, "--table", table, "--format", "csv"])
    texts["aggregate"] = _invoke(["aggregate", snap, "--format", "csv"])
    texts["violations"] = _invoke(["violations", snap, "--format", "csv", "--cpu", "1"])
    reports = tmp_path / "reports"
    for day in ("2026-11-01", "2026-11-02"):
        _invoke(["report", "nightly", snap, "--out", str(reports), "--date", day, "--cpu", "1"])
    _invoke(
        ["report", "whatif", snap, "--out", str(tmp_path / "whatif"), "--strategy", "kube-default"]
    )
    baselines = []
    for name in BASELINES:
        (tmp_path / name).write_text(BASELINE_TEXT, encoding="utf-8")
        baselines += ["--strategy", name]  # relative, as the campaign typed them
    grid = tmp_path / "grid.yaml"
    grid.write_text("scoring: [MostAllocated]\n", encoding="utf-8")
    search = ["whatif", snap, "--search", "--search-grid", str(grid), "--workers", "1"]
    _invoke([*search, *baselines, "--out", str(tmp_path / "search")])
    history = reports / "history"
    rightsize = tmp_path / "rs.csv"
    _invoke(
        [
            "rightsize",
            str(history),
            "--recipe",
            "krr",
            "--min-samples",
            "1",
            "--out",
            str(rightsize),
        ]
    )
    texts["rightsize stdout"] = _invoke(
        ["rightsize", str(history), "--recipe", "vpa", "--min-samples", "1"]
    )
    _invoke(
        [
            "report",
            "monthly",
            str(history),
            "--month",
            "2026-11",
            "--out",
            str(tmp_path / "monthly"),
        ]
    )
    # the campaign's snap-host path (rows 64-66 from a nightly history): both patch files hold
    # patches only, and only for names a cluster can hold (every hostile workload is left out)
    patches = _invoke(
        ["rightsize", str(history), "--recipe", "krr", "--min-samples", "1", "--format", "yaml"]
    )
    for text in (patches, (tmp_path / "monthly" / "rightsizing-patches.yaml").read_text("utf-8")):
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        assert {d["kind"] for d in documents} <= {"Deployment", "StatefulSet", "DaemonSet"}
        assert not any(d["metadata"]["name"] in WORKLOAD_NAMES for d in documents)
        assert text.startswith("# ") and "left out" in text.splitlines()[0]
    # row 102: the joint scenarios on rightsize's own CSV of these names, with the drain
    joint = _invoke(
        ["whatif", snap, "--recommendations", str(rightsize), "--blocked", "--workers", "1"]
    )
    assert " 0 pods right-sized" not in joint
    # what reaches the terminal is printable: a name's line break or escape sequence is shown
    # escaped (core/text.py), never sent raw
    assert all(line.isprintable() for line in joint.splitlines()), [
        line for line in joint.splitlines() if not line.isprintable()
    ][:3]
    # rows 101, 102: no page holds a hostile name's markup raw
    pages = sorted(tmp_path.rglob("*.html"))
    assert len(pages) >= 4, pages
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "<script>alert(1)</script>" not in html and "<b>mem</b>" not in html, page
    files = sorted(tmp_path.rglob("*.csv"))
    for path in files:
        texts[str(path.relative_to(tmp_path))] = path.read_bytes().decode("utf-8")
    # every command's CSVs were found: nightly days, the what-if, the search, rightsize, monthly
    tops = {Path(name).parts[0] for name in texts if name.endswith(".csv")}
    assert {"reports", "whatif", "search", "rs.csv", "monthly"} <= tops, tops
    assert any(name.endswith("search.csv") for name in texts)
    every: list[str] = []
    for where, text in texts.items():
        cells = _cells(text, where)
        every += cells
        for cell in cells:
            if cell.startswith(FORMULA_PREFIXES):
                assert PLAIN_NUMBER.fullmatch(cell), (where, cell[:80])
    # and the hostile names are there, neutralised: the test looked at them
    for marked in ("'=1+1", "'@gpu\n---\n#", f"'{NODE}", "'-2+3", "'@SUM(1+1).yaml"):
        assert any(cell == marked or cell.startswith(marked) for cell in every), marked


# ---------------------------------------------------------------- the writer and its reader

_TEXT = st.lists(
    st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from([*FORMULA_PREFIXES, "\n", "\r\n", "'", '"', ",", "\x85", "\u2028"]),
    ),
    max_size=20,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=5))
def test_csv_writer_is_safe_and_read_back_exactly(rows: list[tuple[str, str]]) -> None:
    """Any text: the spreadsheet's view has whole rows and no formula cell, and the reader of
    our own CSVs gives every text back exactly (the writer's ``'`` undone, nothing else)."""
    frame = pd.DataFrame({"name": [a for a, _ in rows], "note": [b for _, b in rows], "n": -1.5})
    text = csv_text(frame)
    for cell in _cells(text):
        assert not cell.startswith(FORMULA_PREFIXES) or PLAIN_NUMBER.fullmatch(cell), cell
    path = Path(tempfile.gettempdir()) / f"analyzer-csv-{os.getpid()}.csv"
    path.write_bytes(text.encode("utf-8"))
    try:
        back = read_csv_written_by_us(path, ["name", "note", "n"], what="f", hint="h")
    finally:
        path.unlink()
    assert list(back["name"]) == list(frame["name"]) and list(back["note"]) == list(frame["note"])
    assert set(back["n"]) == {"-1.5"}
    assert all(unsafe_cell(safe_cell(a)) == a for a, _ in rows)

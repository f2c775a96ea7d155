"""``analyzer demo`` at its default size: snapshot, NodeMetrics, violations, one report per day.

The demo runs once per session (``default_demo`` in tests/conftest.py); these tests and
tests/test_demo_pages.py read that one run.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import yaml
from anti_affinity_facts import anti_affinity_breaks
from conftest import DemoRun

from analyzer.core.snapshot import read_snapshot
from analyzer.report.output import list_runs
from analyzer.report.whatif import DEMO_STRATEGIES
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import find_violations

# The demo's defaults (analyzer demo --help): 200 nodes, 7 days from 2026-11-01.
NODES = 200
DAYS = [f"2026-11-0{d}" for d in range(1, 8)]


def test_demo_writes_snapshot_aggregates_and_reports(default_demo: DemoRun) -> None:
    out, output = default_demo.out, default_demo.output
    latest = out / "reports" / DAYS[-1] / "report.html"
    assert str(latest) in output
    assert "snapshot:" in output and "index" in output

    snapshot = read_snapshot(out / "snapshot")
    assert len(snapshot.nodes) == NODES
    text = (out / "nodemetrics.yaml").read_text()
    objects = list(yaml.safe_load_all(text))
    assert len(objects) == NODES
    assert {o["kind"] for o in objects} == {"NodeMetric"}
    # the demo writes with libyaml's emitter: the bytes PyYAML's own emitter writes for the same
    # objects (what ``analyzer aggregate`` writes), so the faster emitter changed nothing
    assert text == yaml.safe_dump_all(objects, sort_keys=False)

    stored = json.loads((out / "violations.json").read_text())
    assert len(stored["breaches"]) == find_violations(snapshot, ThresholdConfig()).count

    # One nightly report per day, newest first, each compared with the day before.
    assert [r.day for r in list_runs(out / "reports")] == DAYS[::-1]
    reports = {day: json.loads((out / "reports" / day / "report.json").read_text()) for day in DAYS}
    assert [reports[day]["previous_day"] for day in DAYS[1:]] == DAYS[:-1]
    assert reports[DAYS[-1]]["summary"]["nodes"]["value"] == NODES
    # The 83 days before the snapshot are the package's (cli/demo_shipped.py), and it says so:
    # on the terminal, in the history's record and on the monthly review's "what it read" line.
    assert "the days before the snapshot: shipped with the analyzer package" in output
    assert "--regenerate-history" in output
    [span] = json.loads((out / "reports" / "history" / "generated.json").read_text())["spans"]
    assert (span["first"], span["last"], span["step_seconds"]) == ("2026-08-10", "2026-10-31", 3600)
    assert "python -m analyzer.cli.demo_regenerate" in span["note"]
    monthly = json.loads((out / "monthly" / "report.json").read_text())["read"]
    assert monthly["generated_notes"] == [span["note"]]
    assert "Those days were shipped with the analyzer package" in monthly["sentence"]
    html = latest.read_text()
    for question in (
        "Which nodes ran hot?",
        "How fragmented is free capacity?",
        "Was the data complete?",
    ):
        assert question in html


def test_demo_runs_the_search_and_names_its_answer(default_demo: DemoRun) -> None:
    out = default_demo.out
    page = out / "whatif" / "search.html"
    assert page.is_file() and (out / "whatif" / "report.html").is_file()
    data = json.loads((out / "whatif" / "search.json").read_text())
    assert data["sentence"] in default_demo.output  # the summary names the answer
    rows = data["search"]["rows"]
    # observed, every preset of the what-if page as a baseline, 2 searched configurations
    assert [r["kind"] for r in rows] == ["observed", *["baseline"] * 4, "searched", "searched"]
    assert [r["name"] for r in rows[1:5]] == list(DEMO_STRATEGIES)
    for row in rows:
        assert 0 <= row["peak_nodes"] <= NODES
        assert min(row["violations"], row["waited"], row["never_placed"]) >= 0
    # the demo's memory pool is dedicated: tainted, and only its own workload tolerates it
    snapshot = read_snapshot(out / "snapshot")
    memory = snapshot.nodes[snapshot.nodes["pool"] == "memory"]
    assert all("dedicated" in t for t in memory["taints"])
    tolerant = snapshot.pods[snapshot.pods["tolerations"].str.contains("dedicated")]
    assert set(tolerant["workload_name"].str.replace(r"-\d+$", "", regex=True)) == {"session-cache"}

    # the demo exercises topology (issue 18): three zones, round robin within each pool
    zones = snapshot.nodes["labels"].map(lambda t: json.loads(t)["topology.kubernetes.io/zone"])
    assert set(zones) == {"europe-west4-a", "europe-west4-b", "europe-west4-c"}
    general = snapshot.nodes[snapshot.nodes["pool"] == "general"].sort_values("node")
    assert list(zones[general.index][:3]) == ["europe-west4-a", "europe-west4-b", "europe-west4-c"]
    # spread constraints and pod (anti-)affinity on some pods, PDBs and PriorityClasses as objects
    pods = snapshot.pods
    report = json.loads((out / "whatif" / "report.json").read_text())
    # the pages replayed the busiest 2 days (--window 2d): the pods alive in (start, end]
    start, end = (pd.Timestamp(report["comparison"][k]) for k in ("start", "end"))
    began = pd.to_datetime(pods["created"], utc=True).fillna(
        pd.to_datetime(pods["first_seen"], utc=True)
    )
    ended = pd.to_datetime(pods["finished"], utc=True).fillna(
        pd.to_datetime(pods["last_seen"], utc=True)
    )
    replayed = pods[(began.isna() | (began <= end)) & (ended.isna() | (ended > start))]
    spreading = int((replayed["topology_spread"] != "[]").sum())
    anti = int(replayed["affinity"].str.contains('"podAntiAffinity"').sum())
    affine = int(replayed["affinity"].str.contains('"podAffinity"').sum())
    assert spreading > 0 and anti > 0 and affine > 0
    terms = int(replayed["affinity"].str.contains('"podAffinity"|"podAntiAffinity"').sum())
    assert snapshot.objects["PodDisruptionBudget"] and snapshot.objects["PriorityClass"]
    # each page's notes count them and name only the strategies on that page, a searched
    # configuration by its label (never the temporary file the comparison read it from)
    notes = {"report.json": report["notes"], "search.json": data["search"]["notes"]}
    for name, said in notes.items():
        text = " ".join(said)
        assert "analyzer-search-" not in text and ".yaml" not in text, name
        topology = next(n for n in said if n.startswith("Topology spread constraints of"))
        counts = [int(c.replace(",", "")) for c in re.findall(r"of ([\d,]+) pods", topology)]
        assert counts == [spreading, terms], topology
    # the observed placement honours required pod anti-affinity (constrained_placement): no pod
    # ran beside a pod its term excludes (a replica that found no node stays pending instead)
    breaking, carrying = anti_affinity_breaks(pods)
    assert carrying > 0 and breaking == 0
    on_page = {s["name"] for s in report["comparison"]["strategies"]} - {"observed"}
    topology = next(n for n in report["notes"] if n.startswith("Topology spread"))
    applied = topology.split(" are applied by ")[1].split(" (PodTopologySpread")[0]
    assert set(applied.split(", ")) == on_page
    searched = {r["name"] for r in rows if r["kind"] == "searched"}
    assert all(label in " ".join(notes["search.json"]) for label in searched)


def _pod(
    uid: str, node: str | None, app: str, anti: str | None, hours: tuple[int, int | None],
    ns: str = "shop",
) -> dict[str, object]:  # fmt: skip
    term = {
        "labelSelector": {"matchLabels": {"app": anti}},
        "topologyKey": "kubernetes.io/hostname",
    }
    affinity = (
        {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        if anti
        else {}
    )
    start, end = hours
    return {
        "uid": uid,
        "node": node,
        "namespace": ns,
        "labels": json.dumps({"app": app}),
        "affinity": json.dumps(affinity),
        "scheduled": pd.Timestamp(start, unit="h", tz="UTC"),
        "finished": pd.Timestamp(end, unit="h", tz="UTC") if end is not None else pd.NaT,
    }


def test_anti_affinity_breaks_by_hand() -> None:
    # the check the demo tests rely on (tests/anti_affinity_facts.py), on pods laid out by hand
    pods = pd.DataFrame(
        [
            _pod("a1", "n1", "api", "api", (0, None)),  # shares n1 with a2: breaks its term
            _pod("a2", "n1", "api", "api", (1, 5)),  # and the other way round
            _pod("a3", "n2", "api", "api", (0, None)),  # alone with its own kind on n2
            _pod("c1", "n2", "cache", None, (0, None)),  # no term: not counted, excluded by none
            _pod("a4", "n2", "api", "api", (0, None), ns="other"),  # its term sees "other" only
            _pod("a5", "n3", "api", "api", (0, 4)),  # left n3 at hour 4 ...
            _pod("a6", "n3", "api", "api", (4, None)),  # ... as a6 came: never together
            _pod("p1", None, "api", "api", (0, None)),  # never bound: not counted
        ]
    )
    # carrying a term and bound: a1–a6 but c1 (6); beside an excluded pod: a1 and a2
    assert anti_affinity_breaks(pods) == (2, 6)
    assert anti_affinity_breaks(pods[pods["uid"] != "a2"]) == (0, 5)


def test_demo_pages_say_the_window_they_replayed(default_demo: DemoRun) -> None:
    """The demo replays the snapshot's busiest 2 whole days (``--window 2d``): the what-if, the
    search and the monthly scenarios each say so, with the same dates."""
    out = default_demo.out
    snapshot = read_snapshot(out / "snapshot")
    report = json.loads((out / "whatif" / "report.json").read_text())
    search = json.loads((out / "whatif" / "search.json").read_text())["search"]
    start, end = (pd.Timestamp(report["comparison"][k]) for k in ("start", "end"))
    assert end - start == pd.Timedelta(days=2)
    assert snapshot.start <= start and end <= snapshot.end
    assert (start - snapshot.start) % pd.Timedelta(days=1) == pd.Timedelta(0)  # whole days
    assert (search["start"], search["end"]) == (
        report["comparison"]["start"],
        report["comparison"]["end"],
    )
    said = f"Replayed the busiest 2 days of the snapshot, {start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} UTC"
    assert report["notes"][0].startswith(said) and search["notes"][0].startswith(said)
    for page in ("report.html", "search.html"):
        assert said in (out / "whatif" / page).read_text()
    monthly = json.loads((out / "monthly" / "report.json").read_text())
    simulation = monthly["simulation"]
    assert (simulation["start"], simulation["end"]) == (
        report["comparison"]["start"],
        report["comparison"]["end"],
    )
    assert "over the busiest 2 days of it" in (out / "monthly" / "report.html").read_text()

"""The nightly report: numbers in report.json, CSVs, index, history, escaping, atomicity, overrides.

Expected values come from the hand-made cluster in ``report_snapshots`` (see its docstring) or
from the analysis functions the report is built on, run independently on the same snapshot.
"""

from __future__ import annotations

import csv
import json
import os
import re
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from report_snapshots import tiny_cluster

from analyzer.cli import main
from analyzer.core.errors import EXIT_PARTIAL, EXIT_VIOLATIONS, InputError
from analyzer.core.snapshot import write_snapshot
from analyzer.history.store import HistoryStore
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report
from analyzer.report.output import list_runs
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import find_violations

EVIL = "<script>alert(1)</script>"
DAY1 = date(2026, 11, 1)
DAY2 = date(2026, 11, 2)


def _report(out: Path, snapshot: Any = None, **settings: Any) -> tuple[Any, Any]:
    snapshot = snapshot if snapshot is not None else tiny_cluster()
    result = run_nightly(snapshot, NightlySettings(**settings))
    return result, write_nightly_report(result, out)


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_json_numbers_match_violations_and_hand_computed_usage(tmp_path: Path) -> None:
    snapshot = tiny_cluster(hot_name=EVIL)
    _, paths = _report(tmp_path, snapshot)
    data = _json(paths.json)
    independent = find_violations(snapshot, ThresholdConfig())
    summary = data["summary"]
    # The one-day snapshot starts at midnight, so the report's day is the whole snapshot.
    assert summary["breaches"]["value"] == independent.count == 1
    assert summary["nodes_with_breaches"]["value"] == 1
    # 72 samples × 5 min at 75 % > 65 % = 6 h, in seconds in the JSON.
    assert summary["breach_node_seconds"]["value"] == 360 * 60.0
    [breach] = data["tables"]["breaches"]
    assert breach["node"] == EVIL and breach["peak_pct"] == 75 and breach["threshold"] == 65
    nodes = {row["node"]: row for row in data["tables"]["nodes"]}
    hot = nodes[EVIL]
    # 216 samples at 1000m and 72 at 3000m of 4000m: avg 1500m = 37.5 %; nearest-rank p95 index
    # int(288 × 0.95) − 1 = 272 → 3000m = 75 %; p99 also 75 %.
    assert hot["cpu_avg_pct"] == pytest.approx(37.5)
    assert hot["cpu_p95_pct"] == pytest.approx(75.0)
    assert nodes["node-1"]["cpu_p95_pct"] == pytest.approx(25.0)
    assert hot["cpu_requested_pct"] == pytest.approx(25.0)  # 2 pods × 500m of 4000m
    assert hot["memory_requested_pct"] == pytest.approx(12.5)  # 2 GiB of 16 GiB
    pools = {row["pool"]: row for row in data["tables"]["pools"]}
    # general = hot node + node-2: total 2000m, 4000m while hot, of 8000m → p95 50 %, avg 31.25 %.
    assert pools["general"]["cpu_p95_pct"] == pytest.approx(50.0)
    assert pools["general"]["cpu_avg_pct"] == pytest.approx(31.25)
    assert summary["cpu_used_p95_pct"]["value"] == pytest.approx(50.0)
    assert summary["coverage_pct"]["value"] == pytest.approx(100.0)
    assert data["percentile_method"] == "nearest-rank"
    assert data["quality"]["exit_code"] == 0


def test_summary_cards_in_html_show_the_json_values(tmp_path: Path) -> None:
    _, paths = _report(tmp_path)
    html = paths.html.read_text()
    summary = _json(paths.json)["summary"]
    cards = re.findall(
        r'data-card="([a-z0-9_]+)">\s*<div class="label">(?:[^<]|<span[^>]*>[^<]*</span>)*</div>'
        r'\s*<div class="value">([^<]*)<',
        html,
    )
    assert len(cards) == len(summary)
    for key, shown in cards:
        card = summary[key]
        value, unit, kind = card["value"], card["unit"], card["kind"]
        text = shown.strip()
        if value is None:
            assert text == "–", key
        elif kind == "duration":  # seconds in the JSON, hours and minutes on the page
            assert unit == "s" and _seconds(text) == pytest.approx(value, abs=30), key
        elif kind == "count":  # an integer in both, never "2,762.0"
            assert isinstance(value, int) and text == f"{value:,}", key
        else:
            number, _, shown_unit = text.partition(" ")
            assert shown_unit == unit, key
            assert number.replace(",", "") == f"{value:.{_digits(number)}f}", key


def _seconds(text: str) -> float:
    """ "2 h 14 min" → 8040."""
    factor = {"d": 86400, "h": 3600, "min": 60, "s": 1}
    words = text.replace(",", "").split()
    return float(sum(float(n) * factor[u] for n, u in zip(words[::2], words[1::2], strict=True)))


def _digits(text: str) -> int:
    part = text.strip().split(".")
    return len(part[1]) if len(part) == 2 else 0


def test_one_csv_per_table_with_every_row(tmp_path: Path) -> None:
    result, paths = _report(tmp_path, tiny_cluster(n_nodes=6))
    data = _json(paths.json)
    manifest = _json(paths.run_dir / "manifest.json")
    for name, rows in data["tables"].items():
        assert f"{name}.csv" in manifest["files"]
        assert len(_csv(paths.run_dir / f"{name}.csv")) == len(rows)
    assert len(_csv(paths.run_dir / "nodes.csv")) == 6
    # hourly_usage is CSV only: 6 nodes × 24 hours.
    assert len(_csv(paths.run_dir / "hourly_usage.csv")) == 6 * 24
    assert sorted(p.name for p in paths.run_dir.iterdir()) == manifest["files"]
    assert result.summary.nodes == 6


def test_names_are_escaped_in_html(tmp_path: Path) -> None:
    _, paths = _report(tmp_path, tiny_cluster(hot_name=EVIL))
    html = paths.html.read_text()
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # The only script element is the report's own sortable-table script.
    assert html.count("<script>") == 1


def test_self_contained_and_printable(tmp_path: Path) -> None:
    _, paths = _report(tmp_path)
    html = paths.html.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched at view time
    assert "@media print" in html
    assert html.count('src="data:image/png;base64,') >= 3
    for section in ("summary", "violations", "usage", "requests", "fragmentation", "quality"):
        assert f'<section id="{section}">' in html
    assert "nearest-rank" in html and "MemTotal − MemAvailable" in html


def test_index_lists_every_run_and_deltas_use_previous_run(tmp_path: Path) -> None:
    snapshot = tiny_cluster(days=2)
    _report(
        tmp_path, snapshot, day=DAY1, thresholds=ThresholdConfig(usage={"cpu": 80, "memory": 95})
    )
    _, paths = _report(tmp_path, snapshot, day=DAY2)
    runs = list_runs(tmp_path)
    assert [r.day for r in runs] == ["2026-11-02", "2026-11-01"]
    index = (tmp_path / "index.html").read_text()
    assert 'href="2026-11-01/report.html"' in index and 'href="2026-11-02/report.html"' in index
    summary = _json(paths.json)["summary"]
    # Day 1 ran with a cpu threshold of 80 %, so it saw no breach; day 2 (65 %) sees one.
    assert summary["breaches"]["previous"] == 0
    assert summary["breaches"]["value"] == 1
    assert summary["breaches"]["delta"] == 1
    assert _json(paths.json)["previous_day"] == "2026-11-01"


def test_rerunning_a_day_replaces_it_in_history(tmp_path: Path) -> None:
    snapshot = tiny_cluster()
    _report(tmp_path, snapshot, thresholds=ThresholdConfig(usage={"cpu": 80, "memory": 95}))
    store = HistoryStore(tmp_path / "history")
    assert store.summary(DAY1)["breaches"] == 0  # type: ignore[index]
    # A file an earlier render wrote (its manifest names it) and this one does not: it goes.
    # A file nobody's manifest names is not ours and is never deleted (test_faults_files.py).
    (tmp_path / DAY1.isoformat() / "stale.csv").write_text("old\n")
    manifest_path = tmp_path / DAY1.isoformat() / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "files": [*manifest["files"], "stale.csv"]}))
    result, _ = _report(tmp_path, snapshot)
    assert store.days() == [DAY1]
    assert store.summary(DAY1)["breaches"] == 1  # type: ignore[index]
    # One day of rollups (node × resource × stat), not two appended copies.
    assert len(store.rollups()) == len(result.rollups) == 4 * 2 * 5
    assert not (tmp_path / DAY1.isoformat() / "stale.csv").exists()


def test_failure_mid_render_leaves_no_run_folder_and_keeps_the_old_one(tmp_path: Path) -> None:
    broken = tmp_path / "templates"
    broken.mkdir()
    (broken / "nightly.html.j2").write_text(
        '{% extends "default:nightly.html.j2" %}{% block quality %}{{ ctx.no_such_thing }}{% endblock %}'
    )
    out = tmp_path / "out"
    result = run_nightly(tiny_cluster(), NightlySettings())
    with pytest.raises(InputError, match="no_such_thing"):
        write_nightly_report(result, out, templates_dir=broken)
    assert not (out / DAY1.isoformat()).exists()
    assert not (out / "history").exists()
    assert [p.name for p in out.iterdir()] == []  # no temporary folder left behind
    good = write_nightly_report(result, out)
    before = good.html.read_bytes()
    with pytest.raises(InputError):
        write_nightly_report(result, out, templates_dir=broken)
    assert good.html.read_bytes() == before


def test_templates_dir_override_wins(tmp_path: Path) -> None:
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "nightly.html.j2").write_text(
        '{% extends "default:nightly.html.j2" %}'
        "{% block summary %}<p id=custom>Custom summary for {{ ctx.day }}</p>{{ super() }}{% endblock %}"
    )
    result = run_nightly(tiny_cluster(), NightlySettings())
    paths = write_nightly_report(result, tmp_path / "out", templates_dir=custom)
    html = paths.html.read_text()
    assert "<p id=custom>Custom summary for 2026-11-01</p>" in html
    assert 'data-card="breaches"' in html  # super() kept the built-in block


def test_an_edited_template_is_read_again_in_the_same_process(tmp_path: Path) -> None:
    """The environment is kept per templates folder (``report.render``): a template changed
    between two renders must still be the one rendered (jinja2 checks its file each time)."""
    import os

    custom = tmp_path / "templates"
    custom.mkdir()
    page = custom / "nightly.html.j2"
    result = run_nightly(tiny_cluster(), NightlySettings())
    for n, word in enumerate(("first", "second")):
        page.write_text(
            '{% extends "default:nightly.html.j2" %}'
            f"{{% block summary %}}<p id=custom>{word} edit</p>{{% endblock %}}"
        )
        os.utime(page, (1_000_000 + n, 1_000_000 + n))  # distinct mtimes, whatever the clock
        html = write_nightly_report(result, tmp_path / f"out{n}", templates_dir=custom)
        assert f"<p id=custom>{word} edit</p>" in html.html.read_text()


def _cli(args: list[str]) -> Any:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_cli_exit_codes(tmp_path: Path) -> None:
    snap = write_snapshot(tiny_cluster(), tmp_path / "snap")
    out = tmp_path / "out"
    ok = _cli(["report", "nightly", str(snap), "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "report.html" in ok.output
    fail = _cli(["report", "nightly", str(snap), "--out", str(out), "--fail-on-violations"])
    assert fail.exit_code == EXIT_VIOLATIONS
    # 30 of the last node's 288 samples missing: 89.6 % < 95 % → partial.
    gappy = write_snapshot(tiny_cluster(drop_node_samples=30), tmp_path / "gappy")
    partial = _cli(["report", "nightly", str(gappy), "--out", str(tmp_path / "o2")])
    assert partial.exit_code == EXIT_PARTIAL
    # Violations win over partial data when asked to fail on them.
    both = _cli(
        ["report", "nightly", str(gappy), "--out", str(tmp_path / "o3"), "--fail-on-violations"]
    )
    assert both.exit_code == EXIT_VIOLATIONS
    data = _json(tmp_path / "o2" / "2026-11-01" / "report.json")
    assert data["quality"]["incomplete_nodes"] == 1
    assert data["quality"]["observed_samples"] == 4 * 288 - 30


def test_cli_bad_date_is_input_error(tmp_path: Path) -> None:
    snap = write_snapshot(tiny_cluster(), tmp_path / "snap")
    bad = CliRunner().invoke(
        main, ["report", "nightly", str(snap), "--out", str(tmp_path / "o"), "--date", "2026-12-25"]
    )
    assert bad.exit_code == 2
    assert "--date" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "o").exists()


def test_history_store_round_trip(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    rollups = pd.DataFrame({"node": ["a"], "value": [1.0]})
    store.write_day(DAY2, rollups, {"breaches": 2})
    store.write_day(DAY1, rollups, {"breaches": 1})
    assert store.days() == [DAY1, DAY2]
    assert store.previous_summary(DAY2) == {"day": "2026-11-01", "breaches": 1}
    assert store.previous_summary(DAY1) is None
    assert list(store.summaries()["breaches"]) == [1, 2]


def test_hourly_usage_and_heatmap_rows_by_hand(tmp_path: Path) -> None:
    _, paths = _report(tmp_path, tiny_cluster(hot_name="hot"))
    rows = [r for r in _csv(paths.run_dir / "hourly_usage.csv") if r["node"] == "hot"]
    assert len(rows) == 24
    by_hour = {r["hour"][11:16]: float(r["cpu_pct"]) for r in rows}
    # 3000m of 4000m from the 06:05 sample to the 12:00 one: hours 06..11 at 75 %, the rest 25 %.
    assert {h for h, v in by_hour.items() if v == 75.0} == {f"{h:02d}:00" for h in range(6, 12)}
    assert {v for v in by_hour.values() if v != 75.0} == {25.0}
    heatmap = _json(paths.json)["charts"]["heatmap_cpu"]
    assert heatmap["rows"][0] == "hot"  # hottest node (by p95) first
    assert heatmap["rows"][-2:] == ["pool general (mean)", "pool memory (mean)"]
    # Pool general (hot + node-2) at 06:00: (75 + 25) / 2.
    assert heatmap["values"][-2][6] == pytest.approx(50.0)


def test_config_file_thresholds_apply(tmp_path: Path) -> None:
    snap = write_snapshot(tiny_cluster(), tmp_path / "snap")
    config = tmp_path / "analyzer.yaml"
    config.write_text("thresholds:\n  cpu: 80\nreport-nightly:\n  fail-on-violations: true\n")
    run = _cli(
        ["--config", str(config), "report", "nightly", str(snap), "--out", str(tmp_path / "o")]
    )
    assert run.exit_code == 0, run.output  # 75 % is not above 80 %
    assert "0 threshold breach(es)" in run.output
    flag = _cli(
        [
            "--config",
            str(config),
            "report",
            "nightly",
            str(snap),
            "--out",
            str(tmp_path / "o"),
            "--cpu",
            "70",
        ]
    )
    assert (
        flag.exit_code == EXIT_VIOLATIONS
    )  # the flag beats the file; the file's fail-on-violations holds


def test_leftovers_of_killed_runs_are_removed(tmp_path: Path) -> None:
    leftover = tmp_path / ".2026-11-01.abcd.tmp"
    leftover.mkdir(parents=True)
    (leftover / "report.html").write_text("half")
    old = 1_000_000_000  # 2001: long dead
    os.utime(leftover, (old, old))
    fresh = tmp_path / ".2026-11-02.efgh.tmp"  # may belong to a run still going: kept
    fresh.mkdir()
    _report(tmp_path)
    assert not leftover.exists()
    assert fresh.exists()


def test_failed_query_in_collector_coverage_makes_the_data_partial() -> None:
    snapshot = tiny_cluster()
    snapshot.meta.coverage = {"queries": {"pod_cpu_usage": {"error": "timeout", "series": 0}}}
    result = run_nightly(snapshot, NightlySettings())
    assert result.quality.coverage == 1.0  # every node sample is there ...
    assert result.quality.partial  # ... but a query failed
    assert result.exit_code == EXIT_PARTIAL
    assert "query pod_cpu_usage failed: timeout" in result.quality.warnings


def test_breach_across_midnight_is_split_between_the_two_days(tmp_path: Path) -> None:
    snapshot = tiny_cluster(days=2, hot_name="hot")
    usage = snapshot.node_usage
    stamps = usage["timestamp"]
    night = (usage["node"] == "hot") & (stamps > pd.Timestamp("2026-11-01T23:00Z"))
    night &= stamps <= pd.Timestamp("2026-11-02T01:00Z")
    usage.loc[night, "cpu"] = 3000.0  # 75 % from 23:00 to 01:00 (24 five-minute samples)
    day1 = run_nightly(snapshot, NightlySettings(day=DAY1))
    day2 = run_nightly(snapshot, NightlySettings(day=DAY2))
    # Each day: its own 06:00-12:00 breach (360 min) plus its hour of the night breach.
    for result, night_start, night_end in (
        (day1, "2026-11-01T23:00Z", "2026-11-02T00:00Z"),
        (day2, "2026-11-02T00:00Z", "2026-11-02T01:00Z"),
    ):
        breaches = result.violations.breaches.sort_values("start")
        assert result.summary.breach_node_seconds == 420 * 60.0
        night_rows = breaches[breaches["minutes"] == 60.0]
        assert len(night_rows) == 1
        assert night_rows["start"].iloc[0] == pd.Timestamp(night_start)
        assert night_rows["end"].iloc[0] == pd.Timestamp(night_end)


def test_chart_labels_are_literal_text() -> None:
    # With mathtext on, "$\frac{$" would be parsed as TeX and fail; names must be drawn as-is.
    from analyzer.report.charts import heatmap

    chart = heatmap(
        np.array([[10.0, np.nan]]), [r"node-$\frac{$"], ["00:00", "01:00"], title="t", alt="a"
    )
    assert chart.data_uri.startswith("data:image/png;base64,")


def test_days_heatmap_reads_rollups_back_from_history(tmp_path: Path) -> None:
    snapshot = tiny_cluster(days=2, hot_name="hot")
    _report(tmp_path, snapshot, day=DAY1)
    _, paths = _report(tmp_path, snapshot, day=DAY2)
    chart = _json(paths.json)["charts"]["heatmap_days_cpu"]
    assert chart["days"] == ["2026-11-01", "2026-11-02"]
    assert chart["rows"][0] == "hot"
    # p95 of each day: 75 % on the hot node (day 1 read back from history/rollups), 25 % elsewhere.
    assert chart["values"][0] == [75.0, 75.0]
    assert chart["values"][1] == [25.0, 25.0]


def test_colour_is_never_the_only_carrier_of_good_or_bad(tmp_path: Path) -> None:
    # issue 29 item 5: every good/bad/warn card carries a sign and a word, and every coloured
    # change says worse or better in words (about one man in twelve cannot tell red from green).
    _, paths = _report(tmp_path)
    page = paths.html.read_text()
    cards = re.findall(
        r'<div class="card (bad|good|warn)" data-card="[^"]+">(.*?)</div>\s*</div>', page, re.S
    )
    assert cards, "the report has no coloured card to check"
    words = {"bad": "⚠ attention", "warn": "! check", "good": "✓ ok"}
    for state, body in cards:
        assert words[state] in body, (state, body)
    for trend, body in re.findall(r'<div class="delta (worse|better)">(.*?)</div>', page, re.S):
        assert ("▲ worse" if trend == "worse" else "▼ better") in body, body
    assert "red = worse" not in page


@pytest.mark.parametrize(("trend", "word"), [("worse", "▲ worse"), ("better", "▼ better")])
def test_a_coloured_change_says_worse_or_better_in_words(trend: str, word: str) -> None:
    from types import SimpleNamespace

    from analyzer.report.render import make_environment

    card = SimpleNamespace(state="bad", key="breaches", label="Breaches", value_text="9",
                           delta=2, delta_text="+2", trend=trend)  # fmt: skip
    macros = make_environment(None).get_template("macros.html.j2").module
    html = str(macros.card(card))  # type: ignore[attr-defined]
    assert f'class="delta {trend}"' in html and word in html and "⚠ attention" in html

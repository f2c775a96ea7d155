"""``--metrics-textfile``: the run's metrics for node-exporter, checked against the report it wrote.

The file is parsed back twice, by ``promtool check metrics`` (Prometheus' own linter) and by the
reference Python text parser (``prometheus_client``); its values are compared with the
``report.json`` the same run wrote and with the truth of the hand-made inputs
(tests/report_snapshots.py, tests/monthly_history.py).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from monthly_history import PoolTruth, const, line, write_history
from prometheus_client.parser import text_string_to_metric_families
from reliability_doc import documented_exit
from report_snapshots import tiny_cluster

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.monthly.months import Month
from analyzer.monthly.review import ReviewSettings, build_review
from analyzer.report.metrics import (
    MAX_POOLS,
    Family,
    Sample,
    carry_over,
    escape_label_value,
    monthly_metrics,
    render,
)

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def parse(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(name, sorted labels) → value, read with the reference parser."""
    values = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        assert family.type == "gauge" and family.documentation, family.name
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def promtool_check(path: Path) -> None:
    if not Path(PROMTOOL).is_file():
        pytest.skip("promtool not installed (apt-get install prometheus)")
    proc = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=path.read_bytes(), capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snap") / "snap"
    write_snapshot(tiny_cluster(), path)
    return path


def test_nightly_textfile_matches_report_json(snapshot: Path, tmp_path: Path) -> None:
    prom = tmp_path / "textfile" / "analyzer-nightly.prom"
    result = _run("report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
                  "--metrics-textfile", str(prom))  # fmt: skip
    assert result.exit_code == 0, result.output
    promtool_check(prom)
    values = parse(prom)
    report = json.loads((tmp_path / "out" / "2026-11-01" / "report.json").read_text())
    cards = {k: v["value"] for k, v in report["summary"].items()}
    # The tiny cluster's hot node runs at 75 % CPU (> 65 %) for 360 minutes: one node, 6 h.
    assert (
        values[("analyzer_nightly_nodes_over_threshold", ())] == 1 == cards["nodes_with_breaches"]
    )
    assert (
        values[("analyzer_nightly_breach_node_seconds", ())]
        == 21600
        == cards["breach_node_seconds"]
    )
    assert values[("analyzer_nightly_breaches", ())] == cards["breaches"]
    assert values[("analyzer_nightly_nodes", ())] == 4 == cards["nodes"]
    assert values[("analyzer_nightly_coverage_ratio", ())] == pytest.approx(
        cards["coverage_pct"] / 100
    )
    assert values[("analyzer_nightly_coverage_ratio", ())] == 1.0  # every sample is there
    frag = values[("analyzer_nightly_fragmentation_ratio", (("resource", "cpu"),))]
    assert frag == pytest.approx(cards["fragmentation_pct"] / 100)
    # Headroom per pod shape: one sample per common shape, as report.json's table says.
    shapes = report["tables"]["shape_headroom"]
    assert shapes, "the tiny cluster's pods give common shapes"
    for row in shapes:
        labels = (("shape", row["shape"]), ("source", "common"))
        assert values[("analyzer_nightly_headroom_copies", labels)] == row["copies_now"]
        assert values[("analyzer_nightly_headroom_copies_min", labels)] == row["copies_min"]
    # The report day 2026-11-01 ends at the next midnight UTC.
    assert values[("analyzer_nightly_report_day_end_timestamp_seconds", ())] == 1793577600
    run = (("command", "nightly"),)
    assert values[("analyzer_run_success", run)] == 1
    assert values[("analyzer_run_exit_code", run)] == 0
    assert values[("analyzer_run_duration_seconds", run)] > 0
    last = values[("analyzer_run_last_success_timestamp_seconds", run)]
    assert last == values[("analyzer_run_timestamp_seconds", run)]
    assert not [p.name for p in prom.parent.iterdir() if p.name != prom.name]  # no temporary left


def test_a_failed_run_keeps_the_last_success(snapshot: Path, tmp_path: Path) -> None:
    prom = tmp_path / "analyzer-nightly.prom"
    out = tmp_path / "out"
    assert _run("report", "nightly", str(snapshot), "--out", str(out),
                "--metrics-textfile", str(prom)).exit_code == 0  # fmt: skip
    before = parse(prom)
    # A day without data: exit 2, nothing new written; the file says so and keeps the rest.
    failed = _run("report", "nightly", str(snapshot), "--out", str(out),
                  "--metrics-textfile", str(prom), "--date", "2020-01-01")  # fmt: skip
    assert failed.exit_code == 2
    promtool_check(prom)
    after = parse(prom)
    run = (("command", "nightly"),)
    assert after[("analyzer_run_success", run)] == 0
    assert after[("analyzer_run_exit_code", run)] == 2
    assert (
        after[("analyzer_run_timestamp_seconds", run)]
        > before[("analyzer_run_timestamp_seconds", run)]
    )
    kept = {k: v for k, v in before.items() if k[0] not in {
        "analyzer_run_success", "analyzer_run_exit_code", "analyzer_run_duration_seconds",
        "analyzer_run_timestamp_seconds"}}  # fmt: skip
    assert ("analyzer_run_last_success_timestamp_seconds", run) in kept
    assert {k: after[k] for k in kept} == kept
    # A second failure in a row still keeps them (the carried lines are carried again).
    assert _run("report", "nightly", str(snapshot), "--out", str(out),
                "--metrics-textfile", str(prom), "--date", "2020-01-01").exit_code == 2  # fmt: skip
    assert {k: parse(prom)[k] for k in kept} == kept


def test_a_failure_before_any_success_has_no_last_success(tmp_path: Path) -> None:
    prom = tmp_path / "analyzer-nightly.prom"
    result = _run("report", "nightly", str(tmp_path / "missing"), "--out", str(tmp_path / "o"),
                  "--metrics-textfile", str(prom))  # fmt: skip
    assert result.exit_code == 2
    values = parse(prom)
    assert values[("analyzer_run_success", (("command", "nightly"),))] == 0
    assert not [k for k in values if k[0] == "analyzer_run_last_success_timestamp_seconds"]


def test_monthly_textfile_days_until_and_nodes_match_report_json(tmp_path: Path) -> None:
    # Pool "a": requested CPU peak 40.25 + 0.5·t cores from 1 August; the line (80 − 8 = 72
    # cores) is reached on 4 October (tests/test_monthly.py works it out), 4 days after the
    # history ends on 30 September; the decision adds 12 nodes. Pool "b" is flat and far below
    # its lines: no date within the horizon (+Inf), and a release decision.
    write_history(tmp_path / "h", date(2026, 8, 1), 61, [
        PoolTruth("a", requested_cpu=line(40.25, 0.5), used_cpu_p95=const(10.0)),
        PoolTruth("b", requested_cpu=const(20.0), requested_memory=const(50.0),
                  used_cpu_p95=const(10.0), used_memory_p95=const(40.0)),
    ])  # fmt: skip
    prom = tmp_path / "analyzer-monthly.prom"
    result = _run("report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r"),
                  "--month", "2026-09", "--metrics-textfile", str(prom))  # fmt: skip
    assert result.exit_code == 0, result.output
    promtool_check(prom)
    values = parse(prom)
    days = "analyzer_monthly_time_to_capacity_line_seconds"
    stamp = "analyzer_monthly_capacity_line_timestamp_seconds"

    def key(
        name: str, pool: str, series: str, bound: str
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        return (name, (("bound", bound), ("pool", pool), ("series", series)))

    assert values[key(days, "a", "requested_cpu_cores", "expected")] == 4 * 86400
    assert values[key(days, "a", "requested_cpu_cores", "earliest")] == 4 * 86400
    assert values[key(stamp, "a", "requested_cpu_cores", "earliest")] == 1791072000  # 2026-10-04
    assert values[("analyzer_monthly_nodes_to_add", (("pool", "a"),))] == 12
    assert values[("analyzer_monthly_nodes_to_release", (("pool", "a"),))] == 0
    assert values[("analyzer_monthly_nodes_to_add", (("pool", "b"),))] == 0
    assert values[("analyzer_monthly_pools", ())] == 2
    assert values[("analyzer_monthly_pools_not_exported", ())] == 0
    # Every pool, series and bound against report.json: days from the day before the forecast's
    # first day; no date → +Inf.
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    for pool in report["pools"]:
        first = date.fromisoformat(pool["forecast"]["series"][0]["date"])
        release = pool["decision"]["nodes"] if pool["decision"]["action"] == "release" else 0
        assert values[("analyzer_monthly_nodes_to_release", (("pool", pool["name"]),))] == release
        for entry in pool["forecast"]["exhaustion"]:
            for bound in ("expected", "earliest"):
                when = entry[f"{bound}_date"]
                want = math.inf if when is None else (date.fromisoformat(when) - first).days + 1
                want *= 86400
                assert values[key(days, pool["name"], entry["resource"], bound)] == want
    assert values[("analyzer_monthly_nodes_to_release", (("pool", "b"),))] > 0


def test_a_pool_name_needing_escapes_reads_back_whole(tmp_path: Path) -> None:
    name = 'we"ird\\pool\nnext line} x="y\u2028z'  # U+2028 is not escaped
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth(name)])
    prom = tmp_path / "m.prom"
    result = _run("report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r"),
                  "--month", "2026-09", "--metrics-textfile", str(prom))  # fmt: skip
    assert result.exit_code == 0, result.output
    promtool_check(prom)
    assert escape_label_value(name) in prom.read_text()
    pools = {dict(k[1])["pool"] for k in parse(prom) if k[0] == "analyzer_monthly_nodes_to_add"}
    assert pools == {name}


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda tmp: tmp / "metrics.txt", "must end in .prom"),
        (lambda tmp: tmp / "a-file" / "x.prom", "is a file, not a folder"),
        (lambda tmp: tmp, "is a folder"),
    ],
)
def test_an_unusable_textfile_is_refused_before_any_work(
    snapshot: Path, tmp_path: Path, make: object, text: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    target = make(tmp_path)  # type: ignore[operator]
    if target == tmp_path:
        target = tmp_path / "dir.prom"
        target.mkdir()
    result = _run("report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
                  "--metrics-textfile", str(target))  # fmt: skip
    assert result.exit_code == documented_exit("metrics-textfile-unwritable")
    assert text in result.output and "--metrics-textfile" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before the report


def test_the_pool_cap_keeps_the_most_urgent_pools(tmp_path: Path) -> None:
    # Three pools; "b" reaches its requested-CPU line on 4 October (as pool "a" in the test
    # above), "a" and "c" are flat and far below theirs. With room for one pool, "b" is kept
    # (the earliest date first, not the first name) and two are counted as left out.
    flat = {"requested_cpu": const(20.0), "used_cpu_p95": const(10.0)}
    write_history(tmp_path, date(2026, 8, 1), 61, [
        PoolTruth("a", **flat),  # type: ignore[arg-type]
        PoolTruth("b", requested_cpu=line(40.25, 0.5), used_cpu_p95=const(10.0)),
        PoolTruth("c", **flat),  # type: ignore[arg-type]
    ])  # fmt: skip
    review = build_review(tmp_path, ReviewSettings(month=Month(2026, 9)))
    families = {f.name: f for f in monthly_metrics(review, max_pools=1)}
    pools = {dict(s.labels)["pool"] for f in families.values() for s in f.samples if s.labels}
    assert pools == {"b"}
    assert families["analyzer_monthly_pools"].samples[0].value == 3
    assert families["analyzer_monthly_pools_not_exported"].samples[0].value == 2
    assert MAX_POOLS == 100  # docs/metrics.md states this cap and the series counts it gives


# Every Unicode line break, control characters, quotes, backslashes, braces and formula prefixes.
_ODD = st.text(
    alphabet=st.sampled_from(list('\n\r\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e\t\x00"\\{}=,+-@ aé日')),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(_ODD, min_size=1, max_size=4, unique=True))
def test_any_pool_name_reads_back_whole_and_survives_a_carry_over(names: list[str]) -> None:
    family = Family(
        "analyzer_monthly_nodes_to_add", "h", tuple(Sample((("pool", n),), 1.0) for n in names)
    )
    text = render([family])
    parsed = [s.labels["pool"] for f in text_string_to_metric_families(text) for s in f.samples]
    assert parsed == names
    # A failed run's textfile keeps these lines unchanged (they are not status families).
    assert carry_over(text) == text

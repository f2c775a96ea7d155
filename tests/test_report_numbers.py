"""The nightly page's numbers a platform engineer acts on: headroom, free capacity, units.

Expected values are worked out by hand from the small clusters of ``report_snapshots``: nodes of
4 cores / 16 GiB, each running two pods of 500m / 1 GiB, so every node has 3 cores and 14 GiB
free and fits 6 more pods of that shape (CPU binds: 3000m / 500m).
"""

from __future__ import annotations

import csv
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from report_snapshots import ending_early, tiny_cluster, with_gpus

from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report import format as fmt
from analyzer.report.nightly_report import write_nightly_report

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
NODES = 12  # 24 pods: 23 of 500m / 1 GiB, one of them also asks for a GPU


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def early(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two unchanged days; the second's data stops at 23:55 (a run just after midnight)."""
    snapshot = ending_early(with_gpus(tiny_cluster(n_nodes=NODES, days=2)), "2026-11-02T23:55:00Z")
    out = tmp_path_factory.mktemp("early")
    results = {}
    for day in (DAY1, DAY2):
        results[day] = run_nightly(snapshot, NightlySettings(day=day))
        paths = write_nightly_report(results[day], out)
    return {"results": results, "paths": paths, "json": json.loads(paths.json.read_text())}


def test_headroom_is_taken_at_the_last_instant_with_data(early: dict[str, Any]) -> None:
    day1, day2 = early["results"][DAY1], early["results"][DAY2]
    # 12 nodes × 6 pods of the common shape on both days: the cluster did not change.
    assert day1.headroom.at.isoformat() == "2026-11-02T00:00:00+00:00"
    assert int(day1.headroom.table["fit"].iloc[0]) == NODES * 6
    assert day2.headroom.at.isoformat() == "2026-11-02T23:55:00+00:00"
    assert int(day2.headroom.table["fit"].iloc[0]) == NODES * 6
    answer = early["json"]["answers"]["fragmentation_detail"]
    assert f"Headroom at 23:55 UTC (the last instant with data): {NODES * 6} more pods" in answer
    short = early["json"]["answers"]["fragmentation"]  # the first screen's: the instant, the count
    assert f"Headroom at 23:55 UTC: {NODES * 6} more pods of the most common shape." in short
    assert "at 23:55 UTC" in early["paths"].html.read_text()
    assert early["json"]["headroom_at"] == "2026-11-02T23:55:00Z"


def test_a_time_without_any_node_is_no_data_not_zero() -> None:
    from analyzer.fragmentation.measure import fragmentation

    snapshot = ending_early(tiny_cluster(n_nodes=2), "2026-11-01T23:55:00Z")
    end = snapshot.end  # 24:00: every node was last seen at 23:55
    result = fragmentation(snapshot, times=[end])
    assert result.headroom["fit"].isna().all()
    assert result.over_time["nodes"].eq(0).all()


def test_free_capacity_covers_every_resource_and_explains_a_full_gpu_ratio(
    early: dict[str, Any],
) -> None:
    rows = {r["resource"]: r for r in early["json"]["tables"]["free_capacity"]}
    assert set(rows) == {"cpu", "memory", "nvidia.com/gpu"}
    # Free: 12 × 3 cores, 12 × 14 GiB; GPUs 2 × 4 minus the one GPU pod = 7.
    assert rows["cpu"]["free"] == pytest.approx(36.0) and rows["cpu"]["unit"] == "cores"
    assert rows["memory"]["free"] == pytest.approx(168.0) and rows["memory"]["unit"] == "GiB"
    assert rows["nvidia.com/gpu"]["free"] == pytest.approx(7.0)
    # Every free core/GiB fits the common shape; no common shape asks for a GPU (the one GPU pod
    # is under 5 % of pods), so FGD counts all 7 free GPUs as unusable.
    assert rows["cpu"]["frag_pct"] == 0.0 and rows["memory"]["frag_pct"] == 0.0
    assert rows["nvidia.com/gpu"]["frag_pct"] == pytest.approx(100.0)
    answer = early["json"]["answers"]["fragmentation_detail"]  # the section's full answer
    assert "CPU 0.0 % of 36.0 cores free" in answer
    assert "memory 0.0 % of 168.0 GiB free" in answer
    assert "nvidia.com/gpu 100.0 % of 7.0 GPUs free" in answer
    assert "none of the 1 common pod shapes requests nvidia.com/gpu" in answer
    # the first screen's short answer: CPU and memory, the GPUs' undefined share in one aside
    # (no pod of the common shapes requests one: 0 % of them)
    assert rows["nvidia.com/gpu"]["asking_pct"] == 0.0 and rows["cpu"]["asking_pct"] == 100.0
    short = early["json"]["answers"]["fragmentation"]
    assert "CPU 0.0 % of 36.0 cores free" in short and "memory 0.0 % of 168.0 GiB free" in short
    assert (
        "Not meaningful here: nvidia.com/gpu (under 5 % of common-shape pods request it)." in short
    )
    assert "100.0 %" not in short


def test_shape_counts_are_the_pods_in_each_shape(early: dict[str, Any]) -> None:
    shapes = _csv(early["paths"].run_dir / "shapes.csv")
    # The 24 pods: 23 of 500m / 1 GiB and the GPU pod (left out of the 95 % shapes).
    assert [(r["label"], r["pods"]) for r in shapes] == [("500m cpu, 1Gi memory", "23")]
    assert early["results"][DAY2].fragmentation.pods_considered == 24


def test_counts_in_side_files_are_integers(early: dict[str, Any]) -> None:
    run_dir = early["paths"].run_dir
    for name, column in (("headroom", "fit"), ("shapes", "pods")):
        values = [r[column] for r in _csv(run_dir / f"{name}.csv")]
        assert values and all(re.fullmatch(r"\d+", v) for v in values), (name, values)
    summary = early["json"]["summary"]
    for key in ("nodes", "pods", "breaches", "nodes_with_breaches"):
        assert isinstance(summary[key]["value"], int), key


def test_a_zero_share_is_said_in_words_not_drawn(early: dict[str, Any]) -> None:
    chart = early["json"]["charts"]["fragmentation"]
    # CPU and memory: 0 % unusable and 0 % stranded all day → named, not drawn; GPU 100 % drawn.
    assert "CPU: unusable by common shapes (FGD)" in chart["flat"]
    assert "memory: stranded" in chart["flat"]
    assert [k for k in chart if k not in ("times", "flat")] == [
        "nvidia.com/gpu: unusable by common shapes (FGD)"
    ]
    assert "At 0 % all day (not drawn)" in early["paths"].html.read_text()


def test_delta_units_and_colours() -> None:
    from analyzer.report.views import Card

    share = Card("cpu_requested_pct", "CPU requested", 41.5, "%", previous=40.0, kind="pct",
                 higher_is_worse=None)  # fmt: skip
    assert share.value_text == "41.5 %" and share.delta_text == "+1.5 pp"
    assert share.trend == "neutral"
    idle = Card("idle", "Idle memory", 10.0, "GiB", previous=12.5)
    assert idle.delta_text == "−2.5 GiB" and idle.trend == "better"
    count = Card("pods", "Pods", 2762, kind="count", previous=2800)
    assert count.value_text == "2,762" and count.delta_text == "−38"
    time = Card("t", "Node-time", 8040.0, "s", kind="duration", previous=3600.0)
    assert time.value_text == "2 h 14 min" and time.delta_text == "+1 h 14 min"
    assert time.trend == "worse"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 min"), (45, "45 s"), (90, "1 min 30 s"), (3600, "1 h"), (8040, "2 h 14 min"),
     (8069, "2 h 14 min"), (90000, "1 d 1 h"), (None, "–"), (float("nan"), "–")],
)  # fmt: skip
def test_durations_in_words(seconds: float | None, text: str) -> None:
    assert fmt.duration(seconds) == text


def test_formatting_helpers() -> None:
    assert fmt.count(2762.0) == "2,762"
    assert fmt.count(float("nan"), missing="no data") == "no data"
    assert fmt.cores(30500) == "30.5 cores"
    assert fmt.gib(3 * 2**30) == "3.0 GiB"
    assert fmt.pct(12.345) == "12.3 %"
    assert fmt.amount("nvidia.com/gpu", 7) == "7 GPUs"
    assert fmt.amount("ephemeral-storage", 2**31) == "2.0 GiB"
    assert fmt.signed(0.01, 1, "pp") == "±0 pp"
    assert fmt.duration(54 * 3600, days=False) == "54 h"


def test_index_shows_node_time_in_words(early: dict[str, Any]) -> None:
    index = (early["paths"].index).read_text()
    # node-0 runs hot 06:05-12:00 each day: 6 h of node-time over the 65 % threshold.
    rows = re.findall(r'<td class="num" data-v="21600.0">([^<]*)</td>', index)
    assert rows == ["6 h", "6 h"]


def test_a_stored_day_with_minutes_is_still_compared(tmp_path: Path) -> None:
    """Days stored before ``breach_node_seconds`` kept ``breach_minutes``: still a previous run."""
    snapshot = tiny_cluster(days=2)
    write_nightly_report(run_nightly(snapshot, NightlySettings(day=DAY1)), tmp_path)
    stored = tmp_path / "history" / "summary" / f"{DAY1}.json"
    old = json.loads(stored.read_text())
    old["breach_minutes"] = old.pop("breach_node_seconds") / 60 - 60  # an hour less that day
    stored.write_text(json.dumps(old))
    paths = write_nightly_report(run_nightly(snapshot, NightlySettings(day=DAY2)), tmp_path)
    card = json.loads(paths.json.read_text())["summary"]["breach_node_seconds"]
    assert card["value"] == 6 * 3600.0
    assert card["previous"] == 5 * 3600.0 and card["delta"] == 3600.0


def test_template_filters_old_and_new() -> None:
    from analyzer.report.render import make_environment

    env = make_environment()
    text = env.from_string(
        "{{ 2762.0 | count }}|{{ 8040 | duration }}|{{ 1.5 | delta }}|{{ -2 | delta(0) }}|"
        "{{ x | num(1) }}|{{ none | num }}|{{ 30500 | cores }}|{{ 40.06 | pct }}"
    ).render(x=1234.56)
    assert text == "2,762|2 h 14 min|+1.5|-2|1,234.6|–|30.5 cores|40.1 %"


def test_table_cells_show_no_sign_on_a_value_that_rounds_to_zero() -> None:
    """The what-if table printed koord-loadaware's -69 of 183,436 core-hours as "-0.0 %": a loss
    the page's own rounding hides; the cells follow ``number``'s rule, a real loss keeps its sign."""
    import pandas as pd

    from analyzer.report.views import Column, TableView

    frame = pd.DataFrame({"share": [-0.04, -0.06, 0.0], "count": [-0.3, -1.6, 2.0]})
    view = TableView(
        "t", "T", [Column("share", "Share", "pct"), Column("count", "Count", "int")], frame
    )
    texts = [[cell.text for cell in cells] for _, cells in view.rows()]
    assert texts == [["0.0 %", "0"], ["-0.1 %", "-2"], ["0.0 %", "2"]]


def test_a_table_built_from_no_rows_keeps_its_columns() -> None:
    """The monthly back-test's table is ``pd.DataFrame(rows)``; with no row (a stored forecast with
    no day in common with the month) that frame has no columns, and writing its CSV raised
    KeyError, stopping ``analyzer demo --nodes 60 --days 3 --history-days 45`` (the container
    test's demo) on some dates. An empty table keeps its header; a table with rows still
    must hold every column it shows."""
    import pandas as pd
    import pytest

    from analyzer.report.views import Column, TableView

    columns = [Column("pool", "Pool"), Column("days", "Days", "int")]
    view = TableView("backtest", "B", columns, pd.DataFrame([]))
    assert list(view.csv_frame().columns) == ["pool", "days"]
    assert view.csv_frame().empty and view.records() == [] and view.rows() == []
    assert view.total_rows == 0
    partial = TableView("t", "T", columns, pd.DataFrame({"pool": ["a"]}))
    with pytest.raises(KeyError):
        partial.csv_frame()


def test_nightly_chart_titles_fit_on_their_image(early: dict[str, Any]) -> None:
    """A chart title over ``TITLE_LIMIT`` characters is cut in its middle where it is drawn
    (``charts.fit_labels``): the demo's memory heatmap read "… — 30 no…s with the highest p95 …".
    Every nightly chart's title, with the longest resource name, fits whole."""
    from analyzer.report.charts import TITLE_LIMIT
    from analyzer.report.nightly_charts import build_charts

    result = early["results"][DAY2]
    titles = [chart.title for chart in build_charts(result, {}).values()]
    assert any("memory" in t and "hourly MEAN" in t for t in titles)
    too_long = [t for t in titles if len(t) > TITLE_LIMIT]
    assert too_long == []


def test_a_stored_forecast_with_no_series_is_said_so_not_no_day_in_common() -> None:
    """The 60-node demo's September review had 15 days of history and stored a forecast with no
    series; October's back-test then said "has no day in common", which is not why. The sentence
    names the real reason, and a forecast with series but no common day keeps the old one."""
    import datetime as dt

    import pandas as pd

    from analyzer.monthly.backtest import score_forecast
    from analyzer.monthly.months import Month
    from analyzer.report.monthly import _backtest_sentence

    daily = pd.DataFrame(
        {"day": [dt.date(2026, 10, d) for d in range(1, 32)], "pool": "general",
         "requested_peak_cpu": 40.0}
    )  # fmt: skip
    empty = {"month": "2026-09", "pools": {"general": {}, "gpu": {}}}
    b = score_forecast(empty, daily, Month(2026, 10))
    assert b["days_scored"] == 0 and b["series_stored"] == 0 and b["rows"] == []
    text = _backtest_sentence({"backtest": b, "month": "2026-10"})
    assert "holds no forecast series" in text and "no day in common" not in text
    point = {"lo80": 0, "hi80": 1, "lo95": 0, "hi95": 1, "mean": 0.5}
    november = {"month": "2026-09", "pools": {"general": {"requested_cpu_cores": {
        "method": "linear", "series": [{**point, "date": "2026-11-02"}]}}}}  # fmt: skip
    b = score_forecast(november, daily, Month(2026, 10))
    assert b["days_scored"] == 0 and b["series_stored"] == 1
    assert "no day in common" in _backtest_sentence({"backtest": b, "month": "2026-10"})

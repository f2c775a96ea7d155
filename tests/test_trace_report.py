"""The trace HTML report: self-contained, shows the JSON's numbers, never takes over a used folder."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from trace_fixtures import fake_policy, fake_single, fake_variants

from analyzer.core.errors import InputError
from analyzer.report.trace import ranking, write_trace_report
from analyzer.report.trace_variants import best_policies
from analyzer.trace.runner import TraceConfig, run_trace


@pytest.fixture(scope="module")
def data() -> dict:  # type: ignore[type-arg]
    config = TraceConfig(policies=("BestFit", "Random"), seeds=(42,), tune=1.0, workers=1)
    return run_trace(config).to_json()


def test_report_files_and_numbers(data: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    out = tmp_path / "trace"
    html_path = write_trace_report(data, out)
    html = html_path.read_text()
    assert sorted(p.name for p in out.iterdir()) == ["curve.csv", "report.html", "report.json"]
    assert json.loads((out / "report.json").read_text()) == data
    assert "13.94 %" in html  # the empty-cluster fragmentation ratio is reported
    assert html.count("data:image/png;base64,") == 2  # charts embedded: one file, opens offline
    assert "<script src=" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert 'data-policy="BestFit"' in html and "deviations" in html.lower()
    # ordering section ranks by allocation at the last table point available
    assert [name for name, _ in ranking(data, "100")] == sorted(
        data["policies"], key=lambda n: -data["policies"][n]["table"]["100"]["alloc_pct_mean"]
    )
    rows = (out / "curve.csv").read_text().splitlines()
    assert rows[0].startswith("pods_file,policy,arrived_pct") and len(rows) > 100


def test_report_refuses_folder_with_other_files(data: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="other files"):
        write_trace_report(data, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def _m3_table(html: str) -> dict[str, dict[str, float]]:
    """The HTML comparison table: metric → {column header: shown value}."""
    table = html.split('<section id="comparison">', 1)[1].split("</table>", 1)[0]
    headers = re.findall(r'<th class="num">([^<]+)</th>', table)
    out = {}
    for metric, cells in re.findall(r'<tr data-metric="([^"]+)">(.*?)</tr>', table, flags=re.S):
        values = [
            float(v.replace(",", "")) for v in re.findall(r'<td class="num">([^<]+)</td>', cells)
        ]
        out[metric] = dict(zip(headers, values, strict=True))
    return out


def test_m3_report_charts_match_the_table(tmp_path: Path) -> None:
    from analyzer.report.trace import write_m3_report
    from analyzer.sources.bytedance import load_m3
    from analyzer.trace.m3 import run_m3

    data = run_m3(("MostAllocated", "LeastAllocated"), (42,))
    html = write_m3_report(data, tmp_path / "m3").read_text()
    side = json.loads((tmp_path / "m3" / "report.json").read_text())
    assert {k: v for k, v in side.items() if k != "charts"} == data
    assert html.count('data-metric="') == 8 and "MostAllocated" in html and "production" in html
    charts = side["charts"]
    ids = ["containers_placed", "nodes_used", "stranded_cpu_pct", "stranded_memory_pct"]
    assert list(charts) == [f"bar-{m}" for m in ids] + ["machine-alloc-cpu", "machine-alloc-memory"]
    for chart_id in charts:  # every chart is on the page, as an embedded image
        assert re.search(rf'data-chart="{chart_id}"><img class="chart" src="data:image/png', html)
    table = _m3_table(html)
    for metric in ids:
        bars = charts[f"bar-{metric}"]
        assert table[metric]["production"] == round(bars["production"], 2)
        for name, value in bars["values"].items():
            assert table[metric][name] == round(value, 2)
    # Distribution lines agree with the table (one seed, so each line is one placement): the
    # top machine is the highest CPU allocation, machines with anything allocated are those used.
    lines = charts["machine-alloc-cpu"]["lines"]
    memory = charts["machine-alloc-memory"]["lines"]
    assert list(lines) == ["production", "MostAllocated", "LeastAllocated"]
    for name, line in lines.items():
        assert line == sorted(line, reverse=True) and len(line) == 96
        assert line[0] == pytest.approx(table["cpu_alloc_max_pct"][name], abs=0.01)
        used = sum(1 for c, m in zip(line, memory[name], strict=True) if c > 0 or m > 0)
        assert used == table["nodes_used"][name]
    # Production's line recomputed from the raw trace with plain loops.
    cluster = load_m3()
    cpu_used = [0] * len(cluster.machines)
    for container, machine in enumerate(cluster.production.tolist()):
        if machine >= 0:
            cpu_used[machine] += int(cluster.container_cpu[container])
    expected = sorted(
        (100 * used / int(cap) for used, cap in zip(cpu_used, cluster.machine_cpu, strict=True)),
        reverse=True,
    )
    assert lines["production"] == pytest.approx(expected, abs=0.005)


def _overview_rows(html: str) -> dict[str, str]:
    body = html.split('data-table="overview"', 1)[1].split("</table>", 1)[0]
    return dict(re.findall(r'<tr data-variant="([^"]+)"(.*?)</tr>', body, flags=re.S))


def _bold_cells(row: str) -> list[tuple[str, str]]:
    """(policy, text) of the cells marked best in one overview row, in column order."""
    cells = re.findall(r'<td class="num[^"]*\bbest\b[^"]*" data-policy="([^"]+)">([^<]+)', row)
    return [(policy, text.strip()) for policy, text in cells]


def test_variant_overview_marks_best_policy_and_ties(tmp_path: Path) -> None:
    data = fake_variants()
    html = write_trace_report(data, tmp_path / "rep").read_text()
    rows = _overview_rows(html)
    assert list(rows) == list(data["variants"])  # one row per pod list, in the run's order
    # Best at 130 % (see fake_variants): Packer alone; a tie at 92.10; Random alone.
    assert 'data-best="Packer"' in rows["openb_pod_list_default.csv"]
    assert 'data-best="Spreader|Packer"' in rows["openb_pod_list_cpu050.csv"]
    assert "Spreader = Packer" in rows["openb_pod_list_cpu050.csv"]
    assert 'data-best="Random"' in rows["openb_pod_list_gpushare20.csv"]
    # Column bests, columns 100/110/130/fail per policy in order Spreader, Packer, Random.
    # default: 90.04 and 90.0 both show as 90.0, so the first-failure column is a tie.
    assert _bold_cells(rows["openb_pod_list_default.csv"]) == [
        ("Packer", "91.00"),
        ("Packer", "91.50"),
        ("Packer", "90.0"),
        ("Random", "91.30"),
        ("Random", "90.0"),
    ]
    assert _bold_cells(rows["openb_pod_list_cpu050.csv"]) == [
        ("Spreader", "92.00"),
        ("Spreader", "92.10"),
        ("Packer", "92.00"),
        ("Packer", "92.05"),
        ("Packer", "92.10"),
        ("Packer", "88.0"),
    ]
    # A policy that never failed ("none") has the best first-failure cell.
    assert ("Spreader", "none") in _bold_cells(rows["openb_pod_list_gpushare20.csv"])
    # The best policy's 130 % cell carries the star; one star per winner plus the best column.
    assert rows["openb_pod_list_cpu050.csv"].count("★") == 3
    assert rows["openb_pod_list_default.csv"].count("★") == 2


def test_best_policies_compare_at_the_precision_shown() -> None:
    single = fake_single(
        "x.csv",
        {"A": fake_policy((1.0, 1.0, 91.504), 1.0), "B": fake_policy((1.0, 1.0, 91.496), 1.0)},
    )
    assert best_policies(single) == (("A", "B"), "130")  # both show as 91.50
    # A run that stopped before 130 % is judged at the last point any policy reached.
    for result in single["policies"].values():
        del result["table"]["130"]
    single["policies"]["B"]["table"]["110"]["alloc_pct_mean"] = 2.0
    assert best_policies(single) == (("B",), "110")


def test_variant_report_side_files_hold_every_number(tmp_path: Path) -> None:
    data = fake_variants()
    out = tmp_path / "rep"
    html = write_trace_report(data, out).read_text()
    side = json.loads((out / "report.json").read_text())
    assert side["curves_in"] == "curve.csv"
    for name, single in data["variants"].items():
        for policy, result in single["policies"].items():
            kept = side["variants"][name]["policies"][policy]
            assert kept == {k: v for k, v in result.items() if k != "curve"}
    with (out / "curve.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    expected = [
        (name, policy, point)
        for name, single in data["variants"].items()
        for policy, result in single["policies"].items()
        for point in result["curve"]
    ]
    assert len(rows) == len(expected)
    for row, (name, policy, point) in zip(rows, expected, strict=True):
        assert (row["pods_file"], row["policy"]) == (name, policy)
        assert float(row["alloc_pct_mean"]) == point["alloc_pct_mean"]
    # Variant form: two small-multiple charts, not two charts per pod list; sections collapsed.
    assert html.count("data:image/png;base64,") == 2
    assert html.count("<details><summary><strong>") == 3
    assert 'id="overview"' in html and html.index('id="overview"') < html.index('id="v1"')


def test_single_pod_list_has_no_overview(data: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    html = write_trace_report(data, tmp_path / "one").read_text()
    assert 'data-table="overview"' not in html and "<details><summary><strong>" not in html
    assert "first in a seed-random node order" in html  # the tie rule the run used is stated


def test_m3_distribution_over_seeds_is_the_mean_of_sorted_curves() -> None:
    from analyzer.trace.m3 import run_m3

    both = run_m3(("MostAllocated",), (42, 43))["machine_alloc_pct"]["policies"]["MostAllocated"]
    one = [
        run_m3(("MostAllocated",), (seed,))["machine_alloc_pct"]["policies"]["MostAllocated"]
        for seed in (42, 43)
    ]
    for resource in ("cpu", "memory"):
        mean = [(a + b) / 2 for a, b in zip(one[0][resource], one[1][resource], strict=True)]
        assert both[resource] == pytest.approx(mean, abs=0.006)

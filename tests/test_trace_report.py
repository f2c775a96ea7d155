"""The trace HTML report: self-contained, shows the JSON's numbers, never takes over a used folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.errors import InputError
from analyzer.report.trace import ranking, write_trace_report
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


def test_m3_report(tmp_path: Path) -> None:
    from analyzer.report.trace import write_m3_report
    from analyzer.trace.m3 import run_m3

    data = run_m3(("MostAllocated",), (42,))
    html = write_m3_report(data, tmp_path / "m3").read_text()
    assert json.loads((tmp_path / "m3" / "report.json").read_text()) == data
    assert html.count('data-metric="') == 8 and "MostAllocated" in html and "production" in html

"""The nightly page's headroom-per-shape section in a real headless Chromium.

A generated day with a tainted pool and two declared shapes (one tolerating the GPU taint): the
page's numbers pass ``page_numbers.page_problems`` (which also checks this table against its
sentence), the table agrees with report.json, a doctored page is caught, and a screenshot of the
section is taken (``HEADROOM_SHOT=path`` keeps it for a person to look at).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cdp_client import Chromium, require_chromium
from page_numbers import READ_PAGE, page_problems, shape_headroom_problems

from analyzer.nightly.headroom_shapes import parse_headroom
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_report import write_nightly_report
from analyzer.sources import SyntheticSpec, generate

pytestmark = pytest.mark.browser
CONFIG = {
    "headroom": [
        {"name": "web <1 core>", "cpu": "1", "memory": "2Gi"},
        {
            "name": "gpu-job",
            "cpu": "4",
            "memory": "16Gi",
            "gpu": 1,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    ]
}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_chromium()
    spec = SyntheticSpec(seed=3, nodes=12, days=1.0, step=600, dedicated_pools=("general",))
    shapes = parse_headroom(CONFIG)
    assert shapes is not None
    result = run_nightly(generate(spec).snapshot, NightlySettings(headroom_shapes=tuple(shapes)))
    return write_nightly_report(result, tmp_path_factory.mktemp("headroom")).html


def _read(html: Path, tmp_path: Path, mutate: str = "") -> dict[str, Any]:
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(html)
        if mutate:
            browser.evaluate(mutate)
        data: dict[str, Any] = browser.evaluate(READ_PAGE)
        browser.evaluate("document.getElementById('shape-headroom').scrollIntoView()")
        shot = browser.call("Page.captureScreenshot", format="png")
    finally:
        browser.close()
    assert browser.console_errors() == []
    data["shot"] = base64.b64decode(shot["data"])
    return data


def test_the_section_is_sound_and_agrees_with_report_json(page: Path, tmp_path: Path) -> None:
    """Both shapes on the page, in config order, with report.json's copies; no impossible
    number; the GPU shape fits only where GPUs are (its reason names nvidia.com/gpu)."""
    seen = _read(page, tmp_path)
    assert page_problems(seen) == []
    table = seen["tables"]["shape_headroom"]
    rows = [dict(zip(table["keys"], row, strict=True)) for row in table["rows"]]
    stored = json.loads((page.parent / "report.json").read_text())["tables"]["shape_headroom"]
    assert [r["shape"] for r in rows] == ["web <1 core>", "gpu-job"]
    assert [r["copies_now"] for r in rows] == [f"{s['copies_now']:,}" for s in stored]
    assert "Insufficient nvidia.com/gpu" in rows[1]["reason_now"]
    assert seen["shot"][:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("HEADROOM_SHOT")
    if keep:
        Path(keep).write_bytes(seen["shot"])


def test_the_checks_catch_impossible_numbers(page: Path, tmp_path: Path) -> None:
    """Doctor the rendered section: a tightest hour above now, a sentence that disagrees, a
    reason counting more nodes than the cluster has, a negative count; each is reported."""
    doctor = r"""(() => {
      const table = document.querySelector('table[data-table=shape_headroom]');
      const col = k => [...table.tHead.rows[0].cells].findIndex(h => h.dataset.key === k);
      const rows = table.tBodies[0].rows;
      rows[0].cells[col('copies_min')].textContent = '999,999';
      rows[1].cells[col('reason_now')].textContent = 'Insufficient cpu (5,000)';
      rows[1].cells[col('copies_now')].textContent = '-3';
      document.querySelector('[data-answer=shape-headroom]').textContent = 'Headroom: 7 more copies';
    })()"""
    problems = page_problems(_read(page, tmp_path, doctor))
    assert "shape headroom sentence lacks '" in " ".join(problems)
    assert any("at the tightest hour > now" in p for p in problems)
    assert any("5,000 refused nodes > " in p for p in problems)
    assert "shape_headroom.copies_now: count written as '-3'" in problems
    assert shape_headroom_problems({**_read(page, tmp_path), "answers": {}})

"""The demo's monthly page shows "Growth replayed" (issue 28 acceptance): its figures are
possible and the sentence agrees with its table. Reads the session's one demo run."""

from __future__ import annotations

import json
import math
from html import unescape
from typing import Any

from conftest import DemoRun


def check_growth(growth: dict[str, Any], html: str) -> None:
    """Every figure of a growth payload possible, and its answers the table's."""
    months = growth["months"]
    assert [m["month"] for m in months] == list(range(len(months)))
    for m in months:
        assert m["waiting_pods"] == sum(p["waiting_pods"] for p in m["pools"])
        assert 0 <= m["waiting_pods"] <= m["pods"]
        for p in m["pools"]:
            for key, value in p.items():
                if isinstance(value, float):
                    assert math.isfinite(value) and value >= 0, (key, value)
            assert p["largest_cpu_cores"] <= p["capacity_cpu_cores"]
            margin_cpu = p["capacity_cpu_cores"] - p["largest_cpu_cores"]
            margin_mem = p["capacity_memory_gib"] - p["largest_memory_gib"]
            holds = (p["requested_peak_cpu_cores"] <= margin_cpu + 1e-6
                     and p["requested_peak_memory_gib"] <= margin_mem + 1e-6)  # fmt: skip
            assert p["n_plus_1"] is holds
            # no pod waits in the pool: nothing to add; pods wait: some nodes, or none help
            if p["waiting_pods"] == 0:
                assert p["nodes_to_add"] in (0, None) or m["waiting_pods"] > 0
            if growth["autoscaler"] == "none" and p["waiting_pods"]:
                assert p["nodes_to_add"] is None or p["nodes_to_add"] >= 1
    first = next((m["month"] for m in months if m["waiting_pods"]), None)
    assert growth["first_wait_month"] == first
    for pool, broken in growth["first_n_plus_1_break"].items():
        rows = [p for m in months for p in m["pools"] if p["pool"] == pool]
        assert broken == next((i for i, p in enumerate(rows) if not p["n_plus_1"]), None)
    assert growth["sentence"] in html


def test_demo_monthly_page_shows_growth(default_demo: DemoRun) -> None:
    review = json.loads((default_demo.out / "monthly" / "report.json").read_text())
    html = (default_demo.out / "monthly" / "report.html").read_text()
    growth = review["growth"]
    assert len(growth["months"]) == 7  # today and six months
    assert growth["changes"] and all(c.startswith("history: ") for c in growth["changes"])
    check_growth(growth, html)
    assert 'id="growth"' in html and "Growth replayed" in html
    assert (default_demo.out / "monthly" / "growth.csv").is_file()
    # a pool whose forecast adds nodes within the replayed months while the replay needs none is
    # named under the answer (tests/test_monthly_growth_check.py works the rule by hand)
    names = {p["name"] for p in review["pools"]}
    for line in growth["against_forecast"]:
        # the page escapes the line's apostrophes ("pool's"): compare the text a reader sees
        assert line.split(":")[0] in names
        assert f"Against the forecast: {line}" in unescape(html)

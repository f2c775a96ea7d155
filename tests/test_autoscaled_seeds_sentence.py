"""With several tie-break seeds, the what-if page's autoscaler sentence gives the node-hours over
all of them, not the first seed's alone, and says why they differ.

kube-scheduler breaks score ties at random; under an autoscaler where the ties fall decides which
nodes go under the threshold, so an 8-node cluster's node-hours move by several per cent from
seed to seed (docs/autoscaling.md, "Tie-breaks"). The generator's autoscaled cluster of seed 11
over one day, kube-default under cluster-autoscaler, four seeds: the sentence names the first
row's seed and the least and most node-hours of the table's rows for that strategy, read from
the page in a real browser.
"""

from __future__ import annotations

import re
from pathlib import Path

from autoscaled_data import generate_autoscaled, report_autoscaled
from cdp_client import Chromium, require_chromium


def test_the_sentence_gives_the_node_hours_over_every_seed(tmp_path: Path) -> None:
    require_chromium()
    out = report_autoscaled(tmp_path, generate_autoscaled(tmp_path, 11), "--seeds", "4")
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(out / "report.html")
        said = browser.evaluate(
            "[...document.querySelectorAll('#autoscaler p')].map(p => p.textContent).join(' ')"
        )
        rows = browser.evaluate(
            "[...document.querySelectorAll('table[data-table=autoscaled] tbody tr')]"
            ".map(r => [...r.cells].map(c => c.textContent))"
        )
    finally:
        browser.close()
    assert browser.console_errors() == []
    # columns: strategy + autoscaler, seed, node-hours, ...
    assert [r[1] for r in rows] == ["0", "1", "2", "3"]
    hours = [float(r[2].replace(",", "")) for r in rows]
    assert min(hours) < max(hours), "the seeds agree: the case shows nothing of the spread"
    found = re.search(r"That is tie-break seed (\d+); over its (\d+) seeds it would have run "
                      r"([\d,.]+) to ([\d,.]+) node-hours", said)  # fmt: skip
    assert found is not None, said
    assert found.group(1) == rows[0][1] and found.group(2) == "4"
    assert (found.group(3), found.group(4)) == (f"{min(hours):,.1f}", f"{max(hours):,.1f}")
    # the sentence's first figure is the first row's
    assert f"kube-default would have run {rows[0][2]} node-hours" in said
    assert '(docs/autoscaling.md, "Tie-breaks")' in said

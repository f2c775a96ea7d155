"""What the what-if page's autoscaler section shows, read in a real browser."""

from __future__ import annotations

from typing import Any


def reasons_and_explanation(browser: Any) -> tuple[list[str], str]:
    """The reasons in the "Why nodes stayed" table, and the paragraph that explains them."""
    reasons = browser.evaluate(
        "[...document.querySelectorAll('table[data-table=autoscaler_reasons] tbody tr')]"
        ".map(r => r.cells[2].textContent)"
    )
    explained = browser.evaluate(
        "[...document.querySelectorAll('p')].map(p => p.textContent)"
        ".filter(t => t.startsWith('Why nodes stayed')).join(' ')"
    )
    return list(reasons), str(explained)


# each part of the "strategy + autoscaler" table, in page order: its name, its headers, its rows'
# cells (``analyzer.report.whatif_autoscaled.autoscaled_parts``)
AUTOSCALED_PARTS = (
    "[...document.querySelectorAll('#autoscaler table')]"
    ".filter(t => t.dataset.table.startsWith('autoscaled'))"
    ".map(t => [t.dataset.table, [...t.tHead.rows[0].cells].map(h => h.textContent),"
    " [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))])"
)

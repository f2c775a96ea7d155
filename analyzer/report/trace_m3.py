"""Charts of the ByteDance M3 report: each strategy against the production assignment.

Four bar charts (containers placed, machines used, stranded CPU, stranded memory; one bar per
strategy, the production value as a dashed line) and two distribution charts (CPU and memory
allocation % per machine, machines sorted from the most to the least allocated, one line per
strategy plus production). Each chart comes with the numbers it draws, which ``report.json``
carries under ``charts`` so a reader (or a test) can check them against the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure

from analyzer.report.charts import STYLE, Chart, encode_png

BAR_METRICS = (
    ("containers_placed", "Containers placed"),
    ("nodes_used", "Machines used"),
    ("stranded_cpu_pct", "Stranded CPU, % of cluster"),
    ("stranded_memory_pct", "Stranded memory, % of cluster"),
)
RESOURCES = (("cpu", "CPU"), ("memory", "Memory"))
PRODUCTION_COLOR = "#1d2433"


@dataclass(frozen=True)
class M3Chart:
    """One chart of the M3 report: an id for the page and the JSON, the image, its numbers."""

    id: str
    chart: Chart
    numbers: dict[str, Any]


def bar_chart(data: dict[str, Any], metric: str, title: str) -> M3Chart:
    """One bar per strategy (mean over seeds) and the production value as a dashed line."""
    values = {name: result[metric] for name, result in data["policies"].items()}
    production = data["production"][metric]
    names = list(values)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(4.8, 1.1 + 0.28 * max(len(names), 1)), layout="constrained")
        ax = fig.add_subplot()
        positions = range(len(names))
        ax.barh(list(positions), [values[n] for n in names], color="#00798c", height=0.6)
        for y, name in zip(positions, names, strict=True):
            ax.annotate(
                f"{values[name]:,.4g}",
                (values[name], y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
            )
        ax.axvline(production, color=PRODUCTION_COLOR, linestyle="--", linewidth=1.2)
        ax.set_yticks(list(positions), labels=names, fontsize=7.5)
        ax.invert_yaxis()
        top = max([production, *values.values()])
        ax.set_xlim(0, 1.15 * top if top > 0 else 1.0)  # all zero: a readable empty axis
        ax.set_title(f"{title}\nproduction: {production:,.4g} (dashed line)", loc="left")
        chart = Chart(
            title=title,
            alt=f"{title}: one bar per strategy, production {production} as a dashed line",
            data_uri=encode_png(fig),
        )
    numbers = {"kind": "bar", "metric": metric, "production": production, "values": values}
    return M3Chart(f"bar-{metric}", chart, numbers)


def distribution_chart(data: dict[str, Any], resource: str, label: str) -> M3Chart:
    """Allocation % per machine, machines sorted; one line per strategy plus production."""
    dist = data["machine_alloc_pct"]
    lines = {"production": dist["production"][resource]} | {
        name: curves[resource] for name, curves in dist["policies"].items()
    }
    title = f"{label} allocation per machine, most to least allocated"
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.4), layout="constrained")
        ax = fig.add_subplot()
        for name, values in lines.items():
            ranks = range(1, len(values) + 1)
            if name == "production":
                ax.plot(
                    ranks, values, color=PRODUCTION_COLOR, linestyle="--", linewidth=1.8, label=name
                )
            else:
                ax.plot(ranks, values, linewidth=1.1, label=name)
        ax.set_xlabel("machine rank (1 = most allocated)")
        ax.set_ylabel(f"{label} allocated, % of machine")
        ax.set_ylim(0, 105)
        ax.set_title(title)
        ax.legend(fontsize=7, ncols=2)
        chart = Chart(
            title=title,
            alt=f"{title}: one line per strategy ({', '.join(lines)})",
            data_uri=encode_png(fig),
        )
    numbers = {"kind": "lines", "resource": resource, "lines": lines}
    return M3Chart(f"machine-alloc-{resource}", chart, numbers)


def m3_charts(data: dict[str, Any]) -> tuple[list[M3Chart], list[M3Chart]]:
    """The bar charts and the distribution charts of ``run_m3``'s JSON."""
    bars = [bar_chart(data, metric, title) for metric, title in BAR_METRICS]
    distributions = (
        [distribution_chart(data, resource, label) for resource, label in RESOURCES]
        if "machine_alloc_pct" in data
        else []
    )
    return bars, distributions

"""The trace report for several pod lists: an overview table, small-multiple charts, best policy.

With 26 variants × 6 policies one section with two full charts per variant would make a page of
52 charts; instead the report opens with one table (a row per pod list; per policy the mean GPU
allocation at 100 / 110 / 130 % arrived and the first-failure arrived %), marks the best policy of
each row, and draws every variant as a small panel of one figure. The per-variant tables follow
in collapsed sections.

"Best" = the highest mean allocation at the last table point (130 % unless the run stopped
earlier), compared at the precision shown (two decimals); equal values are a tie and every tied
policy is marked. In each column the best cell is marked the same way; for the first failure a
later one is better and "none" (no seed failed) is best of all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure

from analyzer.report.charts import STYLE, Chart, encode_png
from analyzer.trace import runner

TABLE_POINTS = tuple(str(x) for x in runner.TABLE_POINTS)  # JSON keys of the per-policy table
SMALL_MULTIPLE_COLUMNS = 4
FAILURE_DIGITS = 1  # first failure is shown with one decimal, allocation with two
ALLOC_DIGITS = 2


@dataclass(frozen=True)
class Cell:
    """One number of the overview table (None = no value) and whether it is the column's best."""

    value: float | None
    best: bool


@dataclass(frozen=True)
class PolicyCells:
    """One policy's cells in one row: allocation at each table point, then the first failure."""

    policy: str
    alloc: tuple[Cell, ...]
    first_failure: Cell


@dataclass(frozen=True)
class OverviewRow:
    """One pod list: its cells per policy and the best policy (several when tied)."""

    anchor: str
    variant: str  # the pod list's file name
    label: str  # its short name
    pods: int
    policies: tuple[PolicyCells, ...]
    best: tuple[str, ...]
    best_at: str | None  # the arrived % the best policy is judged at


def short_name(pods_file: str) -> str:
    """``openb_pod_list_gpushare20.csv`` → ``gpushare20`` (the name the paper uses)."""
    name = pods_file.removesuffix(".csv")
    return name.removeprefix("openb_pod_list_") or name


def _winners(values: Mapping[str, float | None], digits: int, none_is_best: bool) -> set[str]:
    """Names whose value, at the precision shown, is the highest (ties: all of them)."""
    if none_is_best and any(v is None for v in values.values()):
        return {name for name, v in values.items() if v is None}
    shown = {name: round(v, digits) for name, v in values.items() if v is not None}
    if not shown:
        return set()
    top = max(shown.values())
    return {name for name, v in shown.items() if v == top}


def best_policies(single: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None]:
    """The policies with the highest mean allocation at the last table point any policy reached."""
    reached = [x for x in TABLE_POINTS if any(x in r["table"] for r in single["policies"].values())]
    if not reached:
        return (), None
    at = reached[-1]
    values = {
        name: r["table"][at]["alloc_pct_mean"] if at in r["table"] else None
        for name, r in single["policies"].items()
    }
    winners = _winners(values, ALLOC_DIGITS, none_is_best=False)
    return tuple(name for name in single["policies"] if name in winners), at


def overview_row(
    anchor: str, variant: str, single: Mapping[str, Any], names: Sequence[str]
) -> OverviewRow:
    """The overview row of one pod list's result (the single-trace JSON shape); one group of
    cells per policy of ``names``, empty for a policy this list was not run with."""
    policies: dict[str, Any] = single["policies"]
    missing: dict[str, Any] = {"table": {}, "first_failure_arrived_pct": None}
    alloc_best = {
        x: _winners(
            {
                n: r["table"][x]["alloc_pct_mean"] if x in r["table"] else None
                for n, r in policies.items()
            },
            ALLOC_DIGITS,
            none_is_best=False,
        )
        for x in TABLE_POINTS
    }
    failure_best = _winners(
        {n: r["first_failure_arrived_pct"] for n, r in policies.items()},
        FAILURE_DIGITS,
        none_is_best=True,
    )
    cells = tuple(
        PolicyCells(
            policy=name,
            alloc=tuple(
                Cell(r["table"][x]["alloc_pct_mean"], name in alloc_best[x])
                if x in r["table"]
                else Cell(None, False)
                for x in TABLE_POINTS
            ),
            first_failure=Cell(r["first_failure_arrived_pct"], name in failure_best),
        )
        for name, r in ((n, policies.get(n, missing)) for n in names)
    )
    best, at = best_policies(single)
    pods = single["trace"]["pods"]
    return OverviewRow(anchor, variant, short_name(variant), pods, cells, best, at)


def policy_names(variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every policy of any variant, in order of first appearance (one table column group each)."""
    names: dict[str, None] = {}
    for single in variants.values():
        names.update(dict.fromkeys(single["policies"]))
    return list(names)


def small_multiples(
    variants: Mapping[str, Mapping[str, Any]],
    metric: str,
    std: str | None,
    *,
    title: str,
    ylabel: str,
    x_from: int = 0,
    x_to: int | None = None,
) -> Chart:
    """One panel per pod list, one line per policy (mean; ± std band when ``std`` is given),
    arrived % from ``x_from`` to ``x_to`` (the shared x axis would otherwise stretch to the
    longest curve: multi-GPU lists overshoot the tune ratio by far)."""
    names = policy_names(variants)
    palette = mpl.colormaps["tab10"]
    colors = {name: palette(i % 10) for i, name in enumerate(names)}
    count = max(len(variants), 1)
    columns = min(SMALL_MULTIPLE_COLUMNS, count)
    rows = math.ceil(count / columns)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(9.5, 0.9 + 1.75 * rows), layout="constrained")
        axes = fig.subplots(rows, columns, sharex=True, squeeze=False)
        for ax, (variant, single) in zip(axes.flat, variants.items(), strict=False):
            for name, result in single["policies"].items():
                points = [
                    p
                    for p in result["curve"]
                    if x_from <= p["arrived_pct"] and (x_to is None or p["arrived_pct"] <= x_to)
                ]
                xs = [p["arrived_pct"] for p in points]
                ys = [p[metric] for p in points]
                ax.plot(xs, ys, linewidth=1.0, color=colors[name], label=name)
                if std is not None:
                    low = [p[metric] - p[std] for p in points]
                    high = [p[metric] + p[std] for p in points]
                    ax.fill_between(xs, low, high, color=colors[name], alpha=0.2, linewidth=0)
            ax.set_title(short_name(variant), fontsize=8, pad=2)
            ax.tick_params(labelsize=6.5)
        for ax in axes.flat[count:]:
            ax.set_visible(False)
        for ax in axes[:, 0]:
            ax.set_ylabel(ylabel, fontsize=7)
        for ax in axes[-1, :]:
            ax.set_xlabel("arrived %", fontsize=7)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        # The HTML heading carries the title; a suptitle would collide with the legend.
        fig.legend(
            handles, labels, loc="outside upper center", ncols=min(len(names), 8), fontsize=7
        )
        return Chart(
            title=title,
            alt=f"{title}: one panel per pod list ({', '.join(short_name(v) for v in variants)}), "
            f"one line per policy ({', '.join(names)})",
            data_uri=encode_png(fig),
        )


def overview_context(
    variants: Mapping[str, Mapping[str, Any]], anchors: Sequence[str]
) -> dict[str, Any]:
    """Template context of the overview: the table rows and the two small-multiple charts."""
    names = policy_names(variants)
    rows = [
        overview_row(anchor, variant, single, names)
        for anchor, (variant, single) in zip(anchors, variants.items(), strict=True)
    ]
    last = int(TABLE_POINTS[-1])
    charts = [
        small_multiples(
            variants,
            "alloc_pct_mean",
            "alloc_pct_std",
            title=f"GPU allocation % vs arrived %, 80–{last} % arrived (mean ± std over seeds)",
            ylabel="GPU alloc %",
            x_from=80,
            x_to=last,
        ),
        small_multiples(
            variants,
            "frag_ratio_mean",
            None,
            title=f"Fragmentation ratio % vs arrived %, 0–{last} % arrived (mean over seeds)",
            ylabel="frag ratio %",
            x_to=last,
        ),
    ]
    return {"rows": rows, "policies": names, "points": TABLE_POINTS, "charts": charts}

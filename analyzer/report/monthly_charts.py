"""Charts of the monthly review: per pool, the daily history, the forecast with its 80 % and 95 %
bands, the capacity lines and the level shifts found, CPU and memory side by side (PNG data URIs,
like every page)."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyzer.monthly.forecast import Forecast
from analyzer.monthly.series import SERIES
from analyzer.report.charts import READABLE, RESOURCE_COLORS, Chart, encode_png

_USED_COLOR = "#30638e"
_REQUESTED_COLOR = RESOURCE_COLORS["cpu"]


def forecast_chart(
    pool: str, rows: pd.DataFrame, forecasts: dict[str, Forecast], thresholds: dict[str, int]
) -> Chart:
    """Two panels (CPU cores, memory GiB) for one pool."""
    with mpl.rc_context(READABLE):
        # Fixed margins: constrained layout measured every tick label and cost more than drawing.
        fig = Figure(figsize=(11.0, 3.6))
        fig.subplots_adjust(left=0.06, right=0.99, top=0.91, bottom=0.2, wspace=0.16)
        axes = fig.subplots(1, 2)
        days = pd.to_datetime(rows["day"]).to_numpy()
        for ax, resource, unit in zip(axes, ("cpu", "memory"), ("cores", "GiB"), strict=True):
            for spec in (s for s in SERIES if s.resource == resource):
                color = _REQUESTED_COLOR if spec.kind == "requested" else _USED_COLOR
                label = "requested (daily peak)" if spec.kind == "requested" else "used (daily p95)"
                ax.plot(days, rows[spec.column].to_numpy(float), color=color, lw=1.3, label=label)
                f = forecasts[spec.name]
                for n, shift in enumerate(f.level_shifts):  # where the fitted history starts
                    ax.axvline(np.datetime64(shift.day), color=color, lw=1.0, ls="-.", alpha=0.7,
                               label=f"level shift ({spec.kind})" if n == 0 else None)  # fmt: skip
                if f.points:
                    x = np.array([np.datetime64(p.day) for p in f.points])
                    ax.fill_between(x, [p.lo95 for p in f.points], [p.hi95 for p in f.points],
                                    color=color, alpha=0.12, lw=0)  # fmt: skip
                    ax.fill_between(x, [p.lo80 for p in f.points], [p.hi80 for p in f.points],
                                    color=color, alpha=0.22, lw=0)  # fmt: skip
                    ax.plot(x, [p.mean for p in f.points], color=color, lw=1.2, ls="--")
                    last = rows.iloc[-1]
                    alloc = float(last[f"allocatable_{resource}"])
                    if spec.kind == "requested":
                        cap = alloc - float(last[f"largest_{resource}"])
                        name = "allocatable − largest node (N+1)"
                    else:
                        cap = alloc * thresholds[resource] / 100.0
                        name = f"{thresholds[resource]} % of allocatable"
                    ax.plot(x, np.full(len(x), cap), color=color, lw=1.0, ls=":", label=name)
            ax.set_title(f"{pool}: {'CPU' if resource == 'cpu' else 'memory'}")
            ax.set_ylabel(unit)
            ax.set_ylim(bottom=0)
            ax.tick_params(axis="x", labelrotation=30, labelsize=8)
            ax.legend(fontsize=8, loc="upper left")
        return Chart(
            title=f"{pool}: history and forecast",
            alt=f"{pool}: daily requested peak and used p95 with the forecast's 80 % and 95 % "
            "bands (dashed: mean forecast; dotted: the capacity lines; dash-dot: level shifts "
            "found, the forecast fitted after the last)",
            data_uri=encode_png(fig),
        )

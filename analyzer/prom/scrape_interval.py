"""How often node-exporter and cAdvisor are scraped, measured from the stored samples.

``irate`` needs two samples inside its window. The collector's window is two collect steps, which
holds two samples only while the scrape interval is at most one step: a cluster scraped every 5 m
and collected at ``--step 1m`` would have no CPU usage at all. So the collector measures the
interval per source and sizes every rate window ``max(2 × step, 2 × scrape interval)`` (the floor
Grafana's ``$__rate_interval`` also keeps).

Method, per source (cheap: two small instant queries, no subquery, one probe metric):

1. ``count by (instance) (count_over_time(<metric>[1h]) >= 2)`` at the probe time lists the
   scrape targets with at least two samples in the hour before it;
2. the raw samples of the first three targets (by name) over that hour,
   ``<metric>{instance=~"a|b|c"}[1h]``, give each series' spacing between consecutive samples;
   the interval is the median of those spacings, rounded to whole seconds (scrape jitter is
   milliseconds; a missed scrape is one long gap the median ignores).

The probe time is the end of the collect range; when no target has two samples in the hour
before it (nodes gone by then), the middle of the range, then its first hour. A source with no
samples at any of them is *not detected*: its windows stay ``2 × step``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from analyzer.prom.client import PromClient

# source → (probe metric, extra matchers). The metrics are those the usage queries read.
PROBES: dict[str, tuple[str, str]] = {
    "node-exporter": ("node_memory_MemAvailable_bytes", ""),
    "cadvisor": ("container_cpu_usage_seconds_total", 'container!="", image!=""'),
}
PROBE_WINDOW_SECONDS = 3600
PROBE_TARGETS = 3


@dataclass(frozen=True)
class ScrapeInterval:
    """One source's scrape interval in seconds (``None``: no samples to measure it from) and
    how it was found: ``"measured"`` (median sample spacing) or ``"--scrape-interval"``."""

    source: str
    seconds: int | None
    method: str


def rate_window(step_seconds: int, scrape_seconds: int | None) -> int:
    """The ``irate`` window: two steps, widened to two scrape intervals when those are longer."""
    return max(2 * step_seconds, 2 * (scrape_seconds or 0))


def detect_intervals(client: PromClient, start: int, end: int) -> dict[str, ScrapeInterval]:
    """The measured scrape interval of every source of ``PROBES`` in ``[start, end]``."""
    times = [end, (start + end) // 2, min(end, start + PROBE_WINDOW_SECONDS)]
    found: dict[str, ScrapeInterval] = {}
    for source, (metric, matchers) in PROBES.items():
        seconds = None
        for at in dict.fromkeys(times):  # the distinct probe times, in order
            seconds = _measure(client, metric, matchers, at)
            if seconds is not None:
                break
        found[source] = ScrapeInterval(source, seconds, "measured")
    return found


def _measure(client: PromClient, metric: str, matchers: str, at: int) -> int | None:
    window = f"{PROBE_WINDOW_SECONDS}s"
    selector = f"{metric}{{{matchers}}}"
    targets = client.query(
        f"count by (instance) (count_over_time({selector}[{window}]) >= 2)",
        at,
        what=f"query scrape_interval ({metric} targets)",
    )
    names = sorted(s.labels.get("instance", "") for s in targets)[:PROBE_TARGETS]
    if not names:
        return None
    pick = "|".join(_promql_regex_literal(n) for n in names)
    extra = f'{matchers}, instance=~"{pick}"' if matchers else f'instance=~"{pick}"'
    raw = client.query(
        f"{metric}{{{extra}}}[{window}]", at, what=f"query scrape_interval ({metric} samples)"
    )
    gaps = [np.diff(s.timestamps) for s in raw if len(s.timestamps) >= 2]
    if not gaps:
        return None
    return max(1, round(float(np.median(np.concatenate(gaps)))))


def _promql_regex_literal(text: str) -> str:
    """``text`` matched literally by an RE2 regex inside a double-quoted PromQL string."""
    regex = re.sub(r"([.\\+*?()|\[\]{}^$])", r"\\\1", text)
    return regex.replace("\\", "\\\\").replace('"', '\\"')


def step_note(step_seconds: int, intervals: dict[str, ScrapeInterval]) -> str | None:
    """One line when the step is finer than a source's scrape interval, else ``None``."""
    coarse = {
        i.source: i.seconds for i in intervals.values() if i.seconds and i.seconds > step_seconds
    }
    if not coarse:
        return None
    slowest = max(v for v in coarse.values() if v is not None)
    named = ", ".join(f"{source} every {seconds}s" for source, seconds in sorted(coarse.items()))
    repeat = f"{slowest / step_seconds:.3g}"
    return (
        f"--step {step_seconds}s is finer than the scrape interval ({named}): each sample is "
        f"repeated for about {repeat} steps and CPU is the average over the last scrape "
        f"interval, not the last step; --step {slowest}s gives the same detail with {repeat}x "
        "fewer points"
    )

"""The query profile: ``queries/*.promql``, one named query per file.

Each file starts with a comment header, then the PromQL expression::

    # Busy CPU cores per node-exporter target (mode not idle/iowait/steal).
    # kind: range          range = on the step grid; window = one summary over the whole range;
    #                      samples = raw samples (selector[{{span}}]) evaluated on the grid here;
    #                      times = the first/last raw sample time per group (selector[{{span}}])
    # combine: last        window queries: how the per-chunk summaries merge (last | min | max);
    #                      times: min = first sample, max = last sample
    # source: node-exporter   kube-state-metrics | node-exporter | cadvisor | control-plane
    # required: yes        a missing required query makes the snapshot partial
    # unit: cores
    sum by (instance, node) (irate(node_cpu_seconds_total{mode!~"idle|iowait|steal"}[{{rate_window}}]))

Template variables: ``{{step}}`` (the collect step), ``{{rate_window}}`` (max(2 × step, 2 × the
query source's scrape interval): irate over it recovers the last step's average from samples one
step apart, and still finds two samples when the scrape interval is longer than the step;
``analyzer.prom.scrape_interval``), ``{{span}}`` (the stretch of time a
window query summarises per evaluation), ``{{lookback}}`` (5m, Prometheus' lookback: a subquery at
that resolution still sees every series' last sample, at a fifth of the cost of 1m),
``{{step_open}}`` (one millisecond short of the step: "a sample within the last step", the same on
Prometheus 2 and 3, for series whose disappearance is the news, e.g. a taint removed). Users may point ``--queries-dir`` at their own copy; the
collector looks queries up by file name, so keep the names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analyzer.core.durations import format_duration
from analyzer.core.errors import InputError
from analyzer.core.paths import queries_dir

KINDS = ("range", "window", "samples", "times")
COMBINES = ("last", "min", "max")
SOURCES = ("kube-state-metrics", "node-exporter", "cadvisor", "control-plane")
VARIABLES = ("step", "rate_window", "span", "lookback", "step_open")
LOOKBACK_SECONDS = 300  # Prometheus --query.lookback-delta default
_HEADER = re.compile(
    r"^#\s*(kind|combine|source|required|unit|rate|dedupe|sum|by)\s*:\s*(\S.*?)\s*$"
)
_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_]+)\s*\}\}")


@dataclass(frozen=True)
class QuerySpec:
    """One query of the profile."""

    name: str
    expr: str  # with template variables
    kind: str = "range"
    combine: str = "last"
    source: str = "kube-state-metrics"
    required: bool = True
    unit: str = ""
    description: str = ""
    rate: str = "none"  # samples: "irate" (counter) or "none" (gauge)
    dedupe: tuple[str, ...] = ()  # samples: max by these labels
    sum_by: tuple[str, ...] = ()  # samples: then sum by these labels
    by: tuple[str, ...] = ()  # times: one first/last sample time per group of these labels

    def render(
        self, *, step_seconds: int, span_seconds: int, rate_window_seconds: int | None = None
    ) -> str:
        """The expression with its template variables filled in (``rate_window`` 2 × step
        unless given)."""
        values = {
            "step": _seconds(step_seconds),
            "rate_window": _seconds(rate_window_seconds or 2 * step_seconds),
            "span": _seconds(span_seconds),
            "lookback": _seconds(LOOKBACK_SECONDS),
            # one millisecond short of a step: a range selector that never reaches the sample
            # exactly one step back (Prometheus 2 closes range selectors on the left, 3 does not)
            "step_open": f"{step_seconds * 1000 - 1}ms",
        }
        return _VARIABLE.sub(lambda m: values[m.group(1)], self.expr)


def _seconds(seconds: int) -> str:
    from datetime import timedelta

    return format_duration(timedelta(seconds=seconds))


def parse_query_file(path: Path) -> QuerySpec:
    """Parse one ``.promql`` file; ``InputError`` naming the file and the bad header."""
    name = path.stem
    description: list[str] = []
    fields: dict[str, str] = {}
    expr_lines: list[str] = []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not expr_lines and stripped.startswith("#"):
            match = _HEADER.match(stripped)
            if match:
                fields[match.group(1)] = match.group(2)
            else:
                description.append(stripped.lstrip("#").strip())
        elif stripped and not stripped.startswith("#"):
            expr_lines.append(line)
    expr = "\n".join(expr_lines).strip()
    if not expr:
        raise InputError(f"{path}: no PromQL expression after the header comments")
    kind = fields.get("kind", "range")
    combine = fields.get("combine", "last")
    source = fields.get("source", "kube-state-metrics")
    required = fields.get("required", "yes").lower()
    for key, value, allowed in (
        ("kind", kind, KINDS),
        ("combine", combine, COMBINES),
        ("source", source, SOURCES),
        ("required", required, ("yes", "no")),
        ("rate", fields.get("rate", "none"), ("irate", "none")),
    ):
        if value not in allowed:
            raise InputError(f"{path}: header '{key}: {value}' must be one of {', '.join(allowed)}")
    for variable in _VARIABLE.findall(expr):
        if variable not in VARIABLES:
            raise InputError(
                f"{path}: unknown template variable {{{{{variable}}}}} (known: {', '.join(VARIABLES)})"
            )
    dedupe = tuple(x.strip() for x in fields.get("dedupe", "").split(",") if x.strip())
    sum_by = tuple(x.strip() for x in fields.get("sum", "").split(",") if x.strip())
    if kind == "samples" and (not dedupe or not set(sum_by) <= set(dedupe)):
        raise InputError(f"{path}: kind samples needs 'dedupe: labels' and 'sum: a subset of them'")
    by = tuple(x.strip() for x in fields.get("by", "").split(",") if x.strip())
    if kind == "times" and (not by or combine not in ("min", "max")):
        raise InputError(f"{path}: kind times needs 'by: labels' and 'combine: min' or 'max'")
    return QuerySpec(
        by=by,
        rate=fields.get("rate", "none"),
        dedupe=dedupe,
        sum_by=sum_by,
        name=name,
        expr=expr,
        kind=kind,
        combine=combine,
        source=source,
        required=required == "yes",
        unit=fields.get("unit", ""),
        description=" ".join(d for d in description if d),
    )


def load_profile(directory: Path | None = None) -> dict[str, QuerySpec]:
    """All queries of the profile folder (bundled by default), by name."""
    folder = queries_dir(directory)
    specs = {p.stem: parse_query_file(p) for p in sorted(folder.glob("*.promql"))}
    if not specs:
        raise InputError(f"--queries-dir: {folder} holds no .promql files")
    return specs


def require(profile: dict[str, QuerySpec], names: tuple[str, ...], folder: str) -> None:
    """``InputError`` listing the query files the collector needs but the profile lacks."""
    missing = [n for n in names if n not in profile]
    if missing:
        raise InputError(
            f"--queries-dir: {folder} lacks {', '.join(f'{n}.promql' for n in missing)} "
            "(copy them from the bundled profile: 'analyzer queries list')"
        )

"""``analyzer trace alibaba-gpu`` and ``analyzer trace bytedance-m3``: replays of real traces."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import click

from analyzer.cli.base import AnalyzerGroup, main
from analyzer.cli.params import EXECUTOR_OPTION
from analyzer.core.executor import parse_executor
from analyzer.trace.core_profiles import CORE_PRESETS
from analyzer.trace.registry import KUBE_POLICIES, PAPER_POLICIES
from analyzer.trace.runner import TABLE_POINTS, TraceConfig, parse_seeds


@main.group(cls=AnalyzerGroup)
def trace() -> None:
    """Replay real cluster traces (Alibaba GPU openb, ByteDance M3)."""


ALIBABA_COLUMNS = (
    ("seeds", "how many seeds the row averages"),
    ("alloc% @X", "GPUs allocated, % of the cluster's GPUs, mean ± std over seeds, once the arrived "
     "GPU demand (failed pods included) is X % of the GPU capacity"),
    ("frag% @100", "FGD fragmentation ratio: % of the idle GPU capacity the target workload cannot "
     "use, mean over seeds, at 100 % arrived"),
    ("1st fail %", "arrived GPU demand, % of capacity, when the first pod fit nowhere (mean over "
     "the seeds that had a failure; none = no pod failed)"),
)  # fmt: skip
M3_ROWS = {
    "containers_placed": "containers placed (count)",
    "containers_failed": "containers failed (count)",
    "nodes_used": "machines used (count)",
    "cpu_alloc_mean_pct_used_nodes": "CPU allocated, mean of used machines (%)",
    "cpu_alloc_max_pct": "CPU allocated, busiest machine (%)",
    "stranded_cpu_pct": "stranded CPU (% of cluster CPU)",
    "stranded_memory_pct": "stranded memory (% of cluster memory)",
    "headroom_typical_containers": "headroom (median containers)",
}
M3_NOTES = (
    "stranded CPU: free CPU on machines whose free memory cannot hold the median container's "
    "request; stranded memory: the converse; headroom: how many more median containers fit",
    "policies: mean over seeds of containers placed in a seed-shuffled order, no retry; "
    "production: the trace's own assignment",
)


def _legend(entries: tuple[tuple[str, str], ...]) -> list[str]:
    width = max(len(name) for name, _ in entries)
    indent = " " * (width + 4)
    lines = []
    for name, text in entries:
        wrapped = textwrap.wrap(text, 100 - len(indent), break_long_words=False)
        lines.append(f"  {name:<{width}}  {wrapped[0]}")
        lines += [indent + more for more in wrapped[1:]]
    return lines


def _table(data: dict[str, Any]) -> str:
    lines = [
        f"protocol {data['protocol']}  tune {data['tune']}  trace {data['trace']['pods_file']} on "
        f"{data['trace']['nodes']} nodes / {data['trace']['gpus']} GPUs",
        f"target workload: {data['target_workload']['shapes']} of {data['target_workload']['distinct_shapes']} "
        f"shapes cover {data['target_workload']['coverage_pct']} % of pods; empty-cluster frag ratio "
        f"{data['empty_cluster']['frag_ratio_pct']:.2f} %",
        "",
        f"{'policy':<15}{'seeds':>6}"
        + "".join(f"{f'alloc% @{x}':>12}" for x in TABLE_POINTS)
        + f"{'frag% @100':>12}{'1st fail %':>12}",
    ]
    for name, result in data["policies"].items():
        table = result["table"]
        cells = "".join(
            f"{table[str(x)]['alloc_pct_mean']:>8.2f}±{table[str(x)]['alloc_pct_std']:<3.1f}"
            if str(x) in table
            else f"{'-':>12}"
            for x in TABLE_POINTS
        )
        frag = f"{table['100']['frag_ratio_mean']:>12.2f}" if "100" in table else f"{'-':>12}"
        first = result["first_failure_arrived_pct"]
        lines.append(
            f"{name:<15}{len(result['seeds']):>6}{cells}{frag}"
            + (f"{first:>12.1f}" if first is not None else f"{'none':>12}")
        )
    return "\n".join(lines)


def _m3_table(data: dict[str, Any]) -> str:
    """One row per metric (its unit in the label), one column per placement."""
    columns = {"production": data["production"], **data["policies"]}
    label = max(len(text) for text in M3_ROWS.values()) + 2
    width = max(12, *(len(name) + 2 for name in columns))
    rows = [f"{'metric':<{label}}" + "".join(f"{name:>{width}}" for name in columns)]
    for key in data["production"]:
        title = M3_ROWS.get(key, key)
        rows.append(f"{title:<{label}}" + "".join(f"{m[key]:>{width}}" for m in columns.values()))
    scale = data["trace"]
    rows.append(
        f"({scale['machines']} machines, {scale['containers']} containers, "
        f"{scale['cluster_cpu_cores']} cores; seeds {data['seeds']})"
    )
    rows += [f"  {textwrap.fill(note, 98, subsequent_indent='  ')}" for note in M3_NOTES]
    return "\n".join(rows)


@trace.command("alibaba-gpu")
@click.option(
    "--protocol",
    type=click.Choice(["fgd", "timeline"]),
    default="fgd",
    show_default=True,
    help="fgd: the FGD paper's protocol (GPU nodes, arrivals only, inflated); timeline: trace times.",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    help=f"Repeatable. Paper: {', '.join(PAPER_POLICIES)}; kube: {', '.join(KUBE_POLICIES)}; "
    f"scheduling-core presets: {', '.join(CORE_PRESETS)}. Default: the paper's six.",
)
@click.option(
    "--seeds", default="42-51", show_default=True, help="Seeds: a range 42-51 or a list 1,2,3."
)
@click.option(
    "--tune",
    type=float,
    default=1.3,
    show_default=True,
    help="fgd protocol: inflate arrivals to this multiple of GPU capacity.",
)
@click.option(
    "--pods",
    "pods_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="openb pod list CSV (default: the bundled openb_pod_list_default.csv). Repeat to compare "
    'variants: the JSON becomes {"variants": {FILE NAME: <one-trace shape>}}.',
)
@click.option(
    "--pods-dir",
    "pods_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Every openb_pod_list_*.csv in this folder as a variant (sorted by name, default "
    "first), as if each were given with --pods (after any --pods).",
)
@click.option(
    "--nodes",
    "nodes_path",
    type=click.Path(path_type=Path),
    help="openb node list CSV (default: bundled GPU nodes for fgd, all nodes for timeline).",
)
@click.option(
    "--workers",
    type=int,
    default=min(2, os.cpu_count() or 1),
    show_default=True,
    help="Processes for policies × seeds (1 = no pool).",
)
@EXECUTOR_OPTION
@click.option(
    "--tie-break",
    type=click.Choice(["artifact", "random"]),
    default="artifact",
    show_default=True,
    help="Paper policies: 'artifact' takes the first top node in a seeded node order, as the "
    "FGD simulator's scheduler fork does; 'random' is upstream kube-scheduler's uniform choice.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "table"]),
    default="table",
    show_default=True,
    help="table: the summary described above; json: every number.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write an HTML report and its JSON to this folder.",
)
def alibaba_gpu(
    protocol: str,
    policies: tuple[str, ...],
    seeds: str,
    tune: float,
    pods_paths: tuple[Path, ...],
    pods_dir: Path | None,
    nodes_path: Path | None,
    workers: int,
    executor: str,
    tie_break: str,
    fmt: str,
    report_dir: Path | None,
) -> None:
    """Replay the Alibaba GPU trace v2023 (openb) under placement policies; curves per policy.

    The table has one row per policy (and per pod list with several --pods), then a legend:

    \b
    policy       the placement policy
    seeds        how many seeds the row averages
    alloc% @X    GPUs allocated, % of the cluster's GPUs, mean ± std over
                 seeds, once the arrived GPU demand (failed pods included)
                 is X % of the GPU capacity (X = 100, 110, 130)
    frag% @100   FGD fragmentation ratio: % of the idle GPU capacity the
                 target workload cannot use, mean over seeds, at 100 %
    1st fail %   arrived GPU demand, % of capacity, when the first pod fit
                 nowhere (mean over seeds that had one; none = no failure)

    --format json has every number, with the whole curves.
    """
    from analyzer.trace.variants import pod_lists_in, run_variants

    config = TraceConfig(
        protocol=protocol,
        policies=policies or PAPER_POLICIES,
        seeds=parse_seeds(seeds),
        tune=tune,
        nodes_path=nodes_path,
        workers=workers,
        tie_break=tie_break,
        executor=parse_executor(executor),
    )
    paths = [*pods_paths, *(pod_lists_in(pods_dir) if pods_dir is not None else [])]
    if report_dir is not None:
        from analyzer.report.trace import check_report_folder, write_trace_report

        check_report_folder(report_dir)  # before a long run, not after it
    data = run_variants(config, paths)
    text = "\n\n".join(_table(single) for single in data.get("variants", {"": data}).values())
    text += "\n\n" + "\n".join(["Columns:", *_legend(ALIBABA_COLUMNS)])
    if report_dir is not None:
        write_trace_report(data, report_dir)
    click.echo(json.dumps(data, indent=1) if fmt == "json" else text)


@trace.command("bytedance-m3")
@click.option(
    "--policy",
    "policies",
    multiple=True,
    help=f"Repeatable; default: {', '.join(KUBE_POLICIES)} and the paper's BestFit, DotProd, Random.",
)
@click.option("--seeds", default="42", show_default=True, help="Tie-break seeds (range or list).")
@click.option(
    "--m3", "m3_path", type=click.Path(path_type=Path), help="M3.json (default: the bundled copy)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "table"]),
    default="table",
    show_default=True,
    help="table: the summary described above; json: every number.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write an HTML report and its JSON to this folder.",
)
def bytedance_m3(
    policies: tuple[str, ...], seeds: str, m3_path: Path | None, fmt: str, report_dir: Path | None
) -> None:
    """Pack ByteDance cluster M3 under each strategy and compare with the production assignment.

    The table has one row per metric and one column per placement (production, then each
    policy as the mean over seeds):

    \b
    containers placed / failed (count)
    machines used (count)
    CPU allocated, mean of used machines (%) and busiest machine (%):
        allocated requests, % of the machine's CPU
    stranded CPU (% of cluster CPU): free CPU on machines whose free memory
        cannot hold the median container's request
    stranded memory (% of cluster memory): the converse
    headroom (median containers): how many more median containers fit
    """
    from analyzer.trace.m3 import M3_DEFAULT_POLICIES, run_m3

    data = run_m3(policies or M3_DEFAULT_POLICIES, parse_seeds(seeds), m3_path)
    if report_dir is not None:
        from analyzer.report.trace import write_m3_report

        write_m3_report(data, report_dir)
    click.echo(json.dumps(data, indent=1) if fmt == "json" else _m3_table(data))

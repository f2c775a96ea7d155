"""Benchmark: kube-default replays with and without node image data (ImageLocality).

The cluster is ``bench/replay.py``'s synthetic one (reused from ``--snapshot`` when it is there).
Three replays of kube-default over the whole day, alternated ``--repeat`` times (the best CPU
time of each counts, a shared machine only slows runs down):

- ``no-plugin``: the kube-default profile without ImageLocality on the snapshot as generated
  (no image data) — the placements of the profile before ImageLocality existed;
- ``no-images``: kube-default (with ImageLocality) on the same snapshot: the plugin scores 0
  everywhere, its raw score is uniform and the cache drops it;
- ``images``: kube-default on the snapshot given image data: each workload runs image
  ``reg.io/<workload>:1`` (100–1,900 MiB, fixed per name), every node lists the images of the
  pods that really ran on it, ``--extra`` other workloads' images drawn at random (pulled there
  earlier) and a 300 MiB base image.

The ``images`` replay's first ``--check-events`` events are checked equal to the full-rescoring
path (``Profile.evaluate`` over the present nodes for every pod), and ``no-images`` must place
every pod where ``no-plugin`` does. Placements/s = pods placed by the scheduler (DaemonSet pods
excluded) / CPU seconds of the replay.

    .venv/bin/python bench/image_locality.py [--nodes 1000] [--snapshot DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate

MB = 1024 * 1024
BASE = "reg.io/base:1"


def cluster(path: Path | None, nodes: int, seed: int, churn: float) -> Snapshot:
    """``bench/replay.py``'s cluster (kept in ``path`` when given)."""
    if path is not None and (path / "meta.json").is_file():
        return read_snapshot(path)
    spec = SyntheticSpec(seed=seed, nodes=nodes, days=1, step=300, churn=churn)
    snapshot = generate(spec).snapshot
    if path is not None:
        write_snapshot(snapshot, path)
    return snapshot


def with_images(snapshot: Snapshot, extra: int) -> Snapshot:
    """The snapshot with container images per workload and node images where pods ran."""
    pods, nodes = snapshot.pods.copy(), snapshot.nodes.copy()
    images = [f"reg.io/{w}:1" for w in pods["workload_name"].fillna("none")]
    cells = {
        i: json.dumps({"containers": [i], "initContainers": []}, sort_keys=True)
        for i in set(images)
    }
    pods["container_images"] = [cells[i] for i in images]

    def size(name: str) -> int:
        return (100 + zlib.crc32(name.encode()) % 1801) * MB

    rng = np.random.default_rng(0)
    distinct = sorted(set(images))
    held: dict[str, set[str]] = {
        str(n): {BASE, *(distinct[int(k)] for k in rng.integers(0, len(distinct), extra))}
        for n in nodes["node"]
    }
    for name, where in zip(images, pods["node"], strict=True):
        if isinstance(where, str) and where in held:
            held[where].add(name)
    sizes = {name: size(name) for name in set(images)} | {BASE: 300 * MB}
    nodes["images"] = [
        json.dumps([{"names": [k], "sizeBytes": sizes[k]} for k in sorted(held[str(n)])])
        for n in nodes["node"]
    ]
    return replace(snapshot, pods=pods, nodes=nodes)


def timed(inp: ReplayInput, strategy: Strategy) -> tuple[float, Any]:
    started = time.process_time()
    result = replay(inp, strategy, seed=0)
    return time.process_time() - started, result


def main() -> None:
    """Run the three replays alternately and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--churn", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot", help="Keep/reuse the generated cluster in this folder.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check-events", type=int, default=3000)
    parser.add_argument("--extra", type=int, default=30, help="Other images per node.")
    args = parser.parse_args()
    snapshot = cluster(
        Path(args.snapshot) if args.snapshot else None, args.nodes, args.seed, args.churn
    )
    plain, imaged = prepare(snapshot), prepare(with_images(snapshot, args.extra))
    kube = load_strategy("kube-default")
    bare = replace(kube, scorers=[w for w in kube.scorers if w.plugin.name != "ImageLocality"])
    runs: dict[str, tuple[ReplayInput, Strategy]] = {
        "no-plugin": (plain, Strategy("no-plugin", bare)),
        "no-images": (plain, Strategy("kube-default", kube)),
        "images": (imaged, Strategy("kube-default", kube)),
    }
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, Any] = {}
    for _ in range(args.repeat):
        for name, (inp, strategy) in runs.items():
            seconds, results[name] = timed(inp, strategy)
            cpu[name].append(seconds)
    if not np.array_equal(results["no-plugin"].node, results["no-images"].node):
        raise AssertionError("without image data ImageLocality changed a placement")
    strategy = runs["images"][1]
    fast = replay(imaged, strategy, seed=0, stop_after=args.check_events)
    slow = replay(imaged, strategy, seed=0, stop_after=args.check_events, rescore_all=True)
    if not np.array_equal(fast.node, slow.node):
        raise AssertionError("images: the cache and Profile.evaluate disagree")
    moved = int((results["images"].node != results["no-images"].node).sum())
    figures = {}
    for name, (inp, _) in runs.items():
        scored = int((~inp.pinned[results[name].segments["pod"]]).sum())
        figures[name] = {
            "cpu_s": min(cpu[name]),
            "runs": cpu[name],
            "placements_per_s": scored / min(cpu[name]),
        }
    base = figures["no-plugin"]["cpu_s"]
    for name, figure in figures.items():
        print(
            f"{name:10s} {figure['placements_per_s']:9.0f} placements/s  CPU {figure['cpu_s']:.2f} s "
            f"(× {figure['cpu_s'] / base:.3f} of no-plugin)"
        )
    print(
        json.dumps(
            {
                "nodes": len(plain.node_names),
                "pods": plain.pod_count,
                "figures": figures,
                "moved_by_images": moved,
                "distinct_images": len({d.images for d in imaged.demands}),
                "loadavg": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()

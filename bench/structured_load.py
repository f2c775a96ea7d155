"""Benchmark: what the loader's bounds cost on a large kubectl List and refuse on a bomb.

``--kube-objects`` files are the only large structured input (the campaign's 82 MB List of 60,000
Deployments). ``core.structured.load_json`` parses with ``json.loads`` and then measures the
nesting depth level by level; this prints both times (CPU, ``time.process_time``) and their ratio,
then the wall time and the peak memory of refusing the 438-byte YAML "billion laughs" through
``load_yaml`` (in this process: the refusal never expands it).

    .venv/bin/python bench/structured_load.py [--deployments 60000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import resource
import tempfile
import time
from pathlib import Path

from analyzer.core.errors import InputError
from analyzer.core.structured import load_yaml, nesting_depth


def _deployment(i: int) -> dict[str, object]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["general"]}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"web-{i}", "namespace": "shop", "labels": {"team": "x" * 800}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": f"web-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"web-{i}"}},
                "spec": {
                    "containers": [{"name": "web", "image": "nginx"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [term]
                            }
                        }
                    },
                },
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=60_000)
    args = parser.parse_args()
    text = json.dumps({"kind": "List", "items": [_deployment(i) for i in range(args.deployments)]})
    started = time.process_time()
    value = json.loads(text)
    parse = time.process_time() - started
    started = time.process_time()
    depth = nesting_depth(value)
    walk = time.process_time() - started
    print(f"python {platform.python_version()}, {len(text) / 1e6:.0f} MB List, depth {depth}")
    print(f"json.loads {parse:.2f} s CPU; depth walk {walk:.2f} s CPU ({walk / parse:.0%} of it)")
    levels = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    levels += [
        f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in itertools.pairwise("abcdefghi")
    ]
    with tempfile.TemporaryDirectory() as folder:
        bomb = Path(folder) / "bomb.yaml"
        bomb.write_text(
            "currency: EUR\npools:\n  general:\n    node_hour: [" + ", ".join(levels) + "]\n"
        )
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        try:
            load_yaml(bomb, what="--prices")
        except InputError as exc:
            refused = str(exc)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        size = bomb.stat().st_size
    print(f"bomb ({size} bytes): refused in {wall * 1000:.1f} ms, "
          f"peak RSS +{(after - before) / 1024:.1f} MB: {refused.split(': ', 1)[1][:90]}")  # fmt: skip


if __name__ == "__main__":
    main()

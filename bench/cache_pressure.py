"""Benchmark: how much the scheduler's placements slow down when other work ran just before them.

Issue 25 item 5 asks the replay under cluster-autoscaler (CA) for at most 2x the CPU of the replay
without it. Part of the gap is not CA's own code: the scheduler's ``ScoreCache.choose`` runs slower
in the CA replay than in the replay without CA, although it does the same kind of work (a replay
with the same node joins and leaves but no CA places at the plain replay's speed). This measures
both sides on the generator's cluster (seed 1, 5-minute step, as ``bench/autoscaler.py``):

- ``--mode touch``: the replay without CA; before a share ``--share`` of its placements (seeded
  draw) a walk over ``K`` KB of Python dicts, a stand-in for other code's memory traffic, for
  each ``K`` of ``--kb``; the placements' own time only (``perf_counter`` around ``choose``);
- ``--mode ca``: the replay without CA and with CA (its defaults, every group's ``minSize`` 0),
  the placements' time, in the CA replay apart for the first placement after a scale-down pass
  (``update_unneeded`` ran since the previous placement) and the others.

The variants alternate round by round (``--repeat``); each prints a JSON line per round with
microseconds per placement. Times are wall time of the calls on a machine left otherwise idle.

    .venv/bin/python bench/cache_pressure.py [--nodes 500] [--days 7] [--mode touch|ca] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

import analyzer.replay.autoscale_loop as loop
import analyzer.replay.scoring as scoring
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

DICT_BYTES = 300  # a small dict with an int and a short str, as allocated here (measured: ~290)


class Timed:
    """``ScoreCache.choose`` wrapped: its time per label, and an optional walk before it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.junk: list[dict[str, Any]] = []
        self.share = 0.0
        self.draw = random.Random(1)
        self.after_pass = False
        self.split = False
        original: Callable[..., Any] = scoring.ScoreCache.choose
        timed = self

        def choose(cache: Any, *args: Any) -> Any:
            if timed.junk and timed.draw.random() < timed.share:
                total = 0
                for item in timed.junk:
                    total += item["a"]
            label = "after_pass" if timed.split and timed.after_pass else "other"
            start = time.perf_counter()
            found = original(cache, *args)
            took = time.perf_counter() - start
            timed.seconds[label] = timed.seconds.get(label, 0.0) + took
            timed.calls[label] = timed.calls.get(label, 0) + 1
            timed.after_pass = False
            return found

        setattr(scoring.ScoreCache, "choose", choose)  # noqa: B010 (a patch, not a read)
        passes = getattr(loop, "update_unneeded")  # noqa: B009

        def update_unneeded(ca: Any, now: int) -> None:
            timed.after_pass = True
            passes(ca, now)

        setattr(loop, "update_unneeded", update_unneeded)  # noqa: B010

    def reset(self, kb: int = 0, share: float = 0.0, split: bool = False) -> None:
        """Before a replay: clear the counts; the walk's size and share; whether to split."""
        self.seconds, self.calls, self.share, self.split = {}, {}, share, split
        self.junk = [{"a": i, "b": str(i)} for i in range(kb * 1024 // DICT_BYTES)]
        self.draw = random.Random(1)
        self.after_pass = False

    def per_call(self) -> dict[str, Any]:
        """Microseconds per placement per label, and the counts."""
        out: dict[str, Any] = {}
        for label, seconds in self.seconds.items():
            out[f"{label}_us"] = round(1e6 * seconds / self.calls[label], 1)
            out[f"{label}_calls"] = self.calls[label]
        every = sum(self.seconds.values()) / max(sum(self.calls.values()), 1)
        out["us"] = round(1e6 * every, 1)
        return out


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--mode", choices=("touch", "ca"), default="touch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--share", type=float, default=0.32)
    parser.add_argument("--kb", default="0,256,1024,4096")
    parser.add_argument("--strategy", default="kube-default")
    args = parser.parse_args()
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300))
    inp = prepare(cluster.snapshot)
    strategy = Strategy(args.strategy, load_strategy(args.strategy))
    timed = Timed()
    for round_ in range(args.repeat):
        if args.mode == "touch":
            for kb in [int(k) for k in args.kb.split(",")]:
                timed.reset(kb, args.share)
                replay(inp, strategy, 0)
                print(json.dumps({"round": round_, "kb": kb, "share": args.share,
                                  **timed.per_call()}), flush=True)  # fmt: skip
            continue
        pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str)) or {"default"}
        settings = parse_settings(None)
        settings = type(settings)(
            **{**vars(settings), "groups": {p or "default": GroupBounds(min_size=0) for p in pools}}
        )
        auto, groups = with_node_groups(inp, settings)
        timed.reset()
        replay(inp, strategy, 0)
        print(json.dumps({"round": round_, "replay": "without CA", **timed.per_call()}), flush=True)
        timed.reset(split=True)
        replay(auto, strategy, 0, autoscaler=(groups, settings))
        print(json.dumps({"round": round_, "replay": "with CA", **timed.per_call()}), flush=True)


if __name__ == "__main__":
    main()

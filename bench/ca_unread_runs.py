"""How the answers a scale-down pass takes again without a check fall in the pass (issue 25 item 5;
docs/benchmarks.md "caruns").

An idea left open since session check 21: take a whole unchanged stretch of a pass (consecutive
candidates whose answers read nothing that changed) in one step, instead of answer by answer.
What it could save depends on how long those stretches are. This counts them: the replay of the
generator's cluster (``--nodes``, ``--days`` at a 5-minute step, seed 1) under cluster-autoscaler
(kube-default, every pool at minSize 0), with ``SimulationMemo.unread`` (the check that lets an
answer placed by hints alone be taken again without reading anything) wrapped to record, per
pass, its verdict for each candidate it is asked about, and why it said no (the first of its
conditions that failed, in its order). Counting only: the decisions are the replay's own.

Prints the passes, the answers taken unread and not, the stretches of consecutive unread answers
(count, mean length, share of unread answers in stretches of at least 50) and the reasons::

    .venv/bin/python bench/ca_unread_runs.py [--nodes 2000] [--days 0.25]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
from typing import Any

from analyzer.replay import autoscale_reuse
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

LONG = 50  # a stretch at least this long is where a one-step take would pay


def _why(memo: Any, entry: Any, pods: Any, pdbs: Any, drops: int) -> str:
    """The first of ``SimulationMemo.unread``'s conditions that fails (its order), or "unread"."""
    last = memo.passes - 1
    checks = (
        ("not by hints", entry.by_hints),
        ("no plan", entry.plan),
        ("not in the last pass", entry.seen == last),
        ("hints set by a later answer", entry.disturbed < last),
        ("hints dropped", entry.hint_drops + 1 == drops),
        ("pods changed", entry.pods == pods),
        ("budgets changed", entry.pdbs == pdbs),
        ("a target diverged", memo.diverged.isdisjoint(entry.targets_once())),
    )
    for reason, holds in checks:
        if not holds:
            return reason
    return "unread"


def main() -> None:
    """Run the count (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--days", type=float, default=0.25)
    args = parser.parse_args()
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300))
    inp = prepare(cluster.snapshot)
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str)) or {"default"}
    settings = dataclasses.replace(
        parse_settings(None), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    strategy = Strategy("kube-default", load_strategy("kube-default", None))
    auto, groups = with_node_groups(inp, settings)

    memo_class = autoscale_reuse.SimulationMemo
    unread, start_pass = memo_class.unread, memo_class.start_pass
    passes: list[list[bool]] = []
    reasons: collections.Counter[str] = collections.Counter()

    def counted(memo: Any, entry: Any, pods: Any, pdbs: Any, drops: int) -> bool:
        verdict = unread(memo, entry, pods, pdbs, drops)
        why = _why(memo, entry, pods, pdbs, drops)
        # the restatement above must agree with the method it counts for
        assert (why == "unread") == verdict or not autoscale_reuse.UNREAD_TAKES
        reasons[why] += 1
        passes[-1].append(verdict)
        return verdict

    def started(memo: Any) -> None:
        passes.append([])
        start_pass(memo)

    memo_class.unread, memo_class.start_pass = counted, started  # type: ignore[method-assign]
    try:
        result = replay(auto, strategy, 0, autoscaler=(groups, settings))
    finally:
        memo_class.unread, memo_class.start_pass = unread, start_pass  # type: ignore[method-assign]
    stretches: list[int] = []
    for verdicts in passes:
        length = 0
        for verdict in [*verdicts, False]:
            if verdict:
                length += 1
            elif length:
                stretches.append(length)
                length = 0
    taken = sum(stretches)
    long_share = sum(n for n in stretches if n >= LONG) / taken if taken else 0.0
    record = result.autoscaler
    assert record is not None
    row = {
        "nodes": args.nodes,
        "days": args.days,
        "passes": len(passes),
        "asked": sum(reasons.values()),
        "unread": taken,
        "stretches": len(stretches),
        "mean_stretch": round(taken / len(stretches), 1) if stretches else 0.0,
        "longest": max(stretches, default=0),
        f"share_in_stretches_of_{LONG}_or_more": round(long_share, 3),
        "reasons": dict(reasons.most_common()),
        "simulated": record.simulated,
        "reused": record.reused,
    }
    print(json.dumps(row))


if __name__ == "__main__":
    main()

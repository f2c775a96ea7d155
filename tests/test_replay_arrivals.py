"""``prepare(..., arrivals="created")``: pods arrive when they were created and the replay makes the
preemptions itself (``analyzer.replay.input``, ``analyzer.replay.terminations``).

One 4-core node holds lo1 and lo2 (priority 1, 2 cores each, bound at minutes 1 and 2). h
(priority 100, 2 cores) is created at minute 10 and fits nowhere: DefaultPreemption reprieves lo1
(the more important: same priority, earlier start) and deletes lo2. Upstream and the generator
give lo2 a 30 s graceful termination and bind h on its node when it is gone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from replay_fixtures import T0, N, P, build
from test_replay_preemption import kube_default, runs, with_priorities

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.core.snapshot_schema import END_PREEMPTED
from analyzer.replay.engine import replay
from analyzer.replay.input import NEVER, prepare
from analyzer.whatif.compare import ARRIVALS_NOTE

SECOND = 10**9
MINUTE = 60 * SECOND


def _edit(snapshot: Snapshot, uid: str, **cells: object) -> Snapshot:
    pods = snapshot.pods.copy()
    row = list(pods["uid"]).index(uid)
    for column, value in cells.items():
        pods.loc[row, column] = value
    return dataclasses.replace(snapshot, pods=pods)


def _cluster(marked: bool, replacement: bool) -> Snapshot:
    """The module's cluster as the data recorded it: h created at 10:00 and bound at 10:31, lo2
    deleted at 10:01 and gone at 10:31 (``end_reason`` "preempted" when ``marked``; with
    ``marked`` False, lo2 runs to the end in the data). ``replacement``: lo2's controller's new
    pod r (created at 10:01, never bound) is in the data."""
    pods = [
        P("lo1", "a", cpu=2000, start=1),
        P("lo2", "a", cpu=2000, start=2, end=10 + 31 / 60 if marked else None),
        P("h", "a", cpu=2000, start=10),
    ]
    if replacement:
        pods.append(P("r", None, cpu=2000, start=10 + 1 / 60))
    snap = build([N("a", cpu=4000)], pods)
    snap = _edit(snap, "h", scheduled=T0 + pd.Timedelta(minutes=10, seconds=31))
    if marked:
        snap = _edit(snap, "lo2", end_reason=END_PREEMPTED)
    return with_priorities(snap, {"lo1": 1, "lo2": 1, "h": 100, "r": 1})


def test_the_data_preemption_is_made_again_by_the_replay() -> None:
    # h arrives at 10:01 (a second after its creation), preempts lo2 and waits, nominated; lo2
    # holds its room until 10:31 and is then gone for good (r, its replacement, is in the
    # data and waits: the node is full and it cannot preempt its equal lo1)
    snap = _cluster(marked=True, replacement=True)
    inp = prepare(snap, arrivals="created")
    names = list(snap.pods["uid"])
    h, lo2, r = (names.index(u) for u in ("h", "lo2", "r"))
    assert inp.arrival[h] - inp.start == 10 * MINUTE + SECOND
    assert inp.departure[lo2] == NEVER  # it ends only if the replay preempts it
    result = replay(inp, kube_default(), seed=0)
    pre = result.preemptions
    assert [names[v] for v in pre["victim"]] == ["lo2"]
    assert pre["preemptor"].tolist() == [h] and pre["time"].tolist() == [inp.arrival[h]]
    assert result.placed_at[h] - inp.start == 10 * MINUTE + 31 * SECOND  # when the data has it
    assert result.wait[h] == 30 * SECOND
    assert runs(snap, result, "lo2") == [("a", 2, 10)]  # deleted, not queued again
    assert not result.pending_at_end[lo2] and result.pending_at_end[r]
    # the default arrivals: h arrives when it was bound, lo2 ends when it did; nobody preempts
    plain = replay(prepare(snap), kube_default(), seed=0)
    assert len(plain.preemptions["victim"]) == 0
    assert plain.placed_at[h] == result.placed_at[h]


def test_a_victim_whose_replacement_is_not_in_the_data_queues_again() -> None:
    # lo2 ran to the end in the data: when the replay preempts it, its controller's new pod is
    # not in the data, so lo2's row queues again once its termination ended (queue timestamp:
    # its deletion) and waits to the end
    snap = _cluster(marked=False, replacement=False)
    for arrivals in ("created", "scheduled"):
        inp = prepare(snap, arrivals=arrivals)
        result = replay(inp, kube_default(), seed=0)
        lo2 = list(snap.pods["uid"]).index("lo2")
        assert result.preemptions["victim"].tolist() == [lo2]
        # preempted when h arrives: 10:01 (created), 10:31 (scheduled); gone 30 s later
        when = inp.start + (10 * MINUTE + SECOND if arrivals == "created" else 631 * SECOND)
        assert result.preemptions["time"].tolist() == [when]
        seg, waits = result.segments, result.waits
        assert seg["end"][seg["pod"] == lo2].tolist() == [when + 30 * SECOND]
        assert waits["start"][waits["pod"] == lo2].tolist() == [when + 30 * SECOND]
        assert result.pending_at_end[lo2]


def test_no_preemption_before_the_data_starts() -> None:
    # h created 5 minutes before the data starts, on a full node: with arrivals="created" it
    # waits (the pods deleted before the data are unknown, so the cluster then held more than
    # the replay knows); nothing frees room later, so it waits to the end
    snap = _cluster(marked=False, replacement=False)
    snap = _edit(snap, "h", created=T0 - pd.Timedelta(minutes=5))
    snap = _edit(snap, "lo1", created=T0 - pd.Timedelta(minutes=9))
    snap = _edit(snap, "lo2", created=T0 - pd.Timedelta(minutes=8))
    inp = prepare(snap, arrivals="created")
    h = list(snap.pods["uid"]).index("h")
    assert inp.arrival[h] < inp.start
    result = replay(inp, kube_default(), seed=0)
    assert len(result.preemptions["victim"]) == 0 and result.pending_at_end[h]


def test_arrivals_must_be_known() -> None:
    with pytest.raises(ValueError, match="arrivals must be one of scheduled, created"):
        prepare(_cluster(marked=False, replacement=False), arrivals="bound")


def test_a_snapshot_without_end_reason_reads_back_with_it_empty(tmp_path: Path) -> None:
    snap = _cluster(marked=True, replacement=False)
    directory = write_snapshot(snap, tmp_path / "snap")
    table = pd.read_parquet(directory / "pods.parquet")
    assert END_PREEMPTED in set(table["end_reason"])
    table.drop(columns=["end_reason"]).to_parquet(directory / "pods.parquet")  # an old one
    old = read_snapshot(directory)
    assert old.pods["end_reason"].tolist() == [""] * len(old.pods)
    inp = prepare(old, arrivals="created")
    assert inp.replaced is not None and not inp.replaced.any()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cli_whatif_arrivals_created(tmp_path: Path, workers: str) -> None:
    # the module's cluster as recorded (lo2 preempted, r its replacement): with the default
    # arrivals kube-default sees h arrive when lo2 had gone and preempts nobody; with
    # --arrivals created it preempts lo2 itself. observed is the data either way.
    path = write_snapshot(_cluster(marked=True, replacement=True), tmp_path / "snap")
    runner = CliRunner()
    runs_of = {}
    for arrivals in ("scheduled", "created"):
        args = ["whatif", str(path), "--strategy", "kube-default", "--format", "json",
                "--workers", workers, "--arrivals", arrivals]  # fmt: skip
        out = runner.invoke(main, args)
        assert out.exit_code == 0, out.output
        runs_of[arrivals] = json.loads(out.output)
    for arrivals, preempted in (("scheduled", 0), ("created", 1)):
        data = runs_of[arrivals]
        observed, kube = (s["outcomes"][0] for s in data["strategies"])
        assert observed["preempted"] == 0 and kube["preempted"] == preempted
        assert (ARRIVALS_NOTE in data["notes"]) == (arrivals == "created")
    assert runs_of["created"]["strategies"][0] == runs_of["scheduled"]["strategies"][0]
    refused = runner.invoke(main, ["whatif", str(path), "--search", "--arrivals", "created"])
    assert refused.exit_code == 2 and "--arrivals" in refused.output

"""``analyzer trace alibaba-gpu`` / ``bytedance-m3`` through click: JSON shape, errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main


def test_alibaba_gpu_json_shape_and_empty_fragmentation() -> None:
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "alibaba-gpu",
            "--policy",
            "BestFit",
            "--seeds",
            "42",
            "--workers",
            "1",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["empty_cluster"]["frag_ratio_pct"] == 13.9445  # real-data.md §3: 13.94 %
    assert data["target_workload"] == {"shapes": 35, "distinct_shapes": 91, "coverage_pct": 95.26}
    policy = data["policies"]["BestFit"]
    assert policy["seeds"] == [42]
    xs = [p["arrived_pct"] for p in policy["curve"]]
    assert (
        xs == list(range(len(xs))) and xs[-1] == 130
    )  # one point per integer arrived %, up to 130
    assert set(policy["curve"][0]) == {
        "arrived_pct",
        "alloc_pct_mean",
        "alloc_pct_std",
        "frag_ratio_mean",
        "frag_amount_mean",
    }
    # below the first failure every arrived pod is placed: allocation == arrived
    first = policy["first_failure_arrived_pct"]
    assert 50 < first < 130
    low = policy["curve"][40]
    assert abs(low["alloc_pct_mean"] - 40) < 0.5
    assert set(policy["table"]) == {"100", "110", "130"}


def test_bad_policy_and_seeds_exit_2() -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["trace", "alibaba-gpu", "--policy", "Nope", "--seeds", "1"])
    assert bad.exit_code == 2 and "choose from" in bad.output
    seeds = runner.invoke(main, ["trace", "alibaba-gpu", "--seeds", "x-y"])
    assert seeds.exit_code == 2 and "--seeds" in seeds.output
    missing = runner.invoke(
        main, ["trace", "alibaba-gpu", "--pods", "/nonexistent.csv", "--seeds", "1"]
    )
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_bytedance_m3_packs_every_container() -> None:
    result = CliRunner().invoke(
        main,
        [
            "trace",
            "bytedance-m3",
            "--policy",
            "MostAllocated",
            "--policy",
            "LeastAllocated",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (
        data["production"]["containers_placed"] == 3485 and data["production"]["nodes_used"] == 96
    )
    most, least = data["policies"]["MostAllocated"], data["policies"]["LeastAllocated"]
    assert most["containers_placed"] == 3485
    # packing uses fewer machines than spreading, which touches every machine
    assert most["nodes_used"] < least["nodes_used"] == 96


def test_several_pod_lists_give_variants(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    multi = Path(__file__).parent / "data" / "alibaba-gpu-v2023" / "openb_pod_list_multigpu20.csv"
    from analyzer.sources.alibaba import DEFAULT_PODS

    args = ["trace", "alibaba-gpu", "--policy", "BestFit", "--seeds", "1", "--tune", "1.0"]
    args += [
        "--workers",
        "1",
        "--format",
        "json",
        "--pods",
        str(DEFAULT_PODS),
        "--pods",
        str(multi),
    ]
    result = CliRunner().invoke(main, [*args, "--report", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert list(data["variants"]) == ["openb_pod_list_default.csv", "openb_pod_list_multigpu20.csv"]
    assert data["variants"]["openb_pod_list_multigpu20.csv"]["trace"]["pods"] == 8324
    html = (tmp_path / "rep" / "report.html").read_text()
    # The variant report: one overview row and one (collapsed) section per pod list.
    assert html.count('<tr data-variant="') == 2 and html.count('class="variant"') == 2


def test_tie_break_flag_reaches_the_run_and_bad_values_exit_2() -> None:
    args = ["trace", "alibaba-gpu", "--policy", "Random", "--seeds", "42", "--workers", "1"]
    result = CliRunner().invoke(main, [*args, "--tie-break", "random", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tie_break"] == "random"
    bad = CliRunner().invoke(main, [*args, "--tie-break", "alphabetical"])
    assert bad.exit_code == 2


def _cut(lines: list[str], start: int, count: int, path: Path) -> Path:
    """A small pod list: the header and ``count`` rows of the bundled default list."""
    path.write_text("".join([lines[0], *lines[1 + start : 1 + start + count]]))
    return path


def test_pods_dir_runs_every_pod_list_default_first(tmp_path: Path) -> None:
    from analyzer.sources.alibaba import DEFAULT_PODS

    lines = DEFAULT_PODS.read_text().splitlines(keepends=True)
    folder = tmp_path / "lists"
    folder.mkdir()
    # "cpu0" sorts before "default" by name; the default list must still come first.
    _cut(lines, 0, 300, folder / "openb_pod_list_default.csv")
    _cut(lines, 300, 200, folder / "openb_pod_list_cpu0.csv")
    (folder / "notes.csv").write_text("not,a,pod,list\n")  # ignored: not openb_pod_list_*.csv
    args = ["trace", "alibaba-gpu", "--policy", "BestFit", "--seeds", "1", "--tune", "0.5"]
    args += ["--workers", "1", "--format", "json"]
    from_dir = CliRunner().invoke(main, [*args, "--pods-dir", str(folder)])
    assert from_dir.exit_code == 0, from_dir.output
    data = json.loads(from_dir.output)
    assert list(data["variants"]) == ["openb_pod_list_default.csv", "openb_pod_list_cpu0.csv"]
    assert [v["trace"]["pods"] for v in data["variants"].values()] == [300, 200]
    # Equivalent to repeating --pods in that order (timings aside).
    pods = ["--pods", str(folder / "openb_pod_list_default.csv")]
    pods += ["--pods", str(folder / "openb_pod_list_cpu0.csv")]
    repeated = CliRunner().invoke(main, [*args, *pods])
    assert repeated.exit_code == 0, repeated.output
    assert _without_timings(json.loads(repeated.output)) == _without_timings(data)


def _without_timings(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_pods_dir_without_pod_lists_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n")
    result = CliRunner().invoke(main, ["trace", "alibaba-gpu", "--pods-dir", str(tmp_path)])
    assert result.exit_code == 2
    message = result.output.strip()
    assert "\n" not in message and "--pods-dir" in message and "openb_pod_list_*.csv" in message


def test_report_folder_is_checked_before_any_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.trace.variants

    def no_replay(*args: object) -> None:
        raise AssertionError("replayed although the report folder is refused")

    monkeypatch.setattr(analyzer.trace.variants, "run_trace", no_replay)
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "keep.txt").write_text("mine")
    args = ["trace", "alibaba-gpu", "--seeds", "1", "--report", str(tmp_path / "report")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "other files" in result.output
    assert (tmp_path / "report" / "keep.txt").read_text() == "mine"


def test_timeline_refuses_a_pod_list_without_times_before_replaying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.trace.variants
    from analyzer.sources.alibaba import DEFAULT_PODS

    def no_replay(*args: object) -> None:
        raise AssertionError("replayed the default list before checking the others")

    monkeypatch.setattr(analyzer.trace.variants, "run_trace", no_replay)

    folder = tmp_path / "lists"
    folder.mkdir()
    _cut(
        DEFAULT_PODS.read_text().splitlines(keepends=True),
        0,
        50,
        folder / "openb_pod_list_default.csv",
    )
    no_times = [
        ",".join(line.split(",")[:5]) + "\n" for line in DEFAULT_PODS.read_text().splitlines()[:51]
    ]
    (folder / "openb_pod_list_multigpu20.csv").write_text("".join(no_times))
    args = ["trace", "alibaba-gpu", "--protocol", "timeline", "--pods-dir", str(folder)]
    result = CliRunner().invoke(main, [*args, "--seeds", "1", "--workers", "1"])
    assert result.exit_code == 2
    assert "openb_pod_list_multigpu20.csv: no creation/deletion times" in result.output

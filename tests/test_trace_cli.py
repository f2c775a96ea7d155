"""``analyzer trace alibaba-gpu`` / ``bytedance-m3`` through click: JSON shape, errors exit 2."""

from __future__ import annotations

import json

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
    assert html.count("data-variant=") == 2


def test_tie_break_flag_reaches_the_run_and_bad_values_exit_2() -> None:
    args = ["trace", "alibaba-gpu", "--policy", "Random", "--seeds", "42", "--workers", "1"]
    result = CliRunner().invoke(main, [*args, "--tie-break", "random", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tie_break"] == "random"
    bad = CliRunner().invoke(main, [*args, "--tie-break", "alphabetical"])
    assert bad.exit_code == 2

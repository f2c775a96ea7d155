"""Every reader of a user's structured file, through the real CLI, on the campaign's faults.

reliability-2026-11.md rows 36-45 (prices), 87-89 (search grid), 95-100 (kube-objects), 104-109
(score scenarios) and 127-132 (config file): each run is a child process (``cli_contract``), so a
YAML bomb that came back would be killed at the timeout instead of eating the machine, and each
must end as the report's "expected" column says: exit 2, one stderr line naming the option and
the file, no traceback, nothing written, within the time bound.

Time bounds: the contract's 5 s, scaled by how crowded the machine is (``time_bound``: the
1-minute load average over the cores, at least 1), since a child on a shared 2-core machine at
load 14 gets a seventh of a core; ``report monthly`` (prices), ``score`` and ``--config`` refuse
in about a second on an idle machine. ``collect`` and ``whatif`` import pandas, pyarrow and the
replay before reading any option (4 s of a 7 s run at load 10), so their base is 20 s: that still
catches the bombs' 40-64 s, and the loader's own time is bounded in ``test_structured_loader``.
"""

from __future__ import annotations

import itertools
import json
import os
from datetime import date
from pathlib import Path

import pytest
import yaml
from cli_contract import Outcome, assert_contract, run_cli
from monthly_history import PoolTruth, write_history
from reliability_doc import documented_exit

from analyzer.cli.base import command_options, main
from analyzer.core.config import build_default_map, load_config_file

ROOT = Path(__file__).resolve().parents[1]


def time_bound(seconds: float) -> float:
    """``seconds`` on an idle machine, stretched by the load per core (never shortened)."""
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


QUICK_S = 5.0
HEAVY_IMPORT_S = 20.0
ERROR = "analyzer: error: "


def billion_laughs() -> str:
    """The campaign's 9 levels of 9 aliases (9^9 strings)."""
    parts = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    parts += [
        f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in itertools.pairwise("abcdefghi")
    ]
    return "[" + ", ".join(parts) + "]"


def deep_yaml(key: str) -> str:
    return f"{key}: " + "[" * 100_000 + "]" * 100_000 + "\n"


def refused(outcome: Outcome, exit_code: int, *words: str, seconds: float = QUICK_S,
            absent: tuple[Path, ...] = ()) -> str:  # fmt: skip
    """The run ended with ``exit_code`` (a fault's documented exit), one line holding every one
    of ``words``."""
    assert_contract(
        outcome, allowed_exits=(exit_code,), max_seconds=time_bound(seconds),
        absent_unless_ok=absent, watched=[p.parent for p in absent],
    )  # fmt: skip
    line = outcome.stderr_lines[0]
    assert line.startswith(ERROR), line
    for word in words:
        assert word in line, (word, line)
    return line


# --- prices (rows 36-45) -----------------------------------------------------------------------


def _monthly(tmp_path: Path, prices: Path) -> Outcome:
    # no history is needed: the prices file is read first, and a good one then meets the missing
    # history (exit 2 naming HISTORY_DIR), so the line tells which reader refused
    return run_cli(
        ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "m"), "--prices",
         str(prices)], cwd=tmp_path, timeout=120,
    )  # fmt: skip


PRICES = "currency: EUR\npools:\n  general:\n    node_hour: {}\n"


@pytest.mark.parametrize(
    ("case", "body", "fault", "words"),
    [
        (36, "currency: EUR\npools: {general: {node_hour: 0.38}\n", documented_exit("input-syntax"),
         ("--prices p.yaml: not valid YAML (line",)),
        (37, PRICES.format("-0.38"), documented_exit("monthly-prices-invalid"),
         ("pools.general.node_hour: -0.38 is negative",)),
        (38, PRICES.format(".nan"), documented_exit("monthly-prices-invalid"),
         ("pools.general.node_hour: float nan is not a number",)),
        (39, "currency: EUR\ndefault: {node_hour: 1.0e+308}\n", documented_exit("prices-implausible"),
         ("default.node_hour: 1e+308 is above 1,000,000,000 per hour",)),
        (40, PRICES.format("1e308"), documented_exit("prices-implausible"),
         ("pools.general.node_hour: 1e+308 is above 1,000,000,000",)),
        (40, PRICES.format("5e-2"), documented_exit("prices-yaml-text-number"),
         ("node_hour: str '5e-2' is text to YAML, not a number; write node_hour: 0.05",)),
        (41, PRICES.format('"0.38"'), documented_exit("prices-yaml-text-number"),
         ("str '0.38' is text to YAML", "write node_hour: 0.38 (no quotes")),
        (44, PRICES.format(billion_laughs()), documented_exit("input-yaml-aliases"),
         ("--prices p.yaml: refused: its aliases", "490,329,063")),
        (45, deep_yaml("pools"), documented_exit("input-too-deep"),
         ("--prices p.yaml: refused: nested deeper than 100 levels",)),
    ],
)  # fmt: skip
def test_prices_faults_end_in_one_line(
    tmp_path: Path, case: int, body: str, fault: int, words: tuple[str, ...]
) -> None:
    (tmp_path / "p.yaml").write_text(body)
    refused(_monthly(tmp_path, Path("p.yaml")), fault, *words, absent=(tmp_path / "m",))


def test_prices_not_utf8_or_a_folder(tmp_path: Path) -> None:  # row 43
    (tmp_path / "p.yaml").write_bytes(b"\xff\xfecurrency: EUR\n")
    refused(_monthly(tmp_path, Path("p.yaml")), documented_exit("input-not-utf8"),
            "--prices p.yaml: not UTF-8 text (byte 0xff at offset 0)", absent=(tmp_path / "m",))  # fmt: skip
    (tmp_path / "folder").mkdir()
    outcome = _monthly(tmp_path, Path("folder"))  # click's own check of the option, before ours:
    assert outcome.exit_code == 2 and "Traceback" not in outcome.stderr  # its usage text is 3 lines
    assert "Invalid value for '--prices': File 'folder' is a directory." in outcome.stderr


def test_a_good_prices_file_is_accepted_and_an_alias_in_it_too(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "currency: EUR\ndefault: &price {core_hour: 0.03, gib_hour: 0.004}\n"
        "pools:\n  general: *price\n  highmem: {<<: *price, gib_hour: 0.005}\n"
    )
    outcome = _monthly(tmp_path, Path("p.yaml"))
    # past the prices: the missing history is what ends it
    refused(outcome, documented_exit("monthly-no-history"), "HISTORY_DIR")


# --- search grid (rows 87-89) ------------------------------------------------------------------


def _search(tmp_path: Path, grid: Path) -> Outcome:
    (tmp_path / "snap").mkdir(exist_ok=True)  # never read: the grid is refused first
    return run_cli(["whatif", "snap", "--search", "--search-grid", str(grid)], cwd=tmp_path,
                   timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    ("case", "body", "fault", "words"),
    [
        (87, f"loadAwareWeights: {billion_laughs()}\n", documented_exit("input-yaml-aliases"),
         ("--search-grid g.yaml: refused: its aliases",)),
        (88, deep_yaml("scoring"), documented_exit("input-too-deep"),
         ("--search-grid g.yaml: refused: nested deeper than 100",)),
        (89, "scoring: [MostAllocated, Bogus]\n", documented_exit("input-field-value"),
         ("g.yaml.scoring[1]: 'Bogus' is not one of MostAllocated",)),
        (89, "loadAwareThresholds: [{cpu: 150}]\n", documented_exit("input-field-value"),
         ("loadAwareThresholds[0].cpu: int 150 must be an integer in [0, 100]",)),
        (89, "loadAwareWeights: [0]\nfoo: 1\n", documented_exit("input-field-value"), ("unknown key 'foo' (known:",)),
        (89, "baselines: [{a: 1}]\n", documented_exit("input-field-value"),
         ("baselines[0]: dict of 1 item {'a': 1} is not a strategy name or file",)),
    ],
)  # fmt: skip
def test_search_grid_faults_end_in_one_line(
    tmp_path: Path, case: int, body: str, fault: int, words: tuple[str, ...]
) -> None:
    (tmp_path / "g.yaml").write_text(body)
    refused(_search(tmp_path, Path("g.yaml")), fault, *words, seconds=HEAVY_IMPORT_S)


# --- kube-objects (rows 95-100) ----------------------------------------------------------------


def _collect(tmp_path: Path, objects: Path) -> Outcome:
    # the objects are read before the range: a good file then meets the empty range (exit 2)
    return run_cli(
        ["collect", "--prometheus", "http://127.0.0.1:1", "--since", "0s", "--out", "snap",
         "--kube-objects", str(objects)], cwd=tmp_path, timeout=120,
    )  # fmt: skip


def _deployment(**template_meta: object) -> str:
    import json

    return json.dumps(
        {"kind": "List", "items": [{
            "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"template": {"metadata": template_meta, "spec": {"containers": []}}},
        }]}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("case", "body", "fault", "words"),
    [
        (95, '{"kind": "List", "items": ' + "[" * 900 + "]" * 900 + "}", documented_exit("input-too-deep"),
         ("--kube-objects o.json: refused: nested deeper than 100 levels",)),
        (95, "[" * 50_000 + "]" * 50_000, documented_exit("input-too-deep"), ("--kube-objects o.json: refused",)),
        (97, _deployment(labels=["app", "web"]), documented_exit("kube-objects-field-type"),
         ("o.json items[0] (Deployment shop/web) pod template.labels: expected a mapping, "
          "got list of 2 items ['app', 'web']",)),
        (97, _deployment(labels={"app": {"nested": 1}}), documented_exit("kube-objects-field-type"),
         ("pod template.labels.app: expected a string, got dict of 1 item",)),
        (99, '{"kind": "Node", "metadata": {"name": "n1", "labels": "pool=general"}}',
         documented_exit("kube-objects-field-type"),
         ("o.json (Node n1).metadata.labels: expected a mapping, got str 'pool=general'",)),
        (99, '{"kind": "ReplicaSet", "metadata": {"name": "r", "ownerReferences": {"kind": "D"}},'
         ' "spec": {"replicas": "2"}}', documented_exit("kube-objects-field-type"),
         ("(ReplicaSet default/r).metadata.ownerReferences: expected a list, got dict",)),
        (99, '{"kind": "ReplicaSet", "metadata": {"name": "r"}, "spec": {"replicas": "two"}}',
         documented_exit("kube-objects-field-type"), ("(ReplicaSet default/r).spec.replicas: str 'two' is not an",)),
        (99, '{"kind": "Node", "metadata": {"name": "n\\n2", "annotations": [1]}}',
         documented_exit("kube-objects-field-type"), ("(Node n\\n2).metadata.annotations: expected a mapping",)),
        (98, _deployment().replace('"containers": []', '"tolerations": ["spot"]'),
         documented_exit("kube-objects-field-type"), ("pod template.tolerations[0]: expected a mapping",)),
        (98, _deployment().replace('"containers": []', '"nodeSelector": ["pool"]'),
         documented_exit("kube-objects-field-type"),
         ("pod template.nodeSelector: expected a mapping of label → value, got list",)),
        (100, None, documented_exit("input-not-utf8"), ("--kube-objects o.json: not UTF-8 text (byte 0xff",)),
        (96, '{"kind": 123}', documented_exit("kube-objects-field-type"), ("not a Kubernetes List or object",)),
    ],
)  # fmt: skip
def test_kube_objects_faults_end_in_one_line(
    tmp_path: Path, case: int, body: str | None, fault: int, words: tuple[str, ...]
) -> None:
    path = tmp_path / "o.json"
    if body is None:
        path.write_bytes(b"\xff\xfe\x00{" * 100)
    else:
        path.write_text(body)
    line = refused(_collect(tmp_path, Path("o.json")), fault, *words, seconds=HEAVY_IMPORT_S,
                   absent=(tmp_path / "snap",))  # fmt: skip
    assert line.count("\n") == 0 and "Traceback" not in line


def test_kube_objects_with_a_wrongly_typed_pod_affinity_are_refused_at_collect(
    tmp_path: Path,
) -> None:
    # a field the replay reads later (pod anti-affinity terms) is checked when the file is read
    body = _deployment(labels={"app": "web"}).replace(
        '"containers": []', '"containers": [], "affinity": {"podAntiAffinity": '
        '{"requiredDuringSchedulingIgnoredDuringExecution": "hostname"}}'
    )  # fmt: skip
    (tmp_path / "o.json").write_text(body)
    refused(_collect(tmp_path, Path("o.json")), documented_exit("kube-objects-field-type"),
            "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected a list",
            seconds=HEAVY_IMPORT_S)  # fmt: skip


# --- score scenarios (rows 104-109) ------------------------------------------------------------


def _scenario() -> dict[str, object]:
    loaded = yaml.safe_load((ROOT / "examples" / "score-scenario.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _score(tmp_path: Path, *args: str) -> Outcome:
    return run_cli(["score", *args], cwd=tmp_path, timeout=120)


def test_scenario_bomb_in_an_ignored_object_and_a_label(tmp_path: Path) -> None:  # row 107
    text = yaml.safe_dump(_scenario(), sort_keys=False)
    text += f"objects:\n- kind: ConfigMap\n  metadata: {{name: c}}\n  data: {billion_laughs()}\n"
    (tmp_path / "s.yaml").write_text(text)
    refused(
        _score(tmp_path, "s.yaml"),
        documented_exit("input-yaml-aliases"),
        "scenario s.yaml: refused: its aliases",
    )
    labelled = _scenario()
    labelled["pod"]["metadata"]["labels"] = {"big": "BOMB"}  # type: ignore[index]
    text = yaml.safe_dump(labelled, sort_keys=False).replace("BOMB", "*i")
    (tmp_path / "s.yaml").write_text(f"x-anchors: {billion_laughs()}\n{text}")
    refused(
        _score(tmp_path, "s.yaml"),
        documented_exit("input-yaml-aliases"),
        "scenario s.yaml: refused: its aliases",
    )


@pytest.mark.parametrize(
    ("case", "data", "fault", "words"),
    [
        (108, deep_yaml("nodes").encode(), documented_exit("input-too-deep"),
         "scenario s.yaml: refused: nested deeper than 100"),
        (109, b"\xff\xfe" + "kind: x\n".encode("utf-16-le"), documented_exit("input-not-utf8"),
         "scenario s.yaml: not UTF-8 text (byte 0xff at offset 0)"),
    ],
)  # fmt: skip
def test_scenario_deep_or_binary(
    tmp_path: Path, case: int, data: bytes, fault: int, words: str
) -> None:
    (tmp_path / "s.yaml").write_bytes(data)
    refused(_score(tmp_path, "s.yaml"), fault, words)


@pytest.mark.parametrize(
    ("post_filter", "words"),
    [
        (["Unschedulable"], "postFilter: expected a mapping, got list of 1 item ['Unschedulable']"),
        ({"filteredNodesStatuses": {"node-a": {"code": "x"}}}, "filteredNodesStatuses.node-a"),
        ({"filteredNodesStatuses": {7: "Unschedulable"}}, "filteredNodesStatuses"),
        ({"filteredNodesStatuses": ["node-a"]}, "filteredNodesStatuses: expected a mapping"),
        ({"extra": 1}, "postFilter.extra: unknown key"),
        ({"filteredNodesStatuses": {"<script>\n": "Unschedulable"}}, "is not one of the scenario"),
    ],
)
def test_malformed_post_filter_is_one_line(
    tmp_path: Path, post_filter: object, words: str
) -> None:  # row 106
    scenario = _scenario()
    scenario["postFilter"] = post_filter
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    refused(_score(tmp_path, "s.yaml"), documented_exit("input-field-value"), words)


def test_scheduler_configuration_file_bomb_and_merge_keys(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(
        f"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"x: {billion_laughs()}\n"
    )
    example = str(ROOT / "examples" / "score-scenario.yaml")
    refused(_score(tmp_path, example, "--config", "bomb.yaml"), documented_exit("input-yaml-aliases"),
            "scheduler bomb.yaml: refused: its aliases")  # fmt: skip
    (tmp_path / "merge.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "x-weight: &w {name: NodeResourcesBalancedAllocation, weight: 1}\n"
        "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n"
        "      enabled: [{<<: *w, weight: 5}]\n"
    )
    outcome = _score(tmp_path, example, "--config", "merge.yaml")
    assert_contract(outcome, allowed_exits=(0,), max_seconds=time_bound(QUICK_S))
    # the merge key gave the plugin its name and overrode its weight
    assert '"NodeResourcesBalancedAllocation": 5' in outcome.stdout


# --- the config file (rows 129-132) ------------------------------------------------------------


def _with_config(tmp_path: Path, *args: str) -> Outcome:
    return run_cli(["--config", "c.yaml", *args], cwd=tmp_path, timeout=120)


@pytest.mark.parametrize(
    ("case", "body", "fault", "words"),
    [
        (129, "pools: {general: {node_hour: 0.38}}\n", documented_exit("config-unknown-key"),
         "c.yaml: unknown option 'pools'"),
        (128, "report-monthly: {monthh: 2026-10}\n", documented_exit("config-unknown-key"),
         "c.yaml: unknown option report-monthly.monthh (the report-monthly command"),
        (128, 'report-monthly: {"month\\u2028x": 1}\n', documented_exit("config-unknown-key"),
         "unknown option report-monthly.month\\u2028x"),
        (130, "thresholds: {usageThresholds: {cpu: 500}}\n", documented_exit("input-field-value"),
         "config thresholds.usageThresholds.cpu: int 500 must be an integer percent 0..100"),
    ],
)  # fmt: skip
def test_config_keys_nothing_reads_and_bad_thresholds(
    tmp_path: Path, case: int, body: str, fault: int, words: str
) -> None:
    (tmp_path / "c.yaml").write_text(body)
    refused(_with_config(tmp_path, "report", "monthly", "h", "--out", "m"), fault, words,
            absent=(tmp_path / "m",))  # fmt: skip


def test_config_sections_of_the_new_commands_are_applied(tmp_path: Path) -> None:  # row 127
    write_history(tmp_path / "h", date(2026, 9, 1), 35, [PoolTruth("general")])
    (tmp_path / "p.yaml").write_text("currency: EUR\ndefault: {node_hour: 0.5}\n")
    (tmp_path / "c.yaml").write_text(
        "prometheus: http://127.0.0.1:1\n"
        "history-backfill: {since: 3d, until: 2026-11-03}\n"
        "report-monthly: {prices: p.yaml, month: 2026-09}\n"
        "rightsize: {recipe: vpa, days: 7}\n"
    )
    defaults = build_default_map(load_config_file(tmp_path / "c.yaml"), command_options(main))
    backfill = defaults["history-backfill"]  # YAML reads the day as a date; click takes its str
    assert backfill["since"] == "3d" and str(backfill["until"]) == "2026-11-03"
    assert backfill["prometheus"] == "http://127.0.0.1:1"  # the top-level key reaches it too
    assert defaults["rightsize"] == {"recipe": "vpa", "days": 7}
    outcome = _with_config(tmp_path, "report", "monthly", "h", "--out", "m")
    assert_contract(outcome, allowed_exits=(0,), max_seconds=time_bound(60), watched=[tmp_path])
    review = json.loads((tmp_path / "m" / "report.json").read_text())
    assert review["month"] == "2026-09"  # the section's month (2026-10 is not complete)
    assert review["prices"]["currency"] == "EUR"  # and its prices file


def test_hostile_currency_is_escaped_in_the_page_and_the_csv(tmp_path: Path) -> None:  # row 42
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth("general")])
    for currency in ("<script>alert(1)</script>", '=HYPERLINK("http://evil.example/x","click")'):
        prices = {"currency": currency, "default": {"node_hour": 0.5}}
        (tmp_path / "p.yaml").write_text(yaml.safe_dump(prices))
        outcome = _monthly(tmp_path, Path("p.yaml"))
        assert_contract(outcome, allowed_exits=(0,), max_seconds=time_bound(60), watched=[tmp_path])
        page = (tmp_path / "m" / "report.html").read_text()
        assert (
            "<script>alert" not in page and "&lt;script&gt;alert" in page
        ) or "=HYPER" in currency
        for cell in (tmp_path / "m" / "money.csv").read_text().replace("\n", ",").split(","):
            assert not cell.strip('"').startswith(("=", "+", "@")), cell


@pytest.mark.parametrize(
    ("case", "body", "fault", "words"),
    [
        (131, f"collect: {{step: {billion_laughs()}}}\n", documented_exit("input-yaml-aliases"),
         "--config c.yaml: refused: its aliases"),
        (132, deep_yaml("collect"), documented_exit("input-too-deep"), "--config c.yaml: refused: nested deeper"),
        (132, "collect: [1, 2]\n", documented_exit("config-unknown-key"),
         "section collect: expected a mapping of option names to values, not list of 2 items"),
    ],
)  # fmt: skip
def test_config_bomb_and_depth(
    tmp_path: Path, case: int, body: str, fault: int, words: str
) -> None:
    (tmp_path / "c.yaml").write_text(body)
    outcome = _with_config(tmp_path, "collect", "--prometheus", "http://127.0.0.1:1", "--since",
                           "1h", "--out", "s")  # fmt: skip
    refused(outcome, fault, words, absent=(tmp_path / "s",))


def test_toml_config_that_nests_too_deep(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text("step = " + "[" * 3000 + "]" * 3000 + "\n")
    outcome = run_cli(["--config", "c.toml", "collect", "--since", "1h", "--out", "s"],
                      cwd=tmp_path, timeout=120)  # fmt: skip
    refused(
        outcome,
        documented_exit("input-too-deep"),
        "--config c.toml: refused: nested deeper than 100",
    )


def test_a_large_kubectl_list_is_read_within_the_bounds(tmp_path: Path) -> None:  # row 94
    # a tenth of the campaign's 82 MB List (bench/structured_load.py times the whole size): the
    # depth walk and the typed reads must keep a big, valid file inside the time and memory bound
    deployment = json.loads(_deployment(labels={"app": "web"}))["items"][0]
    items = []
    for i in range(6_000):
        item = json.loads(json.dumps(deployment))
        item["metadata"].update(name=f"web-{i}", labels={"team": "x" * 800})
        items.append(item)
    (tmp_path / "o.json").write_text(json.dumps({"kind": "List", "items": items}))
    assert (tmp_path / "o.json").stat().st_size > 5_000_000
    # accepted: what ends the run is the empty range that follows the objects
    outcome = _collect(tmp_path, Path("o.json"))
    assert_contract(outcome, allowed_exits=(2,), max_seconds=time_bound(HEAVY_IMPORT_S),
                    absent_unless_ok=[tmp_path / "snap"])  # fmt: skip
    assert outcome.stderr_lines[0].startswith(f"{ERROR}--since: the range is empty")


SECRET = "s3cr3t-T0KEN-abcdef"


@pytest.mark.parametrize(
    ("body", "fault", "words"),
    [
        (f"history-backfill: {{token_env: {SECRET}}}\n", documented_exit("secret-config-value"),
         "--token-env: the value is not a valid environment variable name (it is not shown"),
        (f'header: ["Authorization=Bearer {SECRET}"]\n', documented_exit("secret-header-clear"),
         "--header #1 (or 'header' in the config file): Authorization carries a credential"),
    ],
)  # fmt: skip
def test_secrets_in_the_new_config_sections_are_never_printed(
    tmp_path: Path, body: str, fault: int, words: str
) -> None:  # row 133
    (tmp_path / "c.yaml").write_text("prometheus: http://127.0.0.1:1\n" + body)
    outcome = _with_config(tmp_path, "history", "backfill", "--since", "1d", "--until",
                           "2026-11-01", "--out", "bf")  # fmt: skip
    refused(outcome, fault, words, absent=(tmp_path / "bf",))
    assert SECRET not in outcome.stdout + outcome.stderr

"""No name leaves a YAML comment (issue 31 item 1; campaign rows 64-66).

A history whose workloads and namespaces carry every line break, a whole ClusterRoleBinding
document, formula prefixes and control characters is turned into patches by both writers,
``analyzer rightsize --format yaml`` and the monthly review's ``rightsizing-patches.yaml``; each
file is parsed with ``yaml.safe_load_all`` and must hold exactly the patches of the workloads a
cluster can hold. ``core/yamltext.comment``, the one function every hand-written YAML line goes
through, is checked on any text by Hypothesis.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hostile_names import CLUSTER_ADMIN, LINE_BREAKS, VALID_WORKLOADS, hostile_workloads
from hypothesis import given, settings
from hypothesis import strategies as st
from monthly_history import PoolTruth, WorkloadTruth, write_history

from analyzer.cli import main
from analyzer.core.text import one_line
from analyzer.core.yamltext import comment, comment_text
from analyzer.whatif.search_grid import scheduler_yaml


@pytest.fixture(scope="module")
def hostile_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """31 days of October 2026: two valid workloads and every hostile one, all over-requested
    (1 core requested, p95 0.5 core), so each would get a patch if its name allowed it."""
    root = tmp_path_factory.mktemp("hostile") / "history"
    workloads = [
        WorkloadTruth(name=name, namespace=namespace, pool="general")
        for namespace, name in [*VALID_WORKLOADS, *hostile_workloads()]
    ]
    write_history(root, date(2026, 10, 1), 31, [PoolTruth("general")], workloads)
    return root


def _documents(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _assert_only_valid_patches(text: str, where: str) -> None:
    documents = _documents(text)
    # exactly one Deployment patch per valid workload, and nothing else (no Secret, no binding)
    assert sorted((d["metadata"]["namespace"], d["metadata"]["name"]) for d in documents) == sorted(
        VALID_WORKLOADS
    ), where
    assert {d["kind"] for d in documents} == {"Deployment"}, where
    for document in documents:
        assert set(document) == {"apiVersion", "kind", "metadata", "spec"}, where
        (container,) = document["spec"]["template"]["spec"]["containers"]
        # 1 core today, p95 0.5 core: krr recommends 500m
        assert container["resources"]["requests"]["cpu"] == "500m", where
    assert "ClusterRoleBinding" not in [d.get("kind") for d in documents]
    # the left-out workloads are counted on the first line, a comment of one line
    first = text.splitlines()[0]
    assert first.startswith(f"# {len(hostile_workloads())} workload(s) left out"), first
    # no line of the file is anything but a comment, a document marker or the dumped patches
    for line in text.split("\n"):
        for brk in LINE_BREAKS:
            assert brk not in line or brk == "\n", (where, line[:80])


def test_rightsize_yaml_from_hostile_names_holds_only_the_patches(
    hostile_history: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "p.yaml"
    args = ["rightsize", str(hostile_history), "--recipe", "krr", "--format", "yaml"]
    written = runner.invoke(main, [*args, "--out", str(out)])
    assert written.exit_code == 0, written.output
    _assert_only_valid_patches(out.read_text(encoding="utf-8"), "rightsize --out")
    shown = runner.invoke(main, args)
    assert shown.exit_code == 0, shown.output
    _assert_only_valid_patches(shown.stdout, "rightsize stdout")


def test_monthly_patches_from_hostile_names_hold_only_the_patches(
    hostile_history: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m"
    run = CliRunner().invoke(
        main, ["report", "monthly", str(hostile_history), "--month", "2026-10", "--out", str(out)]
    )
    assert run.exit_code == 0, run.output
    _assert_only_valid_patches(
        (out / "rightsizing-patches.yaml").read_text(encoding="utf-8"), "monthly"
    )


def test_search_yaml_header_keeps_a_hostile_file_name_in_its_comment() -> None:
    document = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    for name in (CLUSTER_ADMIN, *(f"/tmp/a{b}kind: Secret{b}#.yaml" for b in LINE_BREAKS)):
        text = scheduler_yaml(document, name)
        assert list(yaml.safe_load_all(text)) == [document], name
        assert text.splitlines()[0].startswith("# analyzer whatif --search: ")


# ---------------------------------------------------------------- the one comment function

# every text Hypothesis draws, weighted towards what breaks YAML lines or the YAML reader
_HOSTILE_CHARS = st.sampled_from(
    [*LINE_BREAKS, "\\", "#", ":", "-", "'", '"', "\x00", "\ufeff", "\ufffe", "\ud800", "\u202e"]
)
TEXTS = st.lists(st.one_of(st.characters(), _HOSTILE_CHARS), max_size=60).map("".join)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_comment_is_one_comment_line_for_any_text(text: str) -> None:
    line = comment(text)
    assert line.startswith("# ")
    # one line whatever a reader splits on, every character printable
    assert line.splitlines() == [line] and line.isprintable()
    line.encode("utf-8")  # a lone surrogate would fail here when the file is written
    # PyYAML reads it as a comment only: nothing on its own, and a document after it unharmed
    assert list(yaml.safe_load_all(line + "\n")) == []
    assert yaml.safe_load(line + "\nkey: value\n") == {"key": "value"}
    # and the escapes read back as the original text (nothing lost, nothing ambiguous)
    shown = comment_text(text)
    assert shown.encode("latin-1", "backslashreplace").decode("unicode_escape") == text


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.integers(min_value=2, max_value=100))
def test_one_line_is_short_and_single(text: str, limit: int) -> None:
    shown = one_line(text, limit)
    assert len(shown) <= limit and shown.splitlines() in ([shown], [])

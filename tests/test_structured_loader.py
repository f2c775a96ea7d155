"""The one loader of user YAML/JSON/TOML files (``analyzer/core/structured.py``), directly.

Bombs run in a child Python with a 1 GB address-space cap and a timeout, so a regression that
expands them fails the test instead of eating the shared machine. The property tests feed the
loader random bytes and generated documents in-process: whatever they hold, the answer is a value
or one ``InputError`` line naming the file.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_doc import documented_exit

from analyzer.core.errors import InputError
from analyzer.core.structured import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    describe_value,
    load_json,
    load_toml,
    load_yaml,
    load_yaml_all,
    nesting_depth,
)

LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def billion_laughs(levels: int = 9) -> str:
    """The classic bomb: level k is a list of 9 aliases of level k-1 (9^levels strings)."""
    names = "abcdefghijklmnop"[:levels]
    parts = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    parts += [f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in itertools.pairwise(names)]
    return "bomb: [" + ", ".join(parts) + "]\n"


def _in_child(code: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python limited to 1 GB of address space and ``timeout`` seconds."""
    prelude = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_billion_laughs_is_refused_at_once_in_a_child(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    started = time.monotonic()
    done = _in_child(
        f"""
        from analyzer.core.errors import InputError
        from analyzer.core.structured import load_yaml
        try:
            load_yaml({str(bomb)!r}, what="--prices")
        except InputError as exc:
            print(exc)
        """
    )
    assert time.monotonic() - started < 15
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip()
    assert "\n" not in line and line.startswith(f"--prices {bomb}: refused: its aliases")
    # level k expands to s_k = 1 + 9·s_(k-1) nodes (s_1 = 10); the nine levels sum to 490,329,054,
    # plus the mapping, its key and the outer list; 21 nodes are written (9 'lol', 9 lists, 3)
    assert "expand 21 written nodes to 490,329,057" in line


def test_a_small_alias_fan_out_loads_and_one_past_the_bound_does_not(tmp_path: Path) -> None:
    # 4 levels of 9: 9^4 = 6,561 strings, well inside the bound, load and expand as written
    small = tmp_path / "small.yaml"
    small.write_text(billion_laughs(4))
    value = load_yaml(small)
    assert len(value["bomb"][3]) == 9 and value["bomb"][3][8][8][8] == ["lol"] * 9
    # one list of N aliases to a list of 1,000 strings adds N * 1,001 nodes
    base = "[" + ", ".join(["x"] * 1000) + "]"
    fits = MAX_ALIAS_NODES // 1001
    for count, ok in ((fits, True), (fits + 1, False)):
        path = tmp_path / f"fan{count}.yaml"
        path.write_text(f"base: &b {base}\nuses: [{', '.join(['*b'] * count)}]\n")
        if ok:
            assert len(load_yaml(path)["uses"]) == count
        else:
            with pytest.raises(InputError, match="aliases"):
                load_yaml(path)


def test_merge_keys_and_anchors_of_real_kubernetes_yaml_still_load(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            x-resources: &resources
              requests: {cpu: 100m, memory: 128Mi}
              limits: &limits {memory: 256Mi}
            x-labels: &labels {app: web, tier: frontend}
            deployment:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: web, labels: *labels}
              spec:
                template:
                  metadata:
                    labels:
                      <<: *labels
                      track: stable
                  spec:
                    containers:
                    - name: web
                      resources: *resources
                    - name: sidecar
                      resources:
                        <<: *resources
                        limits: *limits
            ---
            second: {document: true}
            """
        )
    )
    anchors, second = load_yaml_all(path)  # anchors hold within their own document
    assert second == {"second": {"document": True}}
    deployment = anchors["deployment"]
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "web", "tier": "frontend", "track": "stable"}
    assert template["spec"]["containers"][1]["resources"] == anchors["x-resources"]
    assert deployment["metadata"]["labels"] == anchors["x-labels"]


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cycle.yaml"
    path.write_text("a: &a [1, *a]\n")
    with pytest.raises(InputError, match="refers to a node that contains it"):
        load_yaml(path, what="--search-grid")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", "pools: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ("map.yaml", "a: " + "{x: " * 5_000 + "1" + "}" * 5_000 + "\n"),
        ("block.yaml", "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v\n"),
        ("lists.json", '{"a": ' + "[" * 900 + "]" * 900 + "}"),
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep.toml", "a = " + "[" * 5_000 + "]" * 5_000 + "\n"),
    ],
)
def test_deep_nesting_is_refused_in_one_line_quickly(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    loader = {".yaml": load_yaml, ".json": load_json, ".toml": load_toml}[path.suffix]
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        loader(path, what="--config")
    assert time.monotonic() - started < 3  # refused while scanning, not after a quadratic look
    message = str(info.value)
    assert message.startswith(f"--config {path}: ") and "\n" not in message
    assert "deep" in message


def test_nesting_at_the_bound_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
    assert nesting_depth(load_yaml(path)) == MAX_DEPTH
    path.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n")
    with pytest.raises(InputError, match="deeper than 100"):
        load_yaml(path)


@pytest.mark.parametrize("loader", [load_yaml, load_json, load_toml])
def test_bytes_that_are_not_utf8_are_named(tmp_path: Path, loader: object) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("price: 5 €\n".encode("cp1252"))  # € is byte 9, 0x80 in cp1252
    with pytest.raises(InputError) as info:
        loader(path, what="--prices")  # type: ignore[operator]
    assert str(info.value) == (
        f"--prices {path}: not UTF-8 text (byte 0x80 at offset 9); save it as UTF-8"
    )


def test_a_utf8_bom_is_accepted_and_a_folder_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfcurrency: EUR\n")
    assert load_yaml(path) == {"currency": "EUR"}
    with pytest.raises(InputError, match="is a folder; give a file") as info:
        load_json(tmp_path, what="--kube-objects")
    assert info.value.exit_code == documented_exit("input-not-a-file")
    with pytest.raises(InputError, match="cannot read it") as info:
        load_yaml(tmp_path / "missing.yaml", what="--config")
    assert str(info.value).startswith(f"--config {tmp_path / 'missing.yaml'}: cannot read it (No")


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("a.yaml", "a: {b: 1\n", "not valid YAML (line 2, column 1"),
        ("b.yaml", "a: !!python/object:os.system x\n", "not valid YAML"),
        ("c.yaml", "a: " + "9" * 5000 + "\n", "not valid YAML (Exceeds the limit"),
        ("d.json", '{"a": 1,}', "not valid JSON (line 1, column 9"),
        ("e.toml", "a = = 1\n", "not valid TOML"),
    ],
)
def test_syntax_errors_are_one_line_naming_the_file(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    loader = {".yaml": load_yaml, ".json": load_json, ".toml": load_toml}[path.suffix]
    with pytest.raises(InputError) as info:
        loader(path, what="scenario")
    assert str(info.value).startswith(f"scenario {path}: {words}")
    assert "\n" not in str(info.value) and len(str(info.value)) < 300 + len(str(path))


def test_describe_value_shows_type_and_at_most_80_characters() -> None:
    assert describe_value("5e-2") == "str '5e-2'"
    assert describe_value(["a", "b"]) == "list of 2 items ['a', 'b']"
    assert describe_value({"k": None}) == "dict of 1 item {'k': None}"
    huge: list[object] = ["lol"] * 9
    for _ in range(8):  # 9^9 strings if rendered whole; the preview reads only its head
        huge = [huge] * 9
    started = time.monotonic()
    shown = describe_value(huge)
    assert time.monotonic() - started < 0.1
    assert shown.startswith("list of 9 items [[[[") and len(shown) <= len("list of 9 items ") + 80
    assert describe_value(10**5000) == "int <16610-bit integer>"


@pytest.mark.parametrize("brk", LINE_BREAKS)
def test_describe_value_escapes_every_line_break(brk: str) -> None:
    shown = describe_value({"name": f"evil{brk}kind: Secret"})
    assert brk not in shown and len(shown.splitlines()) == 1
    assert "evil" in shown


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_random_bytes_end_in_a_value_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                 data: bytes) -> None:  # fmt: skip
    folder = tmp_path_factory.mktemp("bytes")
    for loader, name in ((load_yaml, "x.yaml"), (load_json, "x.json"), (load_toml, "x.toml")):
        path = folder / name
        path.write_bytes(data)
        try:
            loader(path, what="--opt")
        except InputError as exc:
            assert str(exc).startswith(f"--opt {path}: ") and len(str(exc).splitlines()) == 1


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(alphabet=st.sampled_from("ab=+-@\t\r:#&*[]{}'\" " + "".join(LINE_BREAKS)), max_size=12),
)


@settings(max_examples=150, deadline=None)
@given(
    value=st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=30,
    ),
    anchors=st.integers(min_value=0, max_value=12),
)
def test_generated_yaml_with_aliases_ends_in_a_value_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, value: object, anchors: int
) -> None:
    import yaml

    # a document holding the value, then ``anchors`` levels of 9 aliases each: below the bound
    # it loads as written, above it is refused; never more
    body = yaml.safe_dump({"v": value}, allow_unicode=True)
    levels = billion_laughs(anchors) if anchors >= 2 else ""
    path = tmp_path_factory.mktemp("gen") / "g.yaml"
    path.write_text(body + levels, encoding="utf-8")
    try:
        loaded = load_yaml(path)
    except InputError as exc:
        assert len(str(exc).splitlines()) == 1 and str(path) in str(exc)
        assert anchors >= 6  # 9^6 = 531,441 strings: the first fan-out past the bound
    else:
        assert anchors < 6
        assert nesting_depth(loaded) <= MAX_DEPTH

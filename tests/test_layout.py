"""The package tree is the architecture: stages import only downward and no modules import in a circle.

The graph is read from the source with ``ast`` (every ``import``, including those inside functions
and under ``TYPE_CHECKING``: a type a module needs is a dependency too). ``from P import name``
depends on ``P.name`` when that is a module, and on ``P`` itself (running ``P/__init__.py``), so a
module that imports its own package's face closes a circle through it. The layers are those of
``docs/architecture.md``; the test that the document names every stage keeps the two in step.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analyzer"

# Stage → layer. A stage may import its own modules and the stages of strictly lower layers.
LAYERS = {
    "core": 0,
    "prom": 1,
    "scheduling": 1,
    "usage": 1,
    "history": 1,
    "deliver": 1,
    "collect": 2,
    "sources": 2,
    "fragmentation": 2,
    "autoscaler": 2,
    "replay": 3,
    "whatif": 4,
    "trace": 4,
    "nightly": 4,
    "monthly": 4,
    "report": 5,
    "cli": 6,
}
# The package root holds only the version (importable from anywhere) and ``python -m analyzer``.
ROOT_MODULES = {"analyzer", "analyzer.__main__"}


def modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every absolute dotted name ``module`` imports (``from P import n`` yields ``P`` and ``P.n``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of the package it imports (not itself, not the root's version)."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        targets = {resolve(n) for n in imported_names(module, path) if n.startswith("analyzer")}
        graph[module] = {t for t in targets if t is not None and t not in (module, "analyzer")}
    return graph


def stage(module: str) -> str:
    """The stage a module belongs to: the first package under ``analyzer``."""
    return module.split(".")[1] if module.count(".") else module


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_stages_import_only_downward() -> None:
    upward = []
    for module, targets in import_graph().items():
        if module in ROOT_MODULES:
            continue
        for target in targets:
            here, there = stage(module), stage(target)
            if here != there and LAYERS[there] >= LAYERS[here]:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_every_module_sits_in_a_known_stage() -> None:
    homeless = [m for m in modules() if m not in ROOT_MODULES and stage(m) not in LAYERS]
    assert homeless == [], "add the new stage to LAYERS and docs/architecture.md"


def test_architecture_doc_names_every_stage() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [name for name in LAYERS if f"`{name}/`" not in text]
    assert missing == []


# The checker itself: it must see what it is meant to catch.
def test_circle_finder_sees_a_loop_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]


def test_from_package_import_depends_on_the_package_face(tmp_path: Path) -> None:
    module = tmp_path / "config.py"
    module.write_text("from analyzer.scheduling import state\n")
    names = set(imported_names("analyzer.scheduling.config", module))
    assert names == {"analyzer.scheduling", "analyzer.scheduling.state"}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from . import state\n", {"analyzer.scheduling", "analyzer.scheduling.state"}),
        ("from ..core import errors\n", {"analyzer.core", "analyzer.core.errors"}),
        ("def f():\n    import analyzer.core.paths\n", {"analyzer.core.paths"}),
    ],
)
def test_relative_and_local_imports_are_read(tmp_path: Path, code: str, expected: set[str]) -> None:
    module = tmp_path / "x.py"
    module.write_text(code)
    assert set(imported_names("analyzer.scheduling.x", module)) == expected


# Upstream plugin → the directory of ``pkg/scheduler/framework/plugins/`` (Koordinator's
# ``pkg/scheduler/plugins/`` for LoadAwareScheduling) that holds it there and here.
UPSTREAM_DIRECTORY = {
    "NodeResourcesFit": "noderesources",
    "NodeResourcesBalancedAllocation": "noderesources",
    "TaintToleration": "tainttoleration",
    "NodeUnschedulable": "nodeunschedulable",
    "NodeAffinity": "nodeaffinity",
    "NodePorts": "nodeports",
    "InterPodAffinity": "interpodaffinity",
    "PodTopologySpread": "podtopologyspread",
    "ImageLocality": "imagelocality",
    "PrioritySort": "queuesort",
    "DefaultPreemption": "defaultpreemption",
    "LoadAwareScheduling": "loadaware",
}
PLUGINS_DIR = PACKAGE / "scheduling" / "plugins"


def _defines(path: Path, name: str) -> bool:
    """``path`` has a top-level class called ``name`` or a top-level constant equal to ``"name"``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return True
        constant = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        if constant and node.value.value == name:  # type: ignore[union-attr]
            return True
    return False


def test_every_builtin_plugin_lives_where_upstream_keeps_it() -> None:
    from analyzer.scheduling.plugins import registry

    gpu_plugins = (PACKAGE / "scheduling" / "gpu" / "plugins.py").read_text(encoding="utf-8")
    for name in registry.available():
        if f'"{name}"' in gpu_plugins:
            continue  # the FGD paper's policies: not upstream plugins, beside their device model
        assert name in UPSTREAM_DIRECTORY, f"{name}: say which upstream directory holds it"
        where = PLUGINS_DIR / UPSTREAM_DIRECTORY[name]
        files = sorted(where.rglob("*.py")) if where.is_dir() else [where.with_suffix(".py")]
        assert any(f.exists() and _defines(f, name) for f in files), f"{name} not in {where}"


def test_the_layout_check_sees_a_misplaced_plugin(tmp_path: Path) -> None:
    module = tmp_path / "elsewhere.py"
    module.write_text('NAME = "Other"\nclass TaintToleration:\n    pass\n')
    assert _defines(module, "TaintToleration") and _defines(module, "Other")
    assert not _defines(module, "NodeAffinity")

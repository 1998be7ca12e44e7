"""The house's layering, read from the source: no upward import, no import cycle.

Layers, bottom to top (a module may import its own layer and the layers below):

    0 core        dpcore
    1 neighbors   datasets and neighbour relations
    2 mechanisms  the mechanisms and their protocol
    3 engine      audit (estimator, views, exact, runner, execution, results, api, testing)
    4 catalog     audit.catalog (the papers' families)      | siblings: neither imports
    4 reports     reports (text and PDF, from saved results) | the other
    5 app         audit.cli, audit.config, audit.bench, audit.sweep, audit.__main__, audit.pytest_plugin

Nothing imports ``audit.cli``.  An import inside a function body counts like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dpcore", "neighbors", "mechanisms", "audit", "reports")
APP = {"audit.cli", "audit.config", "audit.bench", "audit.sweep", "audit.__main__", "audit.pytest_plugin"}
LAYER = {"core": 0, "neighbors": 1, "mechanisms": 2, "engine": 3, "catalog": 4, "reports": 4, "app": 5}


def layer_of(module: str) -> str:
    top = module.split(".")[0]
    if top == "dpcore":
        return "core"
    if top in ("neighbors", "mechanisms", "reports"):
        return top
    if module == "audit.catalog" or module.startswith("audit.catalog."):
        return "catalog"
    if module in APP:
        return "app"
    return "engine"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> set[str]:
    """The project modules ``path`` imports (absolute and relative, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (names that are attributes map to their module)."""
    modules = {module_name(p, root): p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    out = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(path, name):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        out[name] = targets
    return out


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in edges.items():
        for dst in targets:
            ls, ld = layer_of(src), layer_of(dst)
            sibling = {ls, ld} == {"catalog", "reports"}
            if LAYER[ld] > LAYER[ls] or sibling or (dst == "audit.cli" and src != "audit.__main__"):
                bad.append(f"{src} ({ls}) imports {dst} ({ld})")
    return sorted(bad)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def without_parent_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {src: {t for t in targets if not t.startswith(src + ".")} for src, targets in edges.items()}


def test_no_upward_import():
    assert upward_imports(graph(ROOT)) == []


def test_no_import_cycle():
    assert cycles(without_parent_edges(graph(ROOT))) == []


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            target = tmp_path / p.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("module, line", [
    ("mechanisms/_probe.py", "from audit import runner\n"),             # mechanisms -> engine
    ("neighbors/_probe.py", "import mechanisms.classic\n"),              # neighbors -> mechanisms
    ("dpcore/_probe.py", "from neighbors import Dataset\n"),            # core -> anything
    ("audit/_probe.py", "from audit.catalog import kl\n"),              # engine -> catalog
    ("audit/_probe.py", "def f():\n    import reports.text\n"),         # engine -> reports, inside a function
    ("reports/_probe.py", "from audit import catalog\n"),               # reports -> catalog (siblings)
    ("audit/catalog/_probe.py", "from audit.cli import main\n"),        # nothing imports the CLI
])
def test_an_upward_import_is_caught(tree_copy: Path, module: str, line: str):
    (tree_copy / module).write_text(line, encoding="utf-8")
    probe = module.replace("/", ".").removesuffix(".py")
    found = upward_imports(graph(tree_copy))
    assert found and all(f.startswith(f"{probe} ") for f in found)


def test_a_cycle_is_caught(tree_copy: Path):
    (tree_copy / "audit" / "_probe_a.py").write_text("from audit import _probe_b\n", encoding="utf-8")
    (tree_copy / "audit" / "_probe_b.py").write_text("import audit._probe_a\n", encoding="utf-8")
    assert cycles(without_parent_edges(graph(tree_copy))) == [["audit._probe_a", "audit._probe_b"]]


def function_body_imports(root: Path) -> list[str]:
    """Imports inside function bodies of package code, except optional dependencies that say so
    in a comment on the line or the line above (dask, matplotlib, pypdf)."""
    found = []
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            lines = path.read_text(encoding="utf-8").splitlines()
            for fn in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        near = " ".join(lines[max(0, node.lineno - 2):node.lineno])
                        if "optional" not in near:
                            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return sorted(set(found))


def test_no_import_inside_a_function_but_optional_dependencies():
    assert function_body_imports(ROOT) == []


def test_an_import_inside_a_function_is_caught(tree_copy: Path):
    (tree_copy / "audit" / "_probe.py").write_text("def f():\n    import json\n    return json\n", encoding="utf-8")
    assert function_body_imports(tree_copy) == ["audit/_probe.py:2"]

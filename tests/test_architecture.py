"""The house's layering, read from the source: no upward import, no import cycle.

Layers of the ``dpaudit`` package, bottom to top (a module may import its own layer and the
layers below):

    0 core        dpaudit.core (errors, validators, closed sets)
    1 neighbors   dpaudit.neighbors (datasets and neighbour relations)
    2 mechanisms  dpaudit.mechanisms, dpaudit.adapters, dpaudit.claims (the mechanisms, their protocol,
                  adapters, the Rényi and zCDP claim kinds)
    3 runtime     dpaudit.runtime (the run machinery: where chunks run, run-folder files, checkpoint,
                  reach and identity, blame, interrupts, progress; no statistics)
    4 engine      dpaudit.engine (statistics: estimator, views, exact, runner, results, api, search, plan)
    5 one-run     dpaudit.onerun (canary games and one-run bounds; may use the engine's bounds)
    6 results     dpaudit.results (the results file: its schemas, the document writer, the loader and the
                  re-checkers, which recompute the engine's and the one-run bounds)
    7 catalog     dpaudit.catalog (the papers' families)          | siblings: none imports
    7 reports     dpaudit.reports (text and PDF, from saved records) | another
    7 testing     dpaudit.testing (assert_private, its budget)      |
    8 app         dpaudit.cli, dpaudit.runs, dpaudit.__main__, dpaudit.testing.pytest_plugin,
                  dpaudit.pipelines (one-run audits attached to a user's training library's objects)

The package's ``__init__`` is the public façade: it imports lazily (PEP 562), and other modules
may take ``__version__`` from it, nothing else.  Nothing imports ``dpaudit.cli``.  An import
inside a function body counts like any other.
"""

from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

from tests.layout import module_files, package_dirs

ROOT = Path(__file__).resolve().parents[1]
OLD_NAMES = ("audit", "dpcore", "mechanisms", "neighbors", "reports")
LAYER = {"core": 0, "neighbors": 1, "mechanisms": 2, "runtime": 3, "engine": 4, "onerun": 5, "results": 6,
         "catalog": 7, "reports": 7, "testing": 7, "app": 8}
SIBLINGS = {"catalog", "reports", "testing"}
ROOMS = {"core": "core", "neighbors": "neighbors", "mechanisms": "mechanisms", "adapters": "mechanisms",
         "claims": "mechanisms",
         "runtime": "runtime", "engine": "engine", "libraries": "mechanisms", "onerun": "onerun", "catalog": "catalog",
         "results": "results", "reports": "reports",
         "testing": "testing", "cli": "app", "runs": "app", "__main__": "app", "pipelines": "app"}


def layer_of(module: str) -> str:
    if module == "dpaudit.testing.pytest_plugin":
        return "app"
    parts = module.split(".")
    if parts[0] != "dpaudit":
        return "foreign"
    return ROOMS[parts[1]] if len(parts) > 1 else "facade"


def imports_of(path: Path, module: str) -> set[str]:
    """The project modules ``path`` imports (absolute and relative, at any depth)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return set(imports_in(path.read_text(encoding="utf-8"), package))


# Cached on the source text: every test reads the whole tree (and the tree_copy tests a copy that
# differs from it in one probe file), so each distinct file is parsed and walked once per process.
@functools.cache
def imports_in(source: str, package: str) -> frozenset[str]:
    """The project modules ``source``, a module of ``package``, imports (absolute and relative)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base != "dpaudit":  # from the façade: each name is a subpackage, or a façade name
                found.add(base)
            # the façade's version string is the one thing any layer may take from it
            found.update(f"{base}.{a.name}" for a in node.names if (base, a.name) != ("dpaudit", "__version__"))
    return frozenset(m for m in found if m.split(".")[0] in ("dpaudit", *OLD_NAMES))


# Modules the graph must hold: a layer each, so a tree read wrongly (moved, empty) is not "clean".
ANCHORS = ("dpaudit", "dpaudit.core", "dpaudit.neighbors", "dpaudit.mechanisms.base", "dpaudit.runtime.files",
           "dpaudit.engine.api", "dpaudit.onerun", "dpaudit.results.saved", "dpaudit.catalog", "dpaudit.reports",
           "dpaudit.testing", "dpaudit.cli",
           "dpaudit.runs", "dpaudit.__main__", "dpaudit.testing.pytest_plugin")


def package_files(root: Path) -> list[Path]:
    """Every module of the package, each once under its real path (pyproject.toml's package-dir)."""
    return sorted(module_files(root).values())


def graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (names that are attributes map to their module)."""
    modules = module_files(root)
    absent = [a for a in ANCHORS if a not in modules]
    assert not absent, f"the layering test found no {absent} under {root}: it reads the wrong tree"
    out = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(path, name):
            if imported.split(".")[0] in OLD_NAMES:
                targets.add(imported)  # a generic top-level name: never ours to import
                continue
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
            if ld == "foreign":  # a generic top-level name: never ours to import
                bad.append(f"{src} ({ls}) imports {dst} (not dpaudit)")
                continue
            if ls == "facade":
                continue
            sibling = ls != ld and {ls, ld} <= SIBLINGS
            upward = ld == "facade" or LAYER[ld] > LAYER[ls]
            if upward or sibling or (dst == "dpaudit.cli" and src != "dpaudit.__main__"):
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
    edges = graph(ROOT)
    assert len(edges) == len(package_files(ROOT)) > 100  # every module of the tree, each once
    assert upward_imports(edges) == []


def test_an_empty_or_missing_tree_is_refused(tmp_path: Path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with pytest.raises(LookupError, match=r"no __init__\.py"):
        graph(tmp_path)
    for folder in package_dirs(tmp_path).values():  # the folders, with their __init__ files only
        src = ROOT / folder.relative_to(tmp_path)
        for init in src.rglob("__init__.py"):
            (folder / init.parent.relative_to(src)).mkdir(parents=True, exist_ok=True)
            (folder / init.relative_to(src)).write_text("", encoding="utf-8")
    with pytest.raises(AssertionError, match="found no"):
        graph(tmp_path)


def test_no_import_cycle():
    assert cycles(without_parent_edges(graph(ROOT))) == []


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in package_dirs(ROOT).values():
        shutil.copytree(folder, tmp_path / folder.relative_to(ROOT),
                        ignore=shutil.ignore_patterns("__pycache__", "configs"))
    return tmp_path


def test_the_package_imports_no_generic_top_level_name():
    """A user's ``audit.py`` or ``mechanisms/`` must never stand in for ours."""
    assert [e for e in upward_imports(graph(ROOT)) if any(f" imports {n}" in e for n in OLD_NAMES)] == []


@pytest.mark.parametrize("path, line", [
    ("mechanisms/_probe.py", "from dpaudit.engine import runner\n"),          # mechanisms -> engine
    ("neighbors/_probe.py", "import dpaudit.mechanisms.classic\n"),          # neighbors -> mechanisms
    ("audit/core/_probe.py", "from dpaudit.neighbors import Dataset\n"),     # core -> anything
    ("audit/runtime/_probe.py", "from dpaudit.engine import runner\n"),       # runtime -> engine
    ("audit/engine/_probe.py", "from dpaudit.catalog import kl\n"),          # engine -> catalog
    ("audit/engine/_probe.py", "from dpaudit.results import saved\n"),       # engine -> results
    ("audit/results/_probe.py", "from dpaudit.reports import text\n"),       # results -> reports
    ("audit/engine/_probe.py", "from dpaudit.onerun import game\n"),         # engine -> one-run
    ("audit/engine/_probe.py", "def f():\n    import dpaudit.reports.text\n"),  # engine -> reports, in a function
    ("audit/engine/_probe.py", "from dpaudit import audit_mechanism\n"),     # engine -> the façade
    ("audit/engine/_probe.py", "from mechanisms import base\n"),             # a generic top-level name
    ("reports/_probe.py", "from dpaudit import catalog\n"),                  # reports -> catalog (siblings)
    ("audit/testing/_probe.py", "from dpaudit.reports import text\n"),       # testing -> reports (siblings)
    ("audit/catalog/_probe.py", "from dpaudit.cli import main\n"),           # nothing imports the CLI
])
def test_an_upward_import_is_caught(tree_copy: Path, path: str, line: str):
    (tree_copy / path).write_text(line, encoding="utf-8")
    probe = next(name for name, file in module_files(tree_copy).items() if file == tree_copy / path)
    found = upward_imports(graph(tree_copy))
    assert found and all(f.startswith(f"{probe} ") for f in found)


def test_a_cycle_is_caught(tree_copy: Path):
    (tree_copy / "audit" / "engine" / "_probe_a.py").write_text("from dpaudit.engine import _probe_b\n",
                                                                 encoding="utf-8")
    (tree_copy / "audit" / "engine" / "_probe_b.py").write_text("import dpaudit.engine._probe_a\n", encoding="utf-8")
    assert cycles(without_parent_edges(graph(tree_copy))) == [["dpaudit.engine._probe_a", "dpaudit.engine._probe_b"]]


def function_body_imports(root: Path) -> list[str]:
    """Imports inside function bodies of package code, except optional dependencies that say so
    in a comment on the line or the line above (dask, matplotlib, pypdf)."""
    return sorted({f"{path.relative_to(root)}:{line}" for path in package_files(root)
                   for line in function_body_import_lines(path.read_text(encoding="utf-8"))})


@functools.cache  # on the source text, as imports_in
def function_body_import_lines(source: str) -> frozenset[int]:
    """The lines of ``source`` holding an import inside a function body and no "optional" comment."""
    lines = source.splitlines()
    found = set()
    for fn in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom):
                near = " ".join(lines[max(0, node.lineno - 2):node.lineno])
                if "optional" not in near:
                    found.add(node.lineno)
    return frozenset(found)


def test_no_import_inside_a_function_but_optional_dependencies():
    assert function_body_imports(ROOT) == []


def test_an_import_inside_a_function_is_caught(tree_copy: Path):
    (tree_copy / "audit" / "engine" / "_probe.py").write_text("def f():\n    import json\n    return json\n",
                                                              encoding="utf-8")
    assert function_body_imports(tree_copy) == ["audit/engine/_probe.py:2"]

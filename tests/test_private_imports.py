"""No private name crosses a module boundary inside the package.

A leading underscore says "only this module relies on this": a name another module imports
(``from dpaudit.engine.runner import _rng``) or reaches through a module
(``runner._draw_chunk(...)``) is a shared helper in disguise, and a change to it breaks a module
its author did not look at.  Such a helper is made public (no underscore, a docstring) or moved to
the module that uses it.

The check reads the source folders (pyproject.toml's ``package-dir``: ``audit/``, ``mechanisms/``,
``neighbors/``, ``reports/``) with :mod:`ast`, never through an import, and names each
``from dpaudit.X import _name`` (absolute or relative, at any depth) and each ``module._name``
where ``module`` is bound to another of the package's modules.  Dunder names (``__version__``)
are not private.  The synthetic-folder tests show it can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layout import module_files

ROOT = Path(__file__).resolve().parents[1]

# Uses allowed by name (none: the last one, runs.onerun's use of the catalog's family rejection, is a
# public function now); an entry here must name a use that still exists (the test below).
EXCEPTIONS: frozenset[tuple[str, str]] = frozenset()


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _base(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` reads from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _target(node: ast.expr, bound: dict[str, str], modules: set[str]) -> str | None:
    """The package module an expression names (``runner``, ``dpaudit.engine.runner``), if any."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        parent = _target(node.value, bound, modules)
        if parent is not None and f"{parent}.{node.attr}" in modules:
            return f"{parent}.{node.attr}"
    return None


def private_uses(files: dict[str, Path]) -> list[tuple[str, str, str]]:
    """``(module, "path:line", "imported.module._name")`` for every private name used across modules."""
    modules = set(files)
    found: list[tuple[str, str, str]] = []
    for module, path in sorted(files.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        bound: dict[str, str] = {}  # local name -> the package module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                            alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = _base(node, package)
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif base in modules and base != module and is_private(alias.name):
                        found.append((module, f"{path}:{node.lineno}", f"{base}.{alias.name}"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and is_private(node.attr):
                owner = _target(node.value, bound, modules)
                if owner is not None and owner != module:
                    found.append((module, f"{path}:{node.lineno}", f"{owner}.{node.attr}"))
    return found


def test_no_private_name_is_used_across_the_packages_modules():
    files = module_files(ROOT)
    assert {"dpaudit.engine.runner", "dpaudit.cli.run", "dpaudit.reports.pdf", "dpaudit.neighbors.search"} <= set(files)
    offenders = [f"{where} uses {name}" for module, where, name in private_uses(files)
                 if (module, name) not in EXCEPTIONS]
    assert not offenders, "private names used across modules (make each public or move it):\n" + "\n".join(offenders)


def test_the_exceptions_are_still_needed():
    """An exception whose use has gone must go too, or it would silently allow a new one."""
    used = {(module, name) for module, _, name in private_uses(module_files(ROOT))}
    assert set(EXCEPTIONS) <= used


def _tree(root: Path, modules: dict[str, str]) -> dict[str, Path]:
    """A synthetic package ``pkg`` under ``root/src`` (its own pyproject.toml), read as the real one is."""
    (root / "pyproject.toml").write_text('[tool.setuptools]\npackages = ["dpaudit", "dpaudit.sub"]\n'
                                         '[tool.setuptools.package-dir]\ndpaudit = "src"\n', encoding="utf-8")
    for relative, text in {"__init__.py": "", "sub/__init__.py": "", **modules}.items():
        (root / "src" / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / relative).write_text(text, encoding="utf-8")
    return module_files(root)


def test_the_check_names_private_imports_and_attribute_uses(tmp_path):
    files = _tree(tmp_path, {
        "sub/helpers.py": "_secret = 1\n\ndef _helper():\n    return _secret\n\n__version__ = '1'\n",
        "absolute.py": "from dpaudit.sub.helpers import _helper\n",
        "relative.py": "def f():\n    from .sub.helpers import _secret as public\n    return public\n",
        "attribute.py": "from dpaudit.sub import helpers\n\nhelpers._helper()\n",
        "dotted.py": "import dpaudit.sub.helpers\n\ndpaudit.sub.helpers._secret\n",
        "aliased.py": "import dpaudit.sub.helpers as h\n\nh._secret\n",
    })
    names = sorted((module, name) for module, _, name in private_uses(files))
    assert names == [("dpaudit.absolute", "dpaudit.sub.helpers._helper"),
                     ("dpaudit.aliased", "dpaudit.sub.helpers._secret"),
                     ("dpaudit.attribute", "dpaudit.sub.helpers._helper"),
                     ("dpaudit.dotted", "dpaudit.sub.helpers._secret"),
                     ("dpaudit.relative", "dpaudit.sub.helpers._secret")]
    where = {module: place for module, place, _ in private_uses(files)}
    assert where["dpaudit.relative"].endswith("relative.py:2")


def test_the_check_allows_public_names_dunders_own_privates_and_private_aliases(tmp_path):
    files = _tree(tmp_path, {
        "sub/helpers.py": "_secret = 1\n\ndef helper():\n    return _secret\n\n__version__ = '1'\n",
        "clean.py": ("from dpaudit.sub import helpers as _helpers\nfrom dpaudit.sub.helpers import helper as _h, "
                     "__version__\nfrom os import _exit\n\n_mine = _helpers.helper()\nprint(_mine, _h, _exit)\n"),
    })
    assert private_uses(files) == []

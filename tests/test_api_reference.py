"""The API reference (docs/api.rst) documents every public name: each name in the ``__all__`` of a
public module appears in an autodoc directive, under its module's path or, for a name the module
re-exports, under the path where the reference documents it."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.docexamples import ROOT

API = (ROOT / "docs" / "api.rst").read_text(encoding="utf-8")
PUBLIC = ("dpaudit", "dpaudit.testing", "dpaudit.onerun", "dpaudit.adapters", "dpaudit.libraries", "dpaudit.neighbors",
          "dpaudit.mechanisms.base", "dpaudit.engine.stattests")
DIRECTIVE = re.compile(r"^\.\. auto(?P<kind>\w+):: (?P<target>[\w.]+)\n(?P<options>(?:   :.*\n)*)", flags=re.M)


def documented() -> set[str]:
    """Every dotted name the reference documents: explicit directives, and the ``__all__`` of each
    ``automodule`` with ``:members:`` less its ``:exclude-members:``."""
    names: set[str] = set()
    for match in DIRECTIVE.finditer(API):
        target, options = match["target"], match["options"]
        names.add(target)
        if match["kind"] == "module" and re.search(r"^   :members:", options, flags=re.M):
            excluded = re.search(r":exclude-members: (.*)", options)
            skip = {n.strip() for n in excluded[1].split(",")} if excluded else set()
            names |= {f"{target}.{n}" for n in importlib.import_module(target).__all__ if n not in skip}
    return names


def _documented_somewhere(module: str, name: str, names: set[str]) -> bool:
    if f"{module}.{name}" in names:
        return True
    obj = getattr(importlib.import_module(module), name)
    # a re-export (dpaudit.mechanisms.base.Guarantee is dpaudit.core's): documented where the reference puts it
    return any(n.rsplit(".", 1)[-1] == name and _resolves_to(n, obj) for n in names)


def _resolves_to(dotted: str, obj: object) -> bool:
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr) is obj
    except (ImportError, AttributeError):
        return False


def test_the_reference_is_read():
    names = documented()
    assert len(names) >= 40 and "dpaudit.audit_mechanism" in names and "dpaudit.onerun.audit_one_run" in names


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_is_in_the_reference(module):
    names = documented()
    missing = [n for n in importlib.import_module(module).__all__
               if n != "__version__" and not _documented_somewhere(module, n, names)]
    assert not missing, f"{module}: {missing} are public (in __all__) but not in docs/api.rst"


def test_every_documented_name_exists():
    for name in documented():
        module, _, attr = name.rpartition(".")
        try:
            importlib.import_module(name)
        except ImportError:
            assert hasattr(importlib.import_module(module), attr), f"docs/api.rst documents {name}, which is gone"

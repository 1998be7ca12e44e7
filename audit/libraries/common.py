"""What every library adapter returns, and how it finds the library it adapts.

An adapter reads a library's own object (an OpenDP measurement, a diffprivlib mechanism or model, a
python-dp algorithm) and returns a :class:`LibraryAudit`: the auditable mechanism, the neighbouring
pair its guarantee speaks of, and the claim the library itself states for that pair — nothing is
typed in by hand, so the audit tests what the library promises at its installed version.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType, SimpleNamespace
from typing import Any

from dpaudit.core import InputError
from dpaudit.neighbors import Pair

__all__ = ["EXTRA", "LibraryAudit", "library_version", "load_library", "opendp_core"]

EXTRA = "libraries"  # pyproject's extra that pins every library an adapter drives
INSTALL = f"python3 -m pip install 'dpaudit[{EXTRA}]'"


@dataclass(frozen=True)
class LibraryAudit:
    """A library's object made auditable: pass ``mechanism``, ``pair.d``, ``pair.d_prime``,
    ``relation=pair.relation`` and ``claims`` to :func:`dpaudit.audit_mechanism`.

    ``reading`` says where the claim was read (e.g. ``map(1) under MaxDivergence``); ``seeded`` is
    False when the library draws its own entropy (the audit's record then says "unseeded")."""

    library: str           # the distribution name, e.g. "opendp"
    version: str           # its installed version
    mechanism: Any
    pair: Pair
    claims: tuple[Any, ...]  # Guarantee, or a dpaudit.claims Rényi/zCDP claim
    reading: str
    seeded: bool

    def audit_arguments(self) -> dict[str, Any]:
        """The keyword arguments of :func:`dpaudit.audit_mechanism` this adapter decides."""
        return {"mechanism": self.mechanism, "d": self.pair.d, "d_prime": self.pair.d_prime,
                "relation": self.pair.relation, "claims": list(self.claims)}


def library_version(distribution: str) -> str:
    """The installed version of ``distribution``, or "not installed"."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def load_library(module: str, distribution: str) -> ModuleType:
    """``import module``, or an :class:`InputError` (exit 2) naming the extra that installs it.

    A library that is installed but fails to import (diffprivlib 0.6.6 with scikit-learn ≥ 1.9, which
    removed ``sklearn.tree._tree.DOUBLE``) is reported with its own error and the same advice."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module.split(".")[0]:
            raise InputError(f"{distribution} cannot be imported ({exc}); install the versions the "
                             f"'{EXTRA}' extra pins: {INSTALL}") from None
        raise InputError(f"{distribution} is not installed: the adapter needs it; install the '{EXTRA}' "
                         f"extra: {INSTALL}") from None
    except ImportError as exc:
        raise InputError(f"{distribution} {library_version(distribution)} is installed but cannot be imported "
                         f"({exc}); install the versions the '{EXTRA}' extra pins: {INSTALL}") from None


OPENDP_CORE = ("mod", "domains", "metrics", "measures", "typing")
"""The OpenDP modules whose names ``opendp.prelude`` puts at its top level and dpaudit uses."""


def opendp_core() -> Any:
    """OpenDP's names as ``import opendp.prelude as dp`` gives them (``dp.t``, ``dp.m``, ``dp.c``,
    domains, metrics, measures, ``dp.enable_features``), without what the prelude imports besides:
    its ``extras`` (scikit-learn, polars, pandas), about 1.3 CPU s no measurement here needs."""
    modules = [load_library(f"opendp.{name}", "opendp") for name in OPENDP_CORE]
    names = {k: v for module in modules for k, v in vars(module).items() if not k.startswith("_")}
    t, m, c = (load_library(f"opendp.{name}", "opendp") for name in ("transformations", "measurements", "combinators"))
    return SimpleNamespace(**names, t=t, m=m, c=c)

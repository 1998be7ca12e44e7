"""The DP libraries people use, audited through their own objects and their own claims.

:func:`adapt` takes a library's object — an OpenDP measurement, a diffprivlib mechanism, tool or
model, a python-dp algorithm — and returns a :class:`LibraryAudit`: a dpaudit mechanism, the
neighbouring pair its guarantee speaks of, and the claim the library states, read from the object
(OpenDP's privacy map in its output measure; diffprivlib's and python-dp's ``epsilon``/``delta``
with their bounds)::

    audit = adapt(dp.t.make_sum(*space) >> dp.m.then_laplace(scale=1.0))
    result = audit_mechanism(**audit.audit_arguments(), samples=100_000)

The libraries come with the ``libraries`` extra (``pip install 'dpaudit[libraries]'``); an adapter
whose library is missing stops with an :class:`~dpaudit.core.InputError` naming it (exit 2).
"""

from __future__ import annotations

import functools
from typing import Any

from dpaudit.core import InputError
from dpaudit.libraries.common import EXTRA, LibraryAudit, library_version, load_library, opendp_core
from dpaudit.libraries.diffprivlib_objects import from_diffprivlib
from dpaudit.libraries.opendp_measurements import from_opendp
from dpaudit.libraries.pydp_algorithms import from_pydp

__all__ = ["EXTRA", "LIBRARIES", "LibraryAudit", "adapt", "from_diffprivlib", "from_opendp", "from_pydp",
           "library_version", "load_library", "opendp_core"]

LIBRARIES = ("opendp", "diffprivlib", "python-dp")


def _home(obj: Any) -> str:
    inner = obj.func if isinstance(obj, functools.partial) else obj
    module = inner.__module__ if isinstance(inner, type) or (callable(inner) and hasattr(inner, "__name__")) else (
        type(inner).__module__)
    return str(module).split(".")[0]


def adapt(obj: Any, **options: Any) -> LibraryAudit:
    """The :class:`LibraryAudit` of a library's object, by the library it comes from (the options go
    to :func:`from_opendp`, :func:`from_diffprivlib` or :func:`from_pydp`)."""
    home = _home(obj)
    if home == "opendp":
        return from_opendp(obj, **options)
    if home == "diffprivlib":
        return from_diffprivlib(obj, **options)
    if home == "pydp":
        return from_pydp(obj, **options)
    raise InputError(f"adapt does not know {type(obj).__name__} objects (from {home!r}): supported are OpenDP "
                     "measurements, diffprivlib mechanisms, tools (functools.partial) and models, and python-dp "
                     "algorithms")

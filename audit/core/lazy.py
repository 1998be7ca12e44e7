"""Modules and functions imported on first use.

``scipy.stats`` (with the ``scipy.optimize`` and ``scipy.linalg`` it pulls in) costs about 0.45 CPU s
to import, a third of a command's start: every ``dpaudit`` process paid it at import time, through
the catalog, although most commands never call it (``list``, ``plan`` of a typo, a run of a user's
mechanism).  The modules that use it name it through :func:`lazy` instead, under
``TYPE_CHECKING`` the real import, so that the type checker sees the module itself::

    if TYPE_CHECKING:
        from scipy import stats
    else:
        stats = lazy("scipy.stats")

and the import happens at the first attribute read (``stats.norm``) or call.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["lazy"]


class _Lazy:
    """A stand-in for ``module`` (or its attribute ``name``) that imports it when first used."""

    __slots__ = ("_module", "_name", "_target")

    def __init__(self, module: str, name: str | None) -> None:
        self._module, self._name = module, name
        self._target: Any = None

    def _resolve(self) -> Any:
        if self._target is None:
            module = importlib.import_module(self._module)
            self._target = module if self._name is None else getattr(module, self._name)
        return self._target

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._resolve(), attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        what = self._module if self._name is None else f"{self._module}.{self._name}"
        return f"<{what}, imported on first use>"


def lazy(module: str, name: str | None = None) -> Any:
    """``module`` (``"scipy.stats"``), or its attribute ``name`` (``lazy("scipy.stats", "norm")``),
    imported when an attribute of it is first read or it is first called."""
    return _Lazy(module, name)

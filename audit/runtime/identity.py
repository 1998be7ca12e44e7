"""Canonical descriptions of values and their fingerprint: equal contents give equal descriptions
in any process, so a run's identity (its folder's fingerprint) and a dataset's content hash (the
check that a mechanism did not write to its inputs) are the same computation."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from dpaudit.neighbors import Dataset
from dpaudit.runtime.blame import is_user_file

__all__ = ["Describer", "describe", "fingerprint", "with_helpers"]

_MAX_DEPTH = 12
_MAX_NODES = 200_000


class Describer:
    """Canonical, JSON-able descriptions of values: equal contents give equal descriptions in any
    process (no ids, no addresses, no set order), large arrays enter by their hash."""

    def __init__(self) -> None:
        self.nodes = 0
        self.met: set[str] = set()  # where the code of the functions and classes met is

    @property
    def modules(self) -> set[str]:
        """The modules of the code met, with the user's modules they import (:func:`with_helpers`)."""
        return with_helpers(self.met)

    def __call__(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else repr(value)
        if isinstance(value, np.generic):
            return self(value.item(), depth)
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        self.met.update(c.__module__ for c in type(value).__mro__)
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return {"type": kind}
        if isinstance(value, Dataset):
            return {"dataset": value.fingerprint}
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "O":
                return {"array": self(value.tolist(), depth + 1)}
            data = np.ascontiguousarray(value)
            return {"array": [data.dtype.str, list(data.shape)], "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
        if isinstance(value, Mapping):
            return {"mapping": sorted(([self(k, depth + 1), self(v, depth + 1)] for k, v in value.items()),
                                      key=lambda kv: json.dumps(kv, sort_keys=True))}
        if isinstance(value, (list, tuple)):
            return [self(v, depth + 1) for v in value]
        if isinstance(value, (set, frozenset)):
            return {"set": sorted((self(v, depth + 1) for v in value), key=lambda v: json.dumps(v, sort_keys=True))}
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
        if isinstance(value, type):
            self.met.add(value.__module__)
            return {"class": f"{value.__module__}.{value.__qualname__}"}
        if isinstance(value, types.MethodType):
            return {"method": value.__func__.__qualname__, "self": self(value.__self__, depth + 1)}
        if isinstance(value, types.FunctionType):
            self.met.add(str(value.__module__))
            cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
            return {"function": f"{value.__module__}.{value.__qualname__}",
                    "code": hashlib.sha256(value.__code__.co_code).hexdigest(),
                    "defaults": self(value.__defaults__, depth + 1), "closure": self(cells, depth + 1)}
        if dataclasses.is_dataclass(value):
            return {"type": kind, "fields": {f.name: self(getattr(value, f.name, None), depth + 1)
                                             for f in dataclasses.fields(value)}}
        state = getattr(value, "__dict__", None)
        slots = [s for cls in type(value).__mro__ for s in getattr(cls, "__slots__", ())]
        if isinstance(state, dict) or slots:
            fields = dict(state) if isinstance(state, dict) else {}
            fields.update({s: getattr(value, s) for s in slots if hasattr(value, s) and s != "__dict__"})
            return {"type": kind, "state": {str(k): self(v, depth + 1) for k, v in sorted(fields.items())}}
        return {"type": kind}


def with_helpers(modules: Iterable[str]) -> set[str]:
    """``modules`` and, transitively, every user module (a file outside the standard library, the
    installed packages and dpaudit: :func:`dpaudit.runtime.blame.is_user_file`) that a user module among
    them refers to in its globals: a module it imports (``import helpers``, ``import pkg.helpers``)
    or a function or class it imports from one (``from helpers import noise``).

    So a helper in another file that ``sample`` calls enters the code fingerprint with the module
    defining the mechanism, and an edit of it refuses a resume.  Only what the code refers to is
    followed, never what else happens to be loaded, so the set is the same at a run's start and at
    its resume.  A module imported only inside a function body is not seen."""
    out: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        module = sys.modules.get(name)
        if module is None or not is_user_file(getattr(module, "__file__", None) or ""):
            continue  # only a user's module is followed: the environment's code is named by its version
        for value in list(vars(module).values()):
            ref = value.__name__ if isinstance(value, types.ModuleType) else (
                getattr(value, "__module__", None) if isinstance(value, (type, types.FunctionType)) else None)
            target = sys.modules.get(ref) if isinstance(ref, str) else None
            if target is not None and ref not in out and is_user_file(getattr(target, "__file__", None) or ""):
                todo.append(ref)  # type: ignore[arg-type]
    return out


def _filled(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:  # an empty cell (a name not yet bound when the closure was made)
        return False
    return True


def describe(value: Any) -> Any:
    """The canonical description of ``value`` that enters a run's identity."""
    return Describer()(value)


def fingerprint(ident: Mapping[str, Any]) -> str:
    """SHA-256 of the identity in canonical JSON."""
    text = json.dumps(ident, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()



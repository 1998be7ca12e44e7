"""diffprivlib's mechanisms, tools and models as audits, seeded from the audit's generator.

diffprivlib states its guarantee in its parameters: ``epsilon`` (and ``delta``), with the
``sensitivity`` of a mechanism or the ``bounds`` of a tool or model.  :func:`from_diffprivlib`
reads them from the object and builds

* for a **mechanism** (``Laplace``, ``Gaussian``, ``Geometric``, ``Exponential``, …): a release of
  one query answer (or, for the selection mechanisms, of a utility vector); the pair is two answers
  ``sensitivity`` apart (utility vectors at ℓ∞ distance ``sensitivity``);
* for a **tool** (a ``functools.partial`` of ``diffprivlib.tools.mean``, ``var``, ``histogram``, …
  with its ``epsilon`` and ``bounds`` or ``range``): a release on a vector of records;
* for a **model** (``LinearRegression``, ``GaussianNB``): a fit on an array whose last column is
  the label, releasing the fitted parameters.

Each draw rebuilds the object with a ``random_state`` seeded from the audit's generator
(:func:`dpaudit.adapters.numpy_random_state`), so the audit is seeded and reproducible, and gives
each call a fresh ``BudgetAccountant`` (the default one would keep every spend of the audit).
Relations: tools whose sensitivity divides by the public n (``mean``, ``var``, ``std``, the
quantiles) and the models are bounded DP (one record replaced: swap); ``sum``, ``count_nonzero``
and the histograms are add-remove.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.adapters import numpy_random_state
from dpaudit.core import Guarantee, InputError, Relation
from dpaudit.libraries.common import LibraryAudit, library_version, load_library
from dpaudit.neighbors import Pair

__all__ = ["MECHANISMS", "MODELS", "TOOLS", "DiffprivlibRelease", "from_diffprivlib"]

VALUE_MECHANISMS = ("Laplace", "LaplaceTruncated", "LaplaceFolded", "LaplaceBoundedDomain", "LaplaceBoundedNoise",
                    "Gaussian", "GaussianAnalytic", "GaussianDiscrete", "Geometric", "GeometricTruncated",
                    "GeometricFolded", "Snapping", "Staircase", "Binary")
SELECTION_MECHANISMS = ("Exponential", "PermuteAndFlip")
MECHANISMS = VALUE_MECHANISMS + SELECTION_MECHANISMS
SWAP_TOOLS = ("mean", "nanmean", "var", "nanvar", "std", "nanstd", "median", "quantile", "percentile")
ADD_REMOVE_TOOLS = ("sum", "nansum", "count_nonzero", "histogram")
TOOLS = SWAP_TOOLS + ADD_REMOVE_TOOLS
MODELS = ("LinearRegression", "GaussianNB")
DEFAULT_SIZE = 10  # records of a default pair


def _fresh(obj: Any, state: np.random.RandomState, **changes: Any) -> Any:
    """A copy of the mechanism ``obj`` built from its own parameters, drawing from ``state``."""
    names = [p for p in inspect.signature(type(obj).__init__).parameters if p not in ("self", "random_state")]
    params = {p: getattr(obj, p) for p in names}
    return type(obj)(**{**params, **changes}, random_state=state)


def _releases(kind: str, obj: Any, data: Any, size: int, state: np.random.RandomState) -> list[Any]:
    """``size`` releases on ``data``, every draw from ``state`` (one stream: independent releases)."""
    from diffprivlib.accountant import BudgetAccountant  # optional dependency (the libraries extra)

    if kind == "mechanism":
        mech = _fresh(obj, state)
        value = data.item() if isinstance(data, np.ndarray) else data
        return [mech.randomise(value) for _ in range(size)]
    if kind == "selection":
        mech = _fresh(obj, state, utility=np.asarray(data, dtype=float).tolist())
        return [mech.randomise() for _ in range(size)]
    if kind == "tool":
        outs = [obj(np.asarray(data), random_state=state, accountant=BudgetAccountant()) for _ in range(size)]
        return [np.asarray(o[0] if isinstance(o, tuple) else o, dtype=float) for o in outs]
    from sklearn.base import clone  # optional dependency (diffprivlib needs it)

    x, y = np.asarray(data)[:, :-1], np.asarray(data)[:, -1]
    out = []
    for _ in range(size):  # a fresh accountant per fit: the default one would keep every spend of the audit
        fitted = clone(obj).set_params(random_state=state, accountant=BudgetAccountant()).fit(
            x, y.astype(int) if kind == "classifier" else y)
        out.append(np.concatenate([fitted.theta_.ravel(), fitted.var_.ravel(), fitted.class_count_.ravel()])
                   if kind == "classifier" else np.concatenate([np.ravel(fitted.coef_), np.ravel(fitted.intercept_)]))
    return out


@dataclass(frozen=True, eq=False)
class DiffprivlibRelease:
    """``size`` releases of a diffprivlib object, each seeded from the audit's generator."""

    obj: Any
    kind: str  # mechanism | selection | tool | regressor | classifier
    name: str
    seeded: bool = True

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(_releases(self.kind, self.obj, data, size, numpy_random_state(rng)))


def _claim(epsilon: Any, delta: Any, relation: str, claim_id: str, where: str) -> Guarantee:
    return Guarantee(epsilon=float(epsilon), delta=float(delta or 0.0), relation=relation,
                     source=f"diffprivlib {library_version('diffprivlib')}, {where}", claim_id=claim_id)


def _mechanism_pair(obj: Any, name: str) -> Pair:
    if name in SELECTION_MECHANISMS:
        k = len(obj.utility)
        sens = float(obj.sensitivity)
        u = np.zeros(k)
        return Pair(u, np.concatenate([[sens], np.zeros(k - 1)]), f"utilities 0 and +{sens} on the first of {k}",
                    Relation.SWAP.value)
    if name == "Binary":
        return Pair(obj.value0, obj.value1, f"values {obj.value0!r} and {obj.value1!r}", Relation.SWAP.value)
    low = getattr(obj, "lower", 0)
    low = 0 if low is None or not np.isfinite(low) else low
    other = low + obj.sensitivity
    return Pair(np.asarray(low), np.asarray(other), f"answers {low} and {other} (sensitivity {obj.sensitivity})",
                Relation.SWAP.value)


def _records_pair(low: float, high: float, relation: str) -> Pair:
    if relation == Relation.ADD_REMOVE.value:
        return Pair(np.array([low]), np.array([low, high]), f"add a record {high} to [{low}]", relation)
    n = DEFAULT_SIZE
    return Pair(np.full(n, float(low)), np.array([low] * (n - 1) + [high], dtype=float),
                f"{n} records {low}; one replaced by {high}", relation)


def _tool(obj: functools.partial, claim_id: str) -> tuple[DiffprivlibRelease, Pair, Guarantee]:
    name = obj.func.__name__
    keywords = {**{p.name: p.default for p in inspect.signature(obj.func).parameters.values()}, **obj.keywords}
    relation = Relation.SWAP.value if name in SWAP_TOOLS else Relation.ADD_REMOVE.value
    bounds = keywords.get("range") if name == "histogram" else keywords.get("bounds")
    if bounds is None:
        raise InputError(f"diffprivlib.tools.{name} without {'range' if name == 'histogram' else 'bounds'}: "
                         "diffprivlib then reads the bounds from the data (not private); give them in the partial")
    claim = _claim(keywords["epsilon"], 0.0, relation, claim_id, f"tools.{name}(epsilon={keywords['epsilon']})")
    pair = _records_pair(float(np.min(bounds)), float(np.max(bounds)), relation)
    return DiffprivlibRelease(obj, "tool", f"diffprivlib-{name}"), pair, claim


def _model_pair(obj: Any, name: str) -> Pair:
    if name == "GaussianNB":
        low, high = (float(np.min(obj.bounds[0])), float(np.max(obj.bounds[1])))
        labels = (0.0, 1.0)
    else:
        low, high = float(np.min(obj.bounds_X[0])), float(np.max(obj.bounds_X[1]))
        labels = (float(np.min(obj.bounds_y[0])), float(np.max(obj.bounds_y[1])))
    n = DEFAULT_SIZE
    rows = np.array([[low + (high - low) * (i % 2), labels[i % 2]] for i in range(n)])
    other = rows.copy()
    other[0] = [high, labels[0]] if rows[0, 0] == low else [low, labels[1]]
    return Pair(rows, other, f"{n} records (x, y) alternating; the first replaced by {tuple(other[0])}",
                Relation.SWAP.value)


def _identify(obj: Any) -> str:
    if isinstance(obj, functools.partial) and getattr(obj.func, "__module__", "").startswith("diffprivlib.tools"):
        if obj.func.__name__ in TOOLS:
            return "tool"
    elif type(obj).__module__.startswith("diffprivlib.mechanisms") and type(obj).__name__ in MECHANISMS:
        return "selection" if type(obj).__name__ in SELECTION_MECHANISMS else "mechanism"
    elif type(obj).__module__.startswith("diffprivlib.models") and type(obj).__name__ in MODELS:
        return "classifier" if type(obj).__name__ == "GaussianNB" else "regressor"
    raise InputError(f"from_diffprivlib does not know {obj!r}: supported are the mechanisms {', '.join(MECHANISMS)}; "
                     f"functools.partial of the tools {', '.join(TOOLS)}; the models {', '.join(MODELS)}")


def from_diffprivlib(obj: Any, *, d: Any = None, d_prime: Any = None, name: str = "",
                     claim_id: str = "") -> LibraryAudit:
    """A diffprivlib mechanism, tool (as a ``functools.partial``) or model as an audit (see the module).

    The pair is ``(d, d_prime)`` when given (the relation stays the object's), else a default pair
    at the object's bounds; the claim is the object's ``epsilon`` (and ``delta``)."""
    load_library("diffprivlib", "diffprivlib")
    kind = _identify(obj)
    if kind == "tool":
        mech, pair, claim = _tool(obj, claim_id)
    else:
        label = type(obj).__name__
        delta = getattr(obj, "delta", 0.0)
        claim = _claim(obj.epsilon, delta, Relation.SWAP.value, claim_id, f"{label}(epsilon={obj.epsilon}"
                       + (f", delta={delta})" if delta else ")"))
        pair = _model_pair(obj, label) if kind in ("regressor", "classifier") else _mechanism_pair(obj, label)
        mech = DiffprivlibRelease(obj, kind, f"diffprivlib-{label}")
    if (d is None) != (d_prime is None):
        raise InputError("give both d and d_prime (a neighbouring pair), or neither (the default pair)")
    if d is not None:
        pair = Pair(d, d_prime, "the given pair", pair.relation)
    if name:
        mech = DiffprivlibRelease(mech.obj, mech.kind, name)
    return LibraryAudit("diffprivlib", library_version("diffprivlib"), mech, pair, (claim,),
                        f"the object's parameters: {claim.source}", seeded=True)

"""The rounding-adversarial pair search: mechanisms over real-valued records, searched where floats break.

:class:`FloatRecords` is a search space (:class:`dpaudit.engine.search.Space`) of the pairs
:func:`dpaudit.neighbors.floats.float_pairs` builds from a mechanism's clamping bounds: records at the
bounds and at binade edges, large n, orders that decide how a running sum rounds, cancellation.

The white-box hook.  A mechanism that declares the deterministic part of its release,
``query(data) -> float`` (the statistic as implemented, before the noise), and its declared sensitivity
(``sensitivity_for(data)``, or a number ``sensitivity``), gets every candidate evaluated without a
sample: the realised |f̂(D) − f̂(D′)| against the declared bound.  The candidates are then ranked by
that ratio and the best :attr:`FloatRecords.keep` of them go to the sampling pilot of
:func:`~dpaudit.engine.search.search_pair` (its own budget, ``pilot`` × ``samples``), so the pair
audited is the one whose release the samples refute best — the audit's verdict still rests on fresh
samples only.  Without the hook the whole pool goes to the pilot (a black box).  :func:`search_floats`
records the realised sensitivities in the result's ``search.sensitivity``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from dpaudit.core import InputError, is_real, require
from dpaudit.engine.results import AuditResult
from dpaudit.engine.search import search_pair
from dpaudit.neighbors import Pair
from dpaudit.neighbors.floats import SIZES, float_pairs

KEEP = 8  # candidates the white-box screen hands to the sampling pilot


def declared_sensitivity(mechanism: Any, data: Any) -> float | None:
    """The mechanism's declared sensitivity at ``data``: ``sensitivity_for(data)``, else a numeric
    ``sensitivity`` attribute, else None."""
    if callable(getattr(mechanism, "sensitivity_for", None)):
        value = mechanism.sensitivity_for(data)
    else:
        value = getattr(mechanism, "sensitivity", None)
    if value is None:
        return None
    require(is_real(value) and math.isfinite(value) and value > 0, "mechanism sensitivity", value,
            "must be a finite number > 0")
    return float(value)


@dataclass(frozen=True)
class Realised:
    """One pair's realised |f̂(D) − f̂(D′)| against the declared sensitivity."""

    pair: str
    realised: float
    declared: float

    @property
    def ratio(self) -> float:
        return self.realised / self.declared

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "realised": self.realised, "declared": self.declared, "ratio": self.ratio}


def realised_sensitivity(mechanism: Any, pair: Pair) -> Realised | None:
    """|query(D) − query(D′)| with the declared sensitivity of the pair (the larger of D's and D′'s, for
    add-remove), or None for a mechanism without the white-box hook."""
    if not callable(getattr(mechanism, "query", None)):
        return None
    declared = [declared_sensitivity(mechanism, x) for x in (pair.d, pair.d_prime)]
    if None in declared:
        return None
    try:
        a, b = float(mechanism.query(pair.d)), float(mechanism.query(pair.d_prime))
    except (TypeError, ValueError) as exc:
        raise InputError(f"mechanism.query = {mechanism.query!r} is invalid: it must return one real number "
                         f"({type(exc).__name__}: {exc})") from None
    return Realised(pair.description, abs(a - b), max(d for d in declared if d is not None))


@dataclass
class FloatRecords:
    """Rounding-adversarial neighbours of 1-D datasets with records in [``lower``, ``upper``].

    With a ``mechanism`` that has the white-box hook the pool is screened by realised sensitivity and
    only the ``keep`` best pairs are proposed; ``progress`` shows the screen on stderr."""

    lower: float
    upper: float
    relation: str = "swap"
    sizes: tuple[int, ...] = SIZES
    mechanism: Any = None
    keep: int = KEEP
    progress: bool = False
    screened: list[Realised] = field(default_factory=list)

    def __post_init__(self) -> None:
        require(isinstance(self.keep, int) and self.keep >= 1, "keep", self.keep, "must be an integer >= 1")
        self.sizes = tuple(self.sizes)

    def describe(self) -> str:
        return (f"rounding-adversarial {self.relation} neighbours of double records in [{self.lower!r}, "
                f"{self.upper!r}], n in {', '.join(map(str, self.sizes))}")

    def candidates(self, rng: np.random.Generator) -> list[Pair]:
        pool = float_pairs(self.lower, self.upper, rng=rng, sizes=self.sizes, relation=self.relation)
        if self.mechanism is None or realised_sensitivity(self.mechanism, pool[0]) is None:
            return pool
        shown = tqdm(pool, desc="float pairs: realised sensitivity", disable=not self.progress, file=sys.stderr,
                     leave=False)
        scored = [(realised_sensitivity(self.mechanism, p), p) for p in shown]
        self.screened[:] = [r for r, _ in scored if r is not None]
        ranked = sorted(scored, key=lambda rp: -(rp[0].ratio if rp[0] is not None else 0.0))
        return [p for _, p in ranked[: self.keep]]

    def refine(self, best: Sequence[Pair], rng: np.random.Generator) -> list[Pair]:
        return []

    def search_record(self, chosen: str) -> dict[str, Any]:
        """What :func:`~dpaudit.engine.search.search_pair` adds to its record: ``sensitivity``."""
        return {"sensitivity": sensitivity_record(self, chosen)}


def sensitivity_record(space: FloatRecords, chosen: str) -> dict[str, Any] | None:
    """The search record's ``sensitivity``: the largest realised ratio over the screen, the chosen pair's
    own, and how many pairs were evaluated (None without the white-box hook)."""
    if not space.screened:
        return None
    top = max(space.screened, key=lambda r: r.ratio)
    mine = next((r for r in space.screened if r.pair == chosen), None)
    return {"evaluated": len(space.screened), "largest": top.to_dict(),
            "chosen": None if mine is None else mine.to_dict()}


FLOAT_SPEC = "floats (the mechanism's lower/upper bounds) or floats:LOWER:UPPER"


def float_space_from_spec(spec: str, mechanism: Any, relation: str, where: str = "search",
                          progress: bool = False) -> FloatRecords:
    """The space of ``--search floats`` / ``floats:LOWER:UPPER``: the mechanism's own clamping bounds
    (its ``lower`` and ``upper`` attributes) or the given ones; swap or add-remove neighbours."""
    head, _, rest = spec.strip().partition(":")
    require(head == "floats", where, spec, f"must be {FLOAT_SPEC}")
    if rest:
        try:
            lower, upper = (float(x) for x in rest.split(":"))
        except ValueError:
            raise InputError(f"{where} = {spec!r} is invalid: give floats:LOWER:UPPER, e.g. floats:0:1") from None
    else:
        lower, upper = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
        require(is_real(lower) and is_real(upper), where, spec, "the mechanism has no numeric lower and upper "
                "attributes (its clamping bounds): give them as floats:LOWER:UPPER")
    require(relation in ("swap", "add-remove"), "relation", relation, "a float search builds swap or add-remove pairs")
    require(math.isfinite(float(lower)) and math.isfinite(float(upper)) and float(lower) < float(upper), where, spec,
            "the bounds must be finite with LOWER < UPPER")
    return FloatRecords(float(lower), float(upper), relation=relation, mechanism=mechanism, progress=progress)


def search_floats(mechanism: Any, *, lower: float | None = None, upper: float | None = None,
                  relation: str = "swap", sizes: Sequence[int] = SIZES, keep: int = KEEP, progress: bool = False,
                  **audit: Any) -> AuditResult:
    """Search the rounding-adversarial pairs of ``mechanism`` (bounds: ``lower``/``upper``, else the
    mechanism's own) and audit the best on fresh samples (:func:`~dpaudit.engine.search.search_pair`
    with ``audit``'s keywords: ``samples``, ``seed``, ``claims``, ``confidence``, ``pilot``, ``events``…).
    The result's ``search.sensitivity`` holds the realised sensitivities the white-box hook gave."""
    lower = getattr(mechanism, "lower", None) if lower is None else lower
    upper = getattr(mechanism, "upper", None) if upper is None else upper
    require(is_real(lower) and is_real(upper), "bounds", (lower, upper),
            "a float search needs the records' clamping bounds: pass lower= and upper=, or give the mechanism "
            "lower and upper attributes")
    assert lower is not None and upper is not None  # for the type checker: require refused anything else
    space = FloatRecords(float(lower), float(upper), relation=relation, sizes=tuple(sizes), mechanism=mechanism,
                         keep=keep, progress=progress)
    return search_pair(mechanism, space, **audit)

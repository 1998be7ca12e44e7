"""What a family of mechanisms declares to dpaudit: mechanisms, data, scenarios, sweeps, benchmarks.

A *family* is one source's mechanisms (the classic references, the KL paper, private policy
optimisation, the alignment paper, or a third party's paper) together with what the
application needs to run them without code: mechanisms buildable from JSON/TOML parameters,
dataset generators, the scenarios of the built-in suites, rate sweeps and benchmark cases.
The engine never reads a family; the CLI, configs, ``sweep`` and ``bench`` read them all
through :mod:`audit.catalog`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpcore import Claim, Document, Guarantee
from neighbors import Dataset, Pair


@dataclass(frozen=True)
class Scenario:
    """One audit: a mechanism, a neighbouring pair and what each claim is expected to give."""

    name: str
    mechanism: Any
    pair: Pair
    expected: Mapping[str, str] = field(default_factory=dict)
    # Multiplies the run's sample budget: witnesses at large ε need more, slow samplers whose
    # claims are far from reach need less.
    samples_factor: float = 1
    about: str = ""
    claims: list[Guarantee] | None = None  # explicit claims (e.g. a tight reference) instead of the mechanism's own


@dataclass(frozen=True)
class MechanismEntry:
    """A mechanism buildable by name from JSON/TOML parameters (``--mechanism NAME --param K=V``)."""

    name: str
    build: Callable[..., Any]
    about: str = ""

    def parameters(self) -> list[tuple[str, str]]:
        """(name, default or "required") for each parameter the builder takes."""
        out = []
        for p in inspect.signature(self.build).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            out.append((p.name, "required" if p.default is p.empty else repr(p.default)))
        return out


@dataclass(frozen=True)
class BenchCase:
    """A throughput row of ``python -m audit bench``: the audit, and a plain-numpy ``reference``
    that draws the same output distribution and counts one fixed event (returns the count)."""

    name: str
    mechanism: Any
    d: Dataset
    d_prime: Dataset
    reference: Callable[[Any, int], int]


@dataclass(frozen=True)
class TightnessCase:
    """A tightness row of ``python -m audit bench``: ε_lower / ε_true at a stated budget."""

    label: str
    mechanism: Any
    pair: Pair
    samples: int
    epsilon_true: float
    deltas: tuple[float, ...] = (0.0,)


@dataclass(frozen=True)
class Family:
    """Everything one source contributes.  Each field is optional but ``name``.

    ``claims`` are the family's entries of the claim registry (every claim id its mechanisms or
    scenarios emit), citing ``documents``.  ``scenarios`` and ``extended`` are zero-argument
    builders (fixtures can be costly to build, so they are built only when a suite is asked for):
    the default suite holds every family's ``scenarios``, ``--suite full`` adds every family's
    ``extended``.  ``sweeps`` map a sweep name to ``n -> (mechanism, pair)`` with coverage
    growing in n.  ``benchmarks`` are named extra measurements (``seed -> dict``) that ``bench``
    reports beside its rows.
    """

    name: str
    about: str = ""
    mechanisms: Sequence[MechanismEntry] = ()
    generators: Mapping[str, Callable[..., Dataset]] = field(default_factory=dict)
    scenarios: Callable[[], list[Scenario]] = list
    extended: Callable[[], list[Scenario]] = list
    sweeps: Mapping[str, Callable[[int], tuple[Any, Pair]]] = field(default_factory=dict)
    bench: Callable[[], list[BenchCase]] = list
    tightness: Callable[[], list[TightnessCase]] = list
    benchmarks: Mapping[str, Callable[[int], dict[str, Any]]] = field(default_factory=dict)
    documents: Sequence[Document] = ()
    claims: Sequence[Claim] = ()


def entry(cls: type, about: str = "") -> MechanismEntry:
    """A mechanism class built directly from its keyword parameters, listed under ``cls.name``."""
    text = about or (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    return MechanismEntry(cls.name, cls, text)  # type: ignore[attr-defined]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds (for benchmark measurements)."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start

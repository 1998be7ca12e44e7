"""What a family of mechanisms declares to dpaudit: mechanisms, data, scenarios, sweeps, benchmarks.

A *family* is one source's mechanisms (the classic references, the KL paper, private policy
optimisation, the alignment paper, or a third party's paper) together with what the
application needs to run them without code: mechanisms buildable from JSON/TOML parameters,
dataset generators, the scenarios of the built-in suites, rate sweeps and benchmark cases.
The engine never reads a family; the CLI, configs, ``sweep`` and ``bench`` read them all
through :mod:`dpaudit.catalog`.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import re
import time
import tokenize
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpaudit.core import Claim, Document, Guarantee
from dpaudit.engine.bounds import Ceiling
from dpaudit.neighbors import Dataset, Pair
from dpaudit.onerun.design import CanaryDesign


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


# Meanings of parameter names every family uses the same way (a field's own comment or its
# class docstring wins over these).
COMMON_PARAMETERS = {
    "epsilon": "the ε the mechanism is calibrated for (and claims)",
    "delta": "the δ the mechanism is calibrated for (and claims)",
    "sensitivity": "Δ, the sensitivity of the query or utility",
    "column": "the dataset column the mechanism reads",
}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a buildable mechanism, for ``dpaudit list``."""

    name: str
    type: str      # the annotation as written, "" when there is none
    default: str   # repr of the default, or "required"
    meaning: str   # from metadata, the field's comment, the docstring or COMMON_PARAMETERS; "" if unknown


def one_line(doc: str | None) -> str:
    """A docstring's description on one line: its first paragraph with whitespace collapsed, and
    the next paragraphs while the text so far ends with ":" or "," (a formula it introduces)."""
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(doc or "").split("\n\n")]
    text = ""
    for part in paragraphs:
        text = f"{text} {part}".strip()
        if not text.endswith((":", ",")):
            break
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text.replace("``", "`"))


def _field_comments(cls: type) -> dict[str, str]:
    """The trailing ``# comment`` of each annotated field in ``cls``'s body (and its bases')."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        lines: dict[int, list[tokenize.TokenInfo]] = {}
        try:
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                lines.setdefault(tok.start[0], []).append(tok)
        except (tokenize.TokenError, SyntaxError):
            continue
        body_indent = None
        for toks in lines.values():
            kinds = [t for t in toks if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL,
                                                        tokenize.NEWLINE)]
            if len(kinds) < 3 or kinds[0].type != tokenize.NAME or kinds[1].string != ":":
                continue
            body_indent = kinds[0].start[1] if body_indent is None else body_indent
            if kinds[0].start[1] == body_indent and kinds[-1].type == tokenize.COMMENT:
                out[kinds[0].string] = kinds[-1].string.lstrip("#").strip()
    return out


def _docstring_mention(doc: str | None, name: str) -> str:
    """The first sentence of ``doc`` that opens with ``name`` in double back quotes (its subject)."""
    text = " ".join(inspect.cleandoc(doc or "").split())
    for sentence in re.split(r"(?<=[.;])\s+(?=``)", text):
        if sentence.startswith(f"``{name}``"):
            return sentence.replace("``", "`")
    return ""


@dataclass(frozen=True)
class MechanismEntry:
    """A mechanism buildable by name from JSON/TOML parameters (``--mechanism NAME --param K=V``).

    ``build`` is the mechanism class or a builder function; a builder that passes ``**params`` on
    to a class names it in ``forwards``, so the class's parameters are listed too.  ``help`` gives
    the meaning of parameters that neither a field comment nor a docstring explains; ``claims``
    names the registry ids its guarantees carry (``dpaudit list NAME`` shows them).
    """

    name: str
    build: Callable[..., Any]
    about: str = ""
    forwards: type | None = None
    help: Mapping[str, str] = field(default_factory=dict)
    claims: tuple[str, ...] = ()  # the registry ids this mechanism states (its guarantees' claim ids)
    # Its canary design for a one-run audit, in words (``run --suite onerun``): the canaries, the
    # relation, the score and the claims the one run tests; "" for a mechanism without one.
    canaries: str = ""

    def parameter_table(self) -> list[Parameter]:
        """Each parameter the builder takes: name, type, default and meaning (builder first, then
        what it forwards)."""
        out: list[Parameter] = []
        sources: list[Callable[..., Any]] = [self.build] + ([self.forwards] if self.forwards else [])
        for source in sources:
            fields = {f.name: f for f in dataclasses.fields(source)} if (
                isinstance(source, type) and dataclasses.is_dataclass(source)) else {}
            comments = _field_comments(source) if isinstance(source, type) else {}
            for p in inspect.signature(source).parameters.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or any(q.name == p.name for q in out):
                    continue
                annotation = "" if p.annotation is p.empty else (
                    p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation))
                meta = fields[p.name].metadata.get("help", "") if p.name in fields else ""
                meaning = (self.help.get(p.name) or meta or comments.get(p.name)
                           or _docstring_mention(source.__doc__, p.name) or COMMON_PARAMETERS.get(p.name, ""))
                out.append(Parameter(p.name, annotation, "required" if p.default is p.empty else repr(p.default),
                                     meaning))
        return out

    def parameters(self) -> list[tuple[str, str]]:
        """(name, default or "required") for each parameter the builder takes."""
        return [(p.name, p.default) for p in self.parameter_table()]


@dataclass(frozen=True)
class BenchCase:
    """A throughput row of ``dpaudit bench``: the audit, and a plain-numpy ``reference``
    that draws the same output distribution and counts one fixed event (returns the count)."""

    name: str
    mechanism: Any
    d: Any                 # a Dataset, or what the mechanism takes (a vector of query answers)
    d_prime: Any
    reference: Callable[[Any, int], int]
    # ceiling(n, confidence): the best event fixed in advance with n estimation samples per side,
    # at delta = the case's first delta (dpaudit.engine.bounds.best_event)
    ceiling: Callable[[int, float], Ceiling] | None = None
    deltas: tuple[float, ...] = (0.0,)


@dataclass(frozen=True)
class TightnessCase:
    """A tightness row of ``dpaudit bench``: ε_lower / ε_true at a stated budget."""

    label: str
    mechanism: Any
    pair: Pair
    samples: int
    epsilon_true: float
    deltas: tuple[float, ...] = (0.0,)
    ceiling: Callable[[int, float], Ceiling] | None = None  # as BenchCase.ceiling


@dataclass(frozen=True)
class Family:
    """Everything one source contributes.  Each field is optional but ``name``.

    ``claims`` are the family's entries of the claim registry (every claim id its mechanisms or
    scenarios emit), citing ``documents``.  ``scenarios`` and ``extended`` are zero-argument
    builders (fixtures can be costly to build, so they are built only when a suite is asked for):
    the default suite holds every family's ``scenarios``, ``--suite full`` adds every family's
    ``extended``, and ``--suite errata`` holds every family's ``errata``: one witness per printed claim
    the registry marks ``refuted``, each with the budget (``samples_factor``) its refutation from samples
    alone needs, expected ``violation`` (run sequentially).  ``sweeps`` map a sweep name to
    ``n -> (mechanism, pair)`` with coverage growing in n.  ``benchmarks`` are named extra
    measurements (``seed -> dict``) that ``bench`` reports beside its rows.  ``onerun`` builds the
    family's one-run (canary) scenarios of ``--suite onerun`` (each audited from one training run,
    :class:`dpaudit.onerun.design.CanaryDesign`); ``onerun_fixtures`` the small ones the default
    suite holds beside ``scenarios``.
    """

    name: str
    about: str = ""
    mechanisms: Sequence[MechanismEntry] = ()
    generators: Mapping[str, Callable[..., Dataset]] = field(default_factory=dict)
    scenarios: Callable[[], list[Scenario]] = list
    extended: Callable[[], list[Scenario]] = list
    errata: Callable[[], list[Scenario]] = list
    sweeps: Mapping[str, Callable[[int], tuple[Any, Pair]]] = field(default_factory=dict)
    bench: Callable[[], list[BenchCase]] = list
    tightness: Callable[[], list[TightnessCase]] = list
    benchmarks: Mapping[str, Callable[[int], dict[str, Any]]] = field(default_factory=dict)
    documents: Sequence[Document] = ()
    claims: Sequence[Claim] = ()
    onerun: Callable[[], list[CanaryDesign]] = list
    onerun_fixtures: Callable[[], list[CanaryDesign]] = list
    # the names of ``onerun_fixtures``' designs, known without building them (``plan``'s lookup of a name)
    onerun_fixture_names: tuple[str, ...] = ()
    # ``--suite libraries``: a third-party DP library's own mechanisms against its own claims
    # (dpaudit.catalog.libraries); building them needs the library (the ``libraries`` extra).
    libraries: Callable[[], list[Scenario]] = list


def entry(cls: type, about: str = "", help: Mapping[str, str] | None = None,
          claims: tuple[str, ...] = ()) -> MechanismEntry:
    """A mechanism class built directly from its keyword parameters, listed under ``cls.name``."""
    return MechanismEntry(cls.name, cls, about or one_line(cls.__doc__),  # type: ignore[attr-defined]
                          help=dict(help or {}), claims=claims)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds (for benchmark measurements)."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start

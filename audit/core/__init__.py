"""dpaudit's core: the errors, validators, closed sets and the `Guarantee` record every layer shares.

This module sits at the bottom of the house and imports nothing of the project: ``neighbors``,
``mechanisms``, the engine (``audit``), the catalog and ``reports`` all import it, never the
other way round (``tests/test_architecture.py`` enforces the layering).

The closed sets are string enums, so a value read from JSON or TOML compares equal to its
member (``Relation.SWAP == "swap"``) and every message can list what is allowed.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

import numpy as np

__all__ = ["CLAIM_KINDS", "CLAIM_STATUSES", "EXPECTATIONS", "RELATIONS", "VERDICTS", "Claim", "ClaimKind",
           "ClaimStatus", "Document", "Guarantee", "InputError", "Relation", "Verdict", "check_integer",
           "check_nonnegative", "check_number", "check_positive", "check_probability_vector", "check_real_array",
           "check_table", "check_text", "close_names", "did_you_mean", "invalid", "is_real", "require", "unknown_key",
           "whole_number"]


class InputError(ValueError):
    """A value that entered from outside is invalid; the message names field, value and rule."""


def require(ok: bool, field: str, value: Any, allowed: str) -> None:
    """Raise :class:`InputError` naming ``field``, ``value`` and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise InputError(f"{field} = {value!r} is invalid: {allowed}")


def whole_number(value: Any) -> int | None:
    """``value`` as an int when it is one, or a finite float with no fractional part (TOML's
    ``1e5``, JSON's ``100000.0``): what ``--samples 1e5`` accepts on the command line; else None
    (booleans, ``1.5``, infinities, NaN and floats past 2**63 included)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < 2.0**63:
            return int(number)
    return None


# The validators below check one value that entered from outside (a config's key, an API argument)
# and name it by its key path (``scenario[0].rule.k_plus``).  ``prefix`` says where the value came
# from (``"config: "``); every config loader and API argument check shares them, so a value is
# accepted or refused, and worded, the same way wherever it enters.


def invalid(field: str, value: Any, allowed: str, *, prefix: str = "") -> NoReturn:
    """Raise :class:`InputError`: ``{prefix}{field} = {value!r} is invalid: {allowed}``."""
    raise InputError(f"{prefix}{field} = {value!r} is invalid: {allowed}")


def check_integer(field: str, value: Any, *, low: int, high: int | None = None, prefix: str = "") -> int:
    """An integer in [``low``, ``high``] (``high`` None: no upper end).  A float with no fractional
    part counts (TOML's ``canaries = 1e3``, as ``--samples 1e5`` does: :func:`whole_number`); ``1.5``,
    booleans and text do not."""
    number = whole_number(value)
    if number is None or number < low or (high is not None and number > high):
        allowed = f"must be an integer >= {low}" if high is None else f"must be an integer in [{low}, {high}]"
        invalid(field, value, allowed + (" (a whole number)" if isinstance(value, float) and number is None else ""),
                prefix=prefix)
    return number


def check_number(field: str, value: Any, *, low: float, high: float, high_open: bool = False,
                 allowed: str | None = None, prefix: str = "") -> float:
    """A finite real number in [``low``, ``high``] (``high_open``: [``low``, ``high``)); ``allowed``
    words the refusal (default: the interval)."""
    ok = is_real(value) and math.isfinite(value) and low <= value and (value < high if high_open else value <= high)
    if not ok:
        invalid(field, value, allowed or f"must be a number in [{low}, {high}{')' if high_open else ']'}",
                prefix=prefix)
    return float(value)


def check_text(field: str, value: Any, *, prefix: str = "", allowed: str = "must be a non-empty string") -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        invalid(field, value, allowed, prefix=prefix)
    return value


def unknown_key(field: str, key: str, value: Any, allowed: Collection[str], *, prefix: str = "") -> NoReturn:
    """Stop at ``key``, unknown in the table at ``field`` (``""``: the top level): its key path, the
    allowed keys closest to it (``neighbor`` -> ``neighbour``: :func:`did_you_mean`) and all of them."""
    invalid(f"{field}.{key}" if field else str(key), value,
            f"unknown key{did_you_mean(str(key), allowed)}; allowed: {', '.join(sorted(allowed))}", prefix=prefix)


def check_table(field: str, value: Any, *, allowed: Collection[str] | None = None, required: Iterable[str] = (),
                prefix: str = "") -> dict[str, Any]:
    """A table (mapping) whose keys are all ``allowed`` (None: any key) and hold every ``required``
    one; an unknown key is named with its key path and the allowed keys closest to it."""
    if not isinstance(value, Mapping):
        invalid(field, value, "must be a table", prefix=prefix)
    for key in value:
        if allowed is not None and key not in allowed:
            unknown_key(field, key, value[key], allowed, prefix=prefix)
    for key in required:
        if key not in value:
            invalid(f"{field}.{key}" if field else key, None, "is required", prefix=prefix)
    return dict(value)


def _initials(name: str) -> str:
    """``randomized-response`` -> ``rr``: the abbreviation a user may type for a hyphenated name."""
    return "".join(word[0] for word in name.replace("_", "-").split("-") if word)


def close_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The names of ``known`` closest to a mistyped ``name``, best first, at most ``n``: difflib's
    similarity ratio against the name itself (at least 0.6, difflib's own cutoff) or against its
    initials when ``name`` is an abbreviation (at most 4 characters, same first letter; a ratio of at
    least 0.5, so ``rn`` finds ``report-noisy-max`` and ``randomized-response``)."""
    scores: dict[str, float] = {}
    for candidate in dict.fromkeys(known):
        whole = difflib.SequenceMatcher(None, name, candidate).ratio()
        short = _initials(candidate)
        # an abbreviation is short and starts as the name does ("rn" is no abbreviation of "dp-npg")
        abbreviation = len(name) <= 4 and short != candidate and short[:1] == name[:1]
        initials = difflib.SequenceMatcher(None, name, short).ratio() if abbreviation else 0.0
        score = max(whole if whole >= 0.6 else 0.0, initials if initials >= 0.5 else 0.0)
        if score > 0:
            scores[candidate] = score
    return sorted(scores, key=lambda c: (-scores[c], c))[:n]


def did_you_mean(name: str, known: Iterable[str], n: int = 3, quote: bool = True) -> str:
    """`` (did you mean 'a' or 'b'?)`` for a mistyped ``name`` (:func:`close_names`), or ``""``;
    ``quote=False`` shows the names as they are typed (flags: ``--samples``)."""
    names = [repr(c) if quote else c for c in close_names(name, known, n)]
    if not names:
        return ""
    shown = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f" (did you mean {shown}?)"


def is_real(value: Any) -> bool:
    """A Python or numpy real number (booleans are not numbers here)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_positive(field: str, value: Any) -> float:
    """A finite real number > 0."""
    require(is_real(value) and math.isfinite(value) and value > 0, field, value, "must be a finite number > 0")
    return float(value)


def check_nonnegative(field: str, value: Any) -> float:
    """A finite real number >= 0."""
    require(is_real(value) and math.isfinite(value) and value >= 0, field, value, "must be a finite number >= 0")
    return float(value)


def check_real_array(field: str, value: Any) -> np.ndarray:
    """``value`` as a float array, refusing what a float conversion would change without a word:
    complex numbers (numpy drops the imaginary part), text (numpy parses ``"1.5"``) and objects."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InputError(f"{field} = {value!r:.80} is invalid: must be an array of real numbers ({exc})") from None
    require(arr.dtype.kind in "biuf", field, f"<{arr.size} values of dtype {arr.dtype}>",
            "must be real numbers (complex numbers, text and objects are refused, never truncated)")
    return arr.astype(float)


def check_probability_vector(field: str, value: Any, size: int) -> np.ndarray:
    """A length-``size`` vector of finite non-negative numbers summing to 1 (to 1e-9)."""
    arr = np.asarray(value, dtype=float)
    require(arr.shape == (size,), field, value, f"must be a vector of length {size}")
    require(bool(np.all(np.isfinite(arr)) and np.all(arr >= 0)), field, value, "entries must be finite and >= 0")
    require(abs(float(arr.sum()) - 1.0) <= 1e-9, field, value, "entries must sum to 1")
    return arr


class Relation(StrEnum):
    """Neighbour relations, all symmetric: add-remove (D′ = D ∪ {z} or D ∖ {z}), swap (one record
    replaced, |D′| = |D|), label-flip (one record's label y ↦ 1 − y; KL paper, Definition 3),
    zero-out (one record's contribution replaced by 0, n kept: the relation of the alignment
    paper's proof of Lemma A.7) and user-level (one user's prompt and reward differ; the PO
    slides, "DP in PO")."""

    ADD_REMOVE = "add-remove"
    SWAP = "swap"
    LABEL_FLIP = "label-flip"
    ZERO_OUT = "zero-out"
    USER_LEVEL = "user-level"


class ClaimKind(StrEnum):
    """How a claim relates to its source: as printed, a repaired statement, or a tight reference curve."""

    PRINTED = "printed"
    CORRECTED = "corrected"
    TIGHT = "tight"


class Verdict(StrEnum):
    """The verdict of one claim against the empirical lower bound."""

    PASS = "pass"
    VIOLATION = "violation"
    NOT_APPLICABLE = "not-applicable"


class ClaimStatus(StrEnum):
    """What is known of a claim (the registry's status).

    ``proven``: proved (or re-proved) and never exceeded; ``refuted``: an explicit pair breaks it;
    ``unverified``: the source's argument does not establish it and no counterexample is known;
    ``corrected``: a repaired statement, proved (its registry entry gives the argument);
    ``reference``: an exact or analytic
    curve (or bound) held beside the claims, not a claim of the source.
    """

    PROVEN = "proven"
    REFUTED = "refuted"
    UNVERIFIED = "unverified"
    CORRECTED = "corrected"
    REFERENCE = "reference"


@dataclass(frozen=True, kw_only=True)
class Document:
    """A source a claim comes from, cited in full on reports."""

    key: str            # short name used in tables, e.g. "KL paper"
    reference: str      # the full reference: authors, title, venue or status, year


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One entry of the claim registry: a stable id and everything a report says about it.

    An id never changes meaning: a variant (a corrected statement, another relation, another
    record type) gets its own id.  ``premises`` are the conditions the statement assumes
    (a scenario that breaks one makes the claim not applicable, never an erratum);
    ``vacuous`` marks a corrected statement that is true but says nothing useful (δ = 1).
    """

    id: str
    document: str       # a Document.key
    where: str          # theorem, lemma, equation, e.g. "Theorem 1, eq. (9)"
    statement: str      # the bound in words or symbols
    relations: tuple[str, ...]
    status: str
    reason: str = ""    # why it has this status (the witness, the proof, or what is missing)
    premises: tuple[str, ...] = ()
    vacuous: bool = False

    def __post_init__(self) -> None:
        require(bool(self.id) and "/" in self.id, "Claim.id", self.id, "must look like family/name")
        require(self.status in CLAIM_STATUSES, f"Claim[{self.id}].status", self.status,
                f"must be one of {', '.join(CLAIM_STATUSES)}")
        for r in self.relations:
            require(r in RELATIONS, f"Claim[{self.id}].relations", r, f"must be among {', '.join(RELATIONS)}")


RELATIONS: tuple[str, ...] = tuple(r.value for r in Relation)
CLAIM_STATUSES: tuple[str, ...] = tuple(s.value for s in ClaimStatus)
CLAIM_KINDS: tuple[str, ...] = tuple(k.value for k in ClaimKind)
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
# What a scenario may expect of a claim: a verdict, or "exact-violation" for an erratum only the
# white-box check can reach at the sample budget (the empirical verdict may then be either).
EXPECTATIONS: tuple[str, ...] = (*VERDICTS, "exact-violation")


@dataclass(frozen=True, kw_only=True)
class Guarantee:
    """An analytic (ε, δ) claim about a mechanism, evaluated on one dataset.

    ``claim_id`` is the stable identifier users pin in regression tests; ``kind`` is
    ``printed`` (as the source states it), ``corrected`` (a repaired statement) or ``tight``
    (an exact or analytic reference curve).  A claim whose preconditions fail on the
    dataset carries ``applicable=False``, ``epsilon=inf`` and the reason in ``note``.
    Keyword-only, so a call site says which number is ε and which is δ.
    """

    epsilon: float
    delta: float = 0.0
    relation: str = Relation.ADD_REMOVE.value
    source: str = ""
    claim_id: str = ""
    kind: str = ClaimKind.PRINTED.value
    applicable: bool = True
    note: str = ""
    # The Rényi claim this point was converted from (a dpaudit.claims.ZCDP or RDP: its ``label()``,
    # ``to_dict()``, ``epsilon_at(δ)``), or None for a claim stated in (ε, δ).
    stated_as: Any = None

    def __post_init__(self) -> None:
        require(is_real(self.epsilon) and not math.isnan(self.epsilon) and self.epsilon >= 0,
                "Guarantee.epsilon", self.epsilon, "must be a number >= 0 (inf allowed)")
        require(is_real(self.delta) and 0.0 <= self.delta <= 1.0, "Guarantee.delta", self.delta, "must be in [0, 1]")
        require(self.relation in RELATIONS, "Guarantee.relation", self.relation,
                f"must be one of {', '.join(RELATIONS)}")
        require(self.kind in CLAIM_KINDS, "Guarantee.kind", self.kind, f"must be one of {', '.join(CLAIM_KINDS)}")
        require(self.applicable or bool(self.note), "Guarantee.note", self.note, "a not-applicable claim must say why")
        # Plain strings in records and JSON, whichever enum member the caller passed.
        object.__setattr__(self, "relation", str(Relation(self.relation).value))
        object.__setattr__(self, "kind", str(ClaimKind(self.kind).value))

    @classmethod
    def not_applicable(cls, reason: str, **fields: Any) -> Guarantee:
        """A claim whose preconditions fail on the dataset, with the reason."""
        return cls(epsilon=math.inf, applicable=False, note=reason, **fields)

    @classmethod
    def outside_premise(cls, premise: str, *, epsilon: float, delta: float = 0.0, **fields: Any) -> Guarantee:
        """A claim the run is outside of: the statement assumes ``premise`` and this scenario breaks it.

        It keeps the (ε, δ) the statement would give, so an audit can say both facts — the claim
        does not apply, and whether the samples would refute it if it did — never reporting a
        misuse as an erratum of the source."""
        return cls(epsilon=epsilon, delta=delta, applicable=False, note=f"outside the claim's premise: {premise}",
                   **fields)

    @property
    def broken_premise(self) -> bool:
        """Not applicable because the scenario breaks a premise, with the claimed value kept."""
        return not self.applicable and math.isfinite(self.epsilon)

"""Privacy assertions and a conformance check for users' own test suites.

    from dpaudit.testing import assert_private, check_mechanism

    def test_my_mechanism_keeps_the_contract():
        check_mechanism(MyMechanism(epsilon=1.0), d, d_prime)

    def test_my_mechanism_is_private():
        assert_private(MyMechanism(epsilon=1.0), d, d_prime, epsilon=1.0, seed=0)

The budget (samples per side, confidence) defaults to 10^6 and 0.99.  Like Hypothesis'
settings it comes from a profile (``pytest --dp-profile ci`` is cheap, ``nightly`` thorough),
``pytest --dp-samples N``, and :class:`settings` as a decorator or context manager, innermost
first (:mod:`dpaudit.testing.budget`); the ``dp_samples`` fixture reads the run's samples.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpaudit.core import RELATIONS, Guarantee, InputError, is_real, require
from dpaudit.engine.api import RunContext, audit_mechanism
from dpaudit.engine.bounds import clopper_pearson_lower, clopper_pearson_upper
from dpaudit.engine.estimate import Bound
from dpaudit.engine.results import AuditResult, caught_words, detectable_dict, two_verdicts
from dpaudit.mechanisms.base import capabilities
from dpaudit.testing import budget
from dpaudit.testing.budget import current, default_samples, settings

__all__ = ["MechanismCheckError", "PrivacyViolation", "assert_private", "check_mechanism", "default_samples",
           "set_default_samples", "settings"]


# A passing assertion says what it could have caught on this logger, at INFO: silent by default; pytest
# prints it live with --log-cli-level=INFO, or among a failing test's captured logs with --log-level=INFO.
LOG = logging.getLogger("dpaudit.testing")


class PrivacyViolation(AssertionError):
    """A claimed guarantee (an (ε, δ), or in one run a trade-off curve) was refuted with the stated confidence."""


def set_default_samples(samples: int | None) -> None:
    """Set (or with None, reset) the run's samples per side, as ``pytest --dp-samples`` does."""
    try:
        budget.set_default_samples(samples)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def assert_private(mechanism: Any, d: Any, d_prime: Any, *, epsilon: float, delta: float = 0.0,
                   samples: int | None = None, seed: int = 0, confidence: float | None = None,
                   relation: str = "add-remove", n_jobs: int = 1, sequential: bool = True,
                   pair: str | None = None, **options: Any) -> AuditResult:
    """Fail when the audit certifies that ``mechanism`` is not (ε, δ)-DP on the pair (d, d′).

    It draws ``samples`` outputs per side, bounds ε from below at δ with Clopper–Pearson at
    ``confidence``, and raises :class:`PrivacyViolation` (an ``AssertionError``) naming the
    pair (``pair``, or a description of ``d`` and ``d_prime``), the witness event, its counts
    and the exact loss when known if the bound exceeds ε.  ``samples`` and ``confidence``
    default to the budget in force (:mod:`dpaudit.testing.budget`: 10^6 and 0.99, or ``--dp-profile``,
    ``--dp-samples``, :class:`settings`).  With ``sequential`` (the default) it stops as soon as
    a violation is certified or can no longer be reached (α-spending over looks,
    :data:`dpaudit.engine.runner.RULE`), so a clear verdict costs a fraction of the budget.

    False-alarm rate: a mechanism that really is (ε, δ)-DP on the pair fails with
    probability at most 1 − ``confidence`` = 1 % by default, whatever the mechanism (the
    bound is valid at that level).  Measured in this project's tests: 0 failures in 200
    seeded runs of randomized response exactly at its ε.  Returns the :class:`AuditResult`
    when no violation is found, so a test can also assert on tightness, and on power:
    ``result.detectable[0]`` is the smallest leak this audit refutes 9 times in 10 and the samples
    that catch twice the claim (:mod:`dpaudit.engine.detectable`); a pass logs both at INFO on the
    ``dpaudit.testing`` logger (pytest's ``--log-cli-level=INFO`` prints it).

    The default 0.99 is stricter than the audits' 0.95 (``audit_mechanism``, the command line) on
    purpose: a suite runs many such tests on every push, and 20 correct mechanisms raise a false
    alarm with probability up to 1 − 0.99^20 ≈ 18 % at 0.99, up to 1 − 0.95^20 ≈ 64 % at 0.95.
    """
    __tracebackhide__ = True  # a failing test shows the test's line, not dpaudit's frames
    budget_now = current()
    confidence = budget_now.confidence if confidence is None else confidence
    label = pair if pair is not None else _pair_label(d, d_prime)
    context = options.pop("context", None) or RunContext(pair=label)
    claim = Guarantee(epsilon=float(epsilon), delta=float(delta), relation=relation, source="assert_private",
                      claim_id="user/assert_private")
    result = audit_mechanism(mechanism, d, d_prime, samples=samples or budget_now.samples, deltas=(delta,),
                             confidence=confidence, seed=seed, n_jobs=n_jobs, relation=relation,
                             claims=[claim], sequential=sequential, context=context, **options)
    check = result.claims[0]
    if check.verdict == "violation":
        # Structural: a "violation" verdict is only given with a bound (ClaimCheck.verdict).
        assert check.bound is not None, "a violated claim has a bound"
        raise PrivacyViolation(_violation_message(result, check.bound, check.epsilon_exact, epsilon, delta,
                                                  confidence, seed, samples or budget_now.samples))
    if not LOG.isEnabledFor(logging.INFO):  # the statement costs ~20 ms: only when someone listens
        return result
    caught = caught_words(detectable_dict(result.detectable[0]), float(epsilon))
    LOG.info("assert_private(%s, epsilon=%g, delta=%g): %s, epsilon_lower %.4g; %s", result.mechanism, epsilon, delta,
             check.finding, check.epsilon_lower if check.epsilon_lower is not None else math.nan,
             caught or "no statement of what it could have caught (no measured witness event)")
    return result


def _pair_label(d: Any, d_prime: Any) -> str:
    """The pair in words: each dataset's description (``Dataset.describe``) or a short repr."""
    def one(data: Any) -> str:
        describe = getattr(data, "describe", None)
        text = describe() if callable(describe) else repr(data)
        text = " ".join(str(text).split())
        return text if len(text) <= 60 else text[:59] + "…"
    return f"D = {one(d)}, D' = {one(d_prime)}"


def _violation_message(result: AuditResult, bound: Bound, exact: float | None, epsilon: float, delta: float,
                       confidence: float, seed: int, budget_samples: int) -> str:
    exact_text = "" if exact is None else f"; the exact epsilon of the pair is {exact:.6g}"
    check = result.claims[0]
    lines = [f"{check.finding}: {result.mechanism} is not ({epsilon:g}, {delta:g})-DP on the pair {result.pair} "
             f"[{result.relation}]: epsilon >= {bound.epsilon_lower:.6g} with confidence {confidence:g}{exact_text}.",
             f"Witness: {bound.witness()}."]
    if check.value_views is not None:  # the floating view decided: what the values say of the mathematics
        lines.append(two_verdicts(check))
    if result.sequential:
        look = re.search(r"look (\d+) of (\d+) at (\d+) estimation samples", result.sequential)
        where = f"stopped at look {look.group(1)} of {look.group(2)}, after {look.group(3)} estimation samples " \
                f"per side; " if look else ""
        share = (1 - bound.confidence) / (1 - confidence)
        rule = result.sequential.split("; look ")[0]  # as the run states it: the looks its budget held
        lines.append(
            f"Sequential rule: {rule}. It {where}each look's bound is computed at its own confidence "
            f"1 - {1 - confidence:g} x (its share of alpha), here {bound.confidence:.6g} (share {share:.4g}), so over "
            f"all looks together the violation holds with confidence >= {confidence:g}.")
    lines.append(f"{result.samples} of {budget_samples} samples per side drawn, seed {seed}.")
    return "\n".join(lines)


# --- conformance -------------------------------------------------------------------------

CHECK_ALPHA = 1e-6  # false-failure probability of each statistical check (fixed seeds: deterministic)
_SINGLE_DRAWS = 200  # calls of size 1 compared with one vectorised call
_SIZES = (1, 7, 1000)


class MechanismCheckError(AssertionError):
    """A mechanism breaks the contract of :mod:`dpaudit.mechanisms.base`; names the check and the mechanism."""

    def __init__(self, check: str, mechanism: str, detail: str) -> None:
        self.check = check
        self.mechanism = mechanism
        super().__init__(f"mechanism {mechanism!r} fails check {check!r}: {detail}")


def check_mechanism(mechanism: Any, d: Any, d_prime: Any = None, *, seed: int = 0,
                    samples: int = 100_000) -> list[str]:
    """Check that ``mechanism`` keeps the contract of :mod:`dpaudit.mechanisms.base` on ``d`` (and ``d_prime``).

    In the spirit of scikit-learn's ``check_estimator``; every random draw is seeded from
    ``seed``, so the outcome is deterministic.  In order, each check that applies:

    ``name``
        ``mechanism.name`` is a non-empty string.
    ``sample-shape``, ``sample-dtype``, ``sample-finite``
        ``sample(data, size, rng)`` returns a ``numpy.ndarray`` of shape ``(size,)`` or
        ``(size, k)`` (one k for every size and both datasets) for size 1, 7 and 1000, with a
        boolean, integer or real dtype and finite values.
    ``seeded``
        Two generators with the same seed give the same outputs (no global or unseeded state).
        Skipped for a mechanism that declares ``seeded = False`` (:func:`dpaudit.adapters.per_call`).
    ``seed-varies``
        Two seeds give different outputs (the generator is used).  Skipped — left out of the
        returned list — when the outputs are constant under both seeds (a degenerate mechanism).
    ``vectorised``
        One call of size 2n has the distribution of two calls of size n, and one call of size
        n that of n calls of size 1 (two-sample Kolmogorov–Smirnov tests at level
        :data:`CHECK_ALPHA` on a fixed projection of the outputs; conservative for discrete
        outputs).  Catches a draw broadcast to the whole batch.
    ``output-distribution``
        ``output_distribution(data)`` is a probability vector p over 0..k−1 (finite, ≥ 0,
        summing to 1 within 1e-6); ``samples`` draws are integers with p > 0, and each count
        lies in its two-sided Clopper–Pearson interval at level :data:`CHECK_ALPHA`/k.
    ``sample-counts``
        ``sample_counts(data, samples, rng)`` is a vector of integer counts ≥ 0 summing to
        ``samples``, one per output 0..k−1, and has the law of ``sample``'s counts: a chi-square
        test of homogeneity against ``samples`` outputs of ``sample`` at level :data:`CHECK_ALPHA`.
    ``exact-epsilon`` (needs ``d_prime``)
        ``exact_epsilon(d, d_prime, δ)`` is None or a number ≥ 0 (inf allowed) at δ = 0 and
        1e-3, non-increasing in δ.
    ``guarantees``, ``pair-guarantees``
        ``guarantees(data, relation)`` (and ``pair_guarantees(d, d_prime, relation)``) return a
        list of :class:`~dpaudit.core.Guarantee` for every relation.
    ``epsilon-sup-pi0`` (needs ``d_prime``)
        ``epsilon_sup_pi0(d, d_prime)`` is a number ≥ 0 (inf allowed).

    Returns the names of the checks passed; raises :class:`MechanismCheckError` (an
    ``AssertionError``) naming the first failed check and the mechanism.
    """
    __tracebackhide__ = True
    require(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0, "seed", seed,
            "must be an integer >= 0")
    require(isinstance(samples, int) and not isinstance(samples, bool) and samples >= 1000, "samples", samples,
            "must be an integer >= 1000")
    name = getattr(mechanism, "name", None)
    checker = _Checker(mechanism, name if isinstance(name, str) and name else type(mechanism).__name__, seed)
    datasets = [("D", d)] + ([] if d_prime is None else [("D'", d_prime)])
    caps = capabilities(mechanism)
    if not (isinstance(name, str) and name):
        checker.fail("name", f"mechanism.name must be a non-empty string, got {name!r}")
    passed = ["name"]
    if not callable(getattr(mechanism, "sample", None)):
        checker.fail("sample-shape", "the mechanism has no sample(data, size, rng) method")
    passed += _check_sampling(checker, datasets)
    passed += _check_declared(checker, caps, datasets, d, d_prime, samples)
    return passed


@dataclass(frozen=True)
class _Checker:
    """The mechanism under :func:`check_mechanism`, its name in messages and the root seed: how a
    check fails, draws its generators, and calls the mechanism so that any exception names the check."""

    mechanism: Any
    label: str
    seed: int

    def fail(self, check: str, detail: str) -> None:
        __tracebackhide__ = True
        raise MechanismCheckError(check, self.label, detail)

    def rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))

    def draw(self, check: str, side: str, data: Any, size: int, generator: np.random.Generator) -> Any:
        __tracebackhide__ = True
        try:
            return self.mechanism.sample(data, size, generator)
        except Exception as exc:  # a broken mechanism may raise anything: name the check
            self.fail(check, f"sample({side}, {size}, rng) raised {type(exc).__name__}: {exc}")

    def call(self, check: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        __tracebackhide__ = True
        try:
            return fn(*args)
        except Exception as exc:  # as in draw
            self.fail(check, f"{what} raised {type(exc).__name__}: {exc}")


def _check_sampling(checker: _Checker, datasets: list[tuple[str, Any]]) -> list[str]:
    """The checks every mechanism gets, in order: outputs' shape, dtype and finiteness, seeded,
    seed-varies, vectorised; the names of those passed (a skipped one is left out)."""
    __tracebackhide__ = True
    trailing = _check_outputs(checker, datasets)
    passed = ["sample-shape", "sample-dtype", "sample-finite"]
    passed += _check_seeds(checker, datasets)
    _check_vectorised(checker, datasets, trailing)
    return [*passed, "vectorised"]


def _check_outputs(checker: _Checker, datasets: list[tuple[str, Any]]) -> tuple[int, ...] | None:
    """Outputs: shape, dtype, finiteness, for several sizes and both datasets; their trailing shape."""
    __tracebackhide__ = True
    fail = checker.fail
    trailing = None
    for i, (side, data) in enumerate(datasets):
        for size in _SIZES:
            out = checker.draw("sample-shape", side, data, size, checker.rng(1, i, size))
            if not isinstance(out, np.ndarray):
                fail("sample-shape", f"sample({side}, {size}, rng) returned an object of type "
                                     f"{type(out).__name__}, not a numpy array")
            if out.ndim not in (1, 2) or out.shape[0] != size or (out.ndim == 2 and out.shape[1] < 1):
                fail("sample-shape", f"sample({side}, {size}, rng) has shape {out.shape}; the contract is "
                                     f"({size},) or ({size}, k)")
            if trailing is not None and out.shape[1:] != trailing:
                fail("sample-shape", f"outputs have trailing shape {out.shape[1:]} on {side} with size {size} "
                                     f"but {trailing} elsewhere")
            trailing = out.shape[1:]
            if out.dtype.kind not in "biuf":
                fail("sample-dtype", f"sample({side}, {size}, rng) has dtype {out.dtype}; outputs must be "
                                     "booleans, integers or real numbers")
            if not np.all(np.isfinite(out)):
                fail("sample-finite", f"sample({side}, {size}, rng) holds {int(np.sum(~np.isfinite(out)))} "
                                      "NaN or infinite values")
    return trailing


def _check_seeds(checker: _Checker, datasets: list[tuple[str, Any]]) -> list[str]:
    """``seeded`` (one seed, the same outputs; not checked for ``seeded = False``) and ``seed-varies``
    (two seeds, different outputs; skipped for constant outputs): the names of those passed."""
    __tracebackhide__ = True
    passed = []
    n = _SIZES[-1]
    first = {side: checker.draw("seeded", side, data, n, checker.rng(2)) for side, data in datasets}
    unseeded = getattr(checker.mechanism, "seeded", True) is False  # declared (dpaudit.adapters.per_call): not checked
    for side, data in datasets:
        again = checker.draw("seeded", side, data, n, checker.rng(2))
        if not unseeded and not np.array_equal(first[side], again):
            checker.fail("seeded", f"two generators with the same seed gave different outputs on {side}: sample "
                                   "must draw from its rng argument only (no global or unseeded state)")
    if not unseeded:
        passed.append("seeded")

    degenerate = True
    for side, data in datasets:
        other = checker.draw("seed-varies", side, data, n, checker.rng(3))
        constant = bool(np.all(first[side] == first[side][:1]))
        if np.array_equal(first[side], other) and not constant:
            checker.fail("seed-varies", f"two different seeds gave the same {n} outputs on {side}: sample ignores "
                                        "its rng")
        degenerate = degenerate and constant and np.array_equal(first[side], other)
    if not degenerate:
        passed.append("seed-varies")
    return passed


def _check_vectorised(checker: _Checker, datasets: list[tuple[str, Any]], trailing: tuple[int, ...] | None) -> None:
    """One call of size 2n against two of size n and against n calls of size 1: two-sample
    Kolmogorov–Smirnov tests at level :data:`CHECK_ALPHA` on a fixed random projection."""
    __tracebackhide__ = True
    n = _SIZES[-1]
    weights = np.random.default_rng(20240601).standard_normal(trailing[0] if trailing else 1)

    def project(outputs: np.ndarray) -> np.ndarray:  # vectors to one fixed random direction
        return np.asarray(outputs, dtype=float).reshape(len(outputs), -1) @ weights

    draw, rng = checker.draw, checker.rng
    for i, (side, data) in enumerate(datasets):
        whole = draw("vectorised", side, data, 2 * n, rng(4, i))
        halves = np.concatenate([draw("vectorised", side, data, n, rng(5, i, h)) for h in (0, 1)])
        singles = np.concatenate([draw("vectorised", side, data, 1, rng(6, i, j)) for j in range(_SINGLE_DRAWS)])
        for what, a, b in ((f"one call of size {2 * n} and two of size {n}", whole, halves),
                           (f"one call of size {2 * n} and {_SINGLE_DRAWS} calls of size 1", whole, singles)):
            pvalue = stats.ks_2samp(project(a), project(b), method="asymp").pvalue
            if pvalue < CHECK_ALPHA:
                checker.fail("vectorised", f"on {side}, {what} draw different distributions (Kolmogorov-Smirnov "
                                           f"p = {pvalue:.3g} < {CHECK_ALPHA:g}): is one draw broadcast to the batch?")


def _check_declared(checker: _Checker, caps: Any, datasets: list[tuple[str, Any]], d: Any, d_prime: Any,
                    samples: int) -> list[str]:
    """The checks of the optional methods the mechanism declares (``caps``), in order; the names of
    those run (the pair's need ``d_prime``)."""
    __tracebackhide__ = True
    mechanism, fail, call, draw, rng = checker.mechanism, checker.fail, checker.call, checker.draw, checker.rng
    passed = []
    if "output_distribution" in caps:
        for i, (side, data) in enumerate(datasets):
            _check_output_distribution(mechanism, side, data, samples, rng(7, i), fail, call, draw)
        passed.append("output-distribution")

    if "sample_counts" in caps:
        for i, (side, data) in enumerate(datasets):
            _check_sample_counts(mechanism, side, data, samples, rng(8, i), rng(9, i), fail, call, draw)
        passed.append("sample-counts")

    if "exact_epsilon" in caps and d_prime is not None:
        _check_exact_epsilon(checker, d, d_prime)
        passed.append("exact-epsilon")

    if "guarantees" in caps:
        for side, data in datasets:
            for relation in RELATIONS:
                what = f"guarantees({side}, {relation!r})"
                _check_claims("guarantees", what, call("guarantees", what, mechanism.guarantees, data, relation), fail)
        passed.append("guarantees")

    if "pair_guarantees" in caps and d_prime is not None:
        for relation in RELATIONS:
            what = f"pair_guarantees(D, D', {relation!r})"
            claims = call("pair-guarantees", what, mechanism.pair_guarantees, d, d_prime, relation)
            _check_claims("pair-guarantees", what, claims, fail)
        passed.append("pair-guarantees")

    if "epsilon_sup_pi0" in caps and d_prime is not None:
        value = call("epsilon-sup-pi0", "epsilon_sup_pi0(D, D')", mechanism.epsilon_sup_pi0, d, d_prime)
        if not (is_real(value) and not math.isnan(value) and value >= 0):
            fail("epsilon-sup-pi0", f"epsilon_sup_pi0(D, D') = {value!r}: must be a number >= 0")
        passed.append("epsilon-sup-pi0")
    return passed


def _check_exact_epsilon(checker: _Checker, d: Any, d_prime: Any) -> None:
    """``exact_epsilon(D, D', δ)`` at δ = 0 and 1e-3: None or a number >= 0, non-increasing in δ."""
    __tracebackhide__ = True
    curve = []
    for delta in (0.0, 1e-3):
        value = checker.call("exact-epsilon", f"exact_epsilon(D, D', {delta:g})", checker.mechanism.exact_epsilon,
                             d, d_prime, delta)
        if value is not None and not (is_real(value) and not math.isnan(value) and value >= 0):
            checker.fail("exact-epsilon", f"exact_epsilon(D, D', {delta:g}) = {value!r}: must be None or a number "
                                          ">= 0")
        curve.append(value)
    if None not in curve and curve[1] > curve[0] * (1 + 1e-9) + 1e-12:
        checker.fail("exact-epsilon", f"exact epsilon grows with delta: {curve[0]!r} at 0 but {curve[1]!r} at 0.001")


def _check_claims(check: str, what: str, claims: Any, fail: Callable[[str, str], None]) -> None:
    __tracebackhide__ = True
    if not isinstance(claims, (list, tuple)):
        fail(check, f"{what} returned an object of type {type(claims).__name__}; the contract is a list of Guarantee")
    for c in claims:
        if not isinstance(c, Guarantee):
            fail(check, f"{what} holds {c!r}, which is not a dpaudit.core.Guarantee")


def _check_output_distribution(mechanism: Any, side: str, data: Any, samples: int, generator: np.random.Generator,
                               fail: Callable[[str, str], None], call: Callable, draw: Callable) -> None:
    """p = output_distribution(data) is a probability vector and ``samples`` draws agree with it:
    every output is an index with p > 0, and every count k_i lies in the two-sided
    Clopper–Pearson interval of level CHECK_ALPHA/len(p) around k_i/samples."""
    __tracebackhide__ = True
    check = "output-distribution"
    raw = call(check, f"output_distribution({side})", mechanism.output_distribution, data)
    try:
        p = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        fail(check, f"output_distribution({side}) returned {raw!r}, not a vector of numbers")
    if p.ndim != 1 or len(p) == 0 or not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1) > 1e-6:
        fail(check, f"output_distribution({side}) must be a non-empty vector of finite numbers >= 0 summing to 1, "
                    f"got shape {p.shape} summing to {p.sum() if p.size else 0:.6g}")
    x = np.asarray(draw(check, side, data, samples, generator))
    if x.ndim != 1 or not np.all(x == np.round(x)) or x.min() < 0 or x.max() >= len(p):
        fail(check, f"output_distribution({side}) declares outputs 0..{len(p) - 1} but sample returns "
                    f"{'vectors' if x.ndim != 1 else f'values from {x.min()!r} to {x.max()!r}'}")
    counts = np.bincount(x.astype(np.int64), minlength=len(p))
    outside = np.flatnonzero((counts > 0) & (p == 0))
    if outside.size:
        fail(check, f"on {side}, sample returned output {int(outside[0])} ({int(counts[outside[0]])} times) "
                    "which output_distribution gives probability 0")
    half = CHECK_ALPHA / len(p) / 2
    lower = clopper_pearson_lower(counts, samples, half)  # checked inverses: scipy's beta.ppf errs at 1000
    upper = clopper_pearson_upper(counts, samples, half)
    wrong = np.flatnonzero((p < lower) | (p > upper))
    if wrong.size:
        i = int(wrong[0])
        fail(check, f"on {side}, output {i} was drawn {int(counts[i])} times in {samples} but "
                    f"output_distribution gives it probability {p[i]:.6g} (outside the Clopper-Pearson "
                    f"interval [{lower[i]:.6g}, {upper[i]:.6g}] at level {CHECK_ALPHA:g}/{len(p)}); "
                    f"{len(wrong)} of {len(p)} outputs disagree")


def _check_sample_counts(mechanism: Any, side: str, data: Any, samples: int, counts_rng: np.random.Generator,
                         draws_rng: np.random.Generator, fail: Callable[[str, str], None], call: Callable,
                         draw: Callable) -> None:
    """sample_counts returns counts of ``samples`` draws over outputs 0..k−1, and they have the law of
    ``sample``'s own counts (chi-square test of homogeneity of the two count vectors, level CHECK_ALPHA)."""
    __tracebackhide__ = True
    check = "sample-counts"
    raw = call(check, f"sample_counts({side}, {samples}, rng)", mechanism.sample_counts, data, samples, counts_rng)
    counts = np.asarray(raw)
    if counts.ndim != 1 or counts.size == 0 or counts.dtype.kind not in "iu" or counts.min() < 0 \
            or int(counts.sum()) != samples:
        fail(check, f"sample_counts({side}, {samples}, rng) must be a vector of integer counts >= 0 summing to "
                    f"{samples}, got {counts.dtype} of shape {counts.shape}")
    x = np.asarray(draw(check, side, data, samples, draws_rng))
    if x.ndim != 1 or x.dtype.kind not in "biu" or x.min() < 0 or x.max() >= len(counts):
        fail(check, f"sample_counts({side}) counts outputs 0..{len(counts) - 1} but sample returns "
                    f"{'vectors' if x.ndim != 1 else f'{x.dtype} values from {x.min()!r} to {x.max()!r}'}")
    table = np.vstack([counts, np.bincount(x.astype(np.int64), minlength=len(counts))])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return  # one output only: both put every draw on it
    pvalue = float(stats.chi2_contingency(table)[1])
    if pvalue < CHECK_ALPHA:
        fail(check, f"on {side}, sample_counts and sample draw different distributions (chi-square test of "
                    f"homogeneity, p = {pvalue:.3g} < {CHECK_ALPHA:g}; counts {counts.tolist()[:8]} vs "
                    f"{table[1].tolist()[:8]})")

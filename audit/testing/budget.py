"""The budget of :func:`dpaudit.testing.assert_private`: profiles, the command line, ``settings``.

In the spirit of Hypothesis' settings, from the weakest to the strongest:

1. the profile — ``default`` (10^6 samples per side, confidence 0.99 — not the audits' 0.95: a
   suite's false-alarm rate adds up over its tests), ``ci`` (10^5: cheap,
   for every push), ``nightly`` (10^7: thorough), or one of your own
   (:meth:`settings.register_profile`); ``pytest --dp-profile NAME`` loads one;
2. ``pytest --dp-samples N``, the samples of the whole run;
3. ``settings(samples=..., confidence=...)`` as a decorator or a context manager (the innermost
   wins; ``@pytest.mark.dp_settings(samples=...)`` does the same for one test);
4. the ``samples=``/``confidence=`` arguments of ``assert_private`` itself.

This module imports nothing but the standard library: the pytest plugin, which pytest loads in
every run of every project where dpaudit is installed, reads it without importing numpy, scipy
or joblib.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

__all__ = ["PROFILES", "Budget", "active_profile", "current", "default_samples", "load_profile", "parse_count",
           "set_default_samples", "settings"]

MIN_SAMPLES = 100
MAX_COUNT = 10**18  # the command line's largest budget too (dpaudit run --samples)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Budget:
    """Samples per side and confidence of each ``assert_private``."""

    samples: int
    confidence: float


PROFILES: dict[str, Budget] = {
    "default": Budget(samples=1_000_000, confidence=0.99),
    "ci": Budget(samples=100_000, confidence=0.99),
    "nightly": Budget(samples=10_000_000, confidence=0.99),
}

_profile = "default"
_run_samples: int | None = None   # --dp-samples
_override: contextvars.ContextVar[tuple[int | None, float | None]] = contextvars.ContextVar(
    "dpaudit_settings", default=(None, None))


def parse_count(text: str | int, field: str, minimum: int) -> int:
    """An integer from ``text``, also written in float notation (``1e6``, ``2.5e5``); a value
    that is not a whole number (``1.5e0``) or is below ``minimum`` raises ValueError naming ``field``."""
    if isinstance(text, bool):
        raise ValueError(f"{field} = {text!r} is invalid: must be an integer >= {minimum}")
    if isinstance(text, int):
        value = text
    else:
        try:
            number = Decimal(str(text).strip().replace("_", ""))
        except InvalidOperation:
            raise ValueError(f"{field} = {text!r} is invalid: not an integer") from None
        if not number.is_finite() or number != number.to_integral_value():
            raise ValueError(f"{field} = {text!r} is invalid: not an integer (a whole number such as 1e6 or 1000000)")
        if number.adjusted() > 18:  # before int(): 1e999999999 would be a billion digits
            raise ValueError(f"{field} = {text!r} is invalid: too large (at most {MAX_COUNT:.0e})")
        value = int(number)
    if value < minimum or value > MAX_COUNT:
        raise ValueError(f"{field} = {text!r} is invalid: must be an integer in [{minimum}, {MAX_COUNT:.0e}]")
    return value


def _check_confidence(value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0.5 <= value < 1
    if not ok:
        raise ValueError(f"confidence = {value!r} is invalid: must be a number in [0.5, 1)")
    return float(value)


def _check_samples(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"samples = {value!r} is invalid: must be an integer >= {MIN_SAMPLES}")
    return parse_count(value, "samples", MIN_SAMPLES)


def current() -> Budget:
    """The budget in force here: innermost ``settings``, then ``--dp-samples``, then the profile."""
    samples, confidence = _override.get()
    base = PROFILES[_profile]
    return Budget(samples=samples or _run_samples or base.samples, confidence=confidence or base.confidence)


def active_profile() -> str:
    """The name of the profile in force (``--dp-profile``; ``default`` without it)."""
    return _profile


def default_samples() -> int:
    """Samples per side of an ``assert_private`` given no ``samples`` (see :func:`current`)."""
    return current().samples


def set_default_samples(samples: int | None) -> None:
    """Set (or with None, reset) the run's samples, as ``--dp-samples`` does."""
    global _run_samples
    _run_samples = None if samples is None else _check_samples(samples)


def load_profile(name: str) -> None:
    """Make the profile ``name`` the run's base budget (``--dp-profile``)."""
    global _profile
    if name not in PROFILES:
        raise ValueError(f"dp profile = {name!r} is invalid: must be one of {', '.join(PROFILES)}")
    _profile = name


class settings:  # lower case, like hypothesis.settings which it imitates
    """The budget of the ``assert_private`` calls it covers, as a decorator or a context manager::

        @settings(samples=20_000)
        def test_cheap(): assert_private(...)

        with settings(confidence=0.999):
            assert_private(...)

    A value left as None keeps the one in force (an outer ``settings``, ``--dp-samples``, the
    profile).  Nested blocks stack; the innermost wins.
    """

    def __init__(self, samples: int | None = None, confidence: float | None = None) -> None:
        self.samples = None if samples is None else _check_samples(samples)
        self.confidence = None if confidence is None else _check_confidence(confidence)
        self._tokens: list[contextvars.Token] = []

    def __repr__(self) -> str:
        return f"settings(samples={self.samples!r}, confidence={self.confidence!r})"

    def __enter__(self) -> Budget:
        samples, confidence = _override.get()
        self._tokens.append(_override.set((self.samples or samples, self.confidence or confidence)))
        return current()

    def __exit__(self, *exc: object) -> None:
        _override.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True
                with self:
                    return await fn(*args, **kwargs)
            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            with self:
                return fn(*args, **kwargs)
        return run  # type: ignore[return-value]

    @staticmethod
    def register_profile(name: str, samples: int | None = None, confidence: float | None = None,
                         parent: str = "default") -> None:
        """Register (or replace) a profile: ``parent``'s budget with the values given."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"profile name = {name!r} is invalid: must be a non-empty string")
        if parent not in PROFILES:
            raise ValueError(f"parent = {parent!r} is invalid: must be one of {', '.join(PROFILES)}")
        budget = PROFILES[parent]
        if samples is not None:
            budget = replace(budget, samples=_check_samples(samples))
        if confidence is not None:
            budget = replace(budget, confidence=_check_confidence(confidence))
        PROFILES[name] = budget

    @staticmethod
    def load_profile(name: str) -> None:
        """Make ``name`` the base budget of the run (what ``--dp-profile NAME`` does)."""
        load_profile(name)


def reset() -> None:
    """Back to the ``default`` profile with no ``--dp-samples`` (the plugin calls it when pytest ends)."""
    global _profile, _run_samples
    _profile, _run_samples = "default", None

"""``--suite libraries``: the DP libraries people use, audited at their installed versions.

Each library is a family (OpenDP, diffprivlib, python-dp) whose ``libraries`` scenarios are that
library's core mechanisms — noise on counts, bounded sums, means and variances of floats,
histograms, quantiles, noisy max, diffprivlib's regression and naive Bayes models — each adapted by
:mod:`dpaudit.libraries` and audited against the claim the library itself states (OpenDP's privacy
map, diffprivlib's and python-dp's ``epsilon``).  Every claim is expected to hold: a refutation is a
finding about that release (exit 1), never an expectation.  Budgets are small (the suite is a
regression check on two cores, not a search for the last bit of ε): ``samples_factor`` scales the
run's ``--samples`` by the cost of one release, from 5·10⁴ releases per side for the fast mechanisms
to 10³ fits for the models.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit.catalog.family import Family, Scenario
from dpaudit.core import Claim, Document
from dpaudit.libraries import (
    LibraryAudit,
    from_diffprivlib,
    from_opendp,
    from_pydp,
    library_version,
    load_library,
    opendp_core,
)

__all__ = ["DIFFPRIVLIB", "OPENDP", "PYDP"]

# Budgets as fractions of --samples (default 10⁶ per side), from the CPU time of one release on one core:
CALLS = 0.05     # 5·10⁴ per side: diffprivlib's mechanisms and python-dp's algorithms (15–50 µs a release)
EXACT = 0.01     # 10⁴ per side: OpenDP's measurements (about 0.3 ms a release: exact samplers)
TOOLS = 0.005    # 5·10³ per side: diffprivlib's tools (0.4–1 ms a call)
FITS = 0.001     # 10³ per side: diffprivlib's models (about 5 ms a fit)


def _opendp() -> Any:
    dp = opendp_core()
    dp.enable_features("contrib")
    return dp


def opendp_count() -> Any:
    """make_count on integers >> then_laplace(1): a noisy count (discrete Laplace)."""
    dp = _opendp()
    return dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()) >> dp.m.then_laplace(
        scale=1.0)


def opendp_sum(noise: str) -> Any:
    """make_sum of floats in [0, 1] >> then_laplace(1) or then_gaussian(1)."""
    dp = _opendp()
    then = dp.m.then_laplace if noise == "laplace" else dp.m.then_gaussian
    return dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0))), dp.symmetric_distance()) >> then(
        scale=1.0)


def opendp_sized(statistic: str) -> Any:
    """make_mean or make_variance of 10 floats in [0, 1] >> then_laplace(0.1)."""
    dp = _opendp()
    make = dp.t.make_mean if statistic == "mean" else dp.t.make_variance
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=10), dp.symmetric_distance()
    return make(*space) >> dp.m.then_laplace(scale=0.1)


def opendp_histogram() -> Any:
    """make_count_by_categories over ("a", "b", "c") >> then_laplace(1)."""
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()
    return dp.t.make_count_by_categories(*space, categories=["a", "b", "c"]) >> dp.m.then_laplace(scale=1.0)


def opendp_quantile() -> Any:
    """make_private_quantile (median) over five candidates in [0, 1], scale 1, pure DP."""
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False)), dp.symmetric_distance()
    return dp.m.make_private_quantile(*space, dp.max_divergence(), candidates=[0.0, 0.25, 0.5, 0.75, 1.0],
                                      alpha=0.5, scale=1.0)


def opendp_noisy_max(measure: str) -> Any:
    """make_noisy_max on three integer scores under L∞ distance, scale 1 (pure DP or zCDP)."""
    dp = _opendp()
    out = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    return dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int), out, scale=1.0)


def _scenario(name: str, audit: LibraryAudit, factor: float, about: str) -> Scenario:
    claim_id = next(c.claim_id for c in audit.claims)
    return Scenario(f"{audit.library}-{audit.version}-{name}", audit.mechanism, audit.pair,
                    expected={claim_id: "pass"}, samples_factor=factor, claims=list(audit.claims),
                    about=f"{about}; claim read from {audit.reading}")


def opendp_scenarios() -> list[Scenario]:
    """OpenDP's measurements, each against ``map(d_in)`` in its output measure."""
    cases: list[tuple[str, Callable[[], Any], dict[str, Any], str]] = [
        ("laplace-count", opendp_count, {}, "noisy count of integers"),
        ("laplace-sum", functools.partial(opendp_sum, "laplace"), {}, "Laplace sum of floats in [0, 1]"),
        ("laplace-mean", functools.partial(opendp_sized, "mean"), {}, "Laplace mean of 10 floats in [0, 1]"),
        ("laplace-variance", functools.partial(opendp_sized, "variance"), {},
         "Laplace variance of 10 floats in [0, 1]"),
        ("laplace-histogram", opendp_histogram, {"d": np.array(["a", "b"]), "d_prime": np.array(["a", "b", "a"])},
         "Laplace counts of three categories"),
        ("quantile", opendp_quantile, {}, "private median over five candidates"),
        ("noisy-max", functools.partial(opendp_noisy_max, "pure"),
         {"d": np.array([0, 1, 1]), "d_prime": np.array([1, 0, 0])}, "report noisy max of three scores"),
        ("noisy-max-zcdp", functools.partial(opendp_noisy_max, "zcdp"),
         {"d": np.array([0, 1, 1]), "d_prime": np.array([1, 0, 0])}, "report noisy max of three scores, zCDP"),
        ("gaussian-sum-zcdp", functools.partial(opendp_sum, "gaussian"), {}, "Gaussian sum of floats in [0, 1]"),
    ]
    return [_scenario(name, from_opendp(factory, claim_id=f"opendp/{name}", **pair), EXACT, about)
            for name, factory, pair, about in cases]


def diffprivlib_objects() -> list[tuple[str, Any, float, str]]:
    """(name, diffprivlib object, samples factor, about) of the suite's diffprivlib scenarios."""
    mechanisms = load_library("diffprivlib.mechanisms", "diffprivlib")
    tools = load_library("diffprivlib.tools", "diffprivlib")
    models = load_library("diffprivlib.models", "diffprivlib")
    return [
        ("laplace", mechanisms.Laplace(epsilon=1.0, sensitivity=1.0), CALLS, "Laplace mechanism on a query answer"),
        ("gaussian", mechanisms.Gaussian(epsilon=0.5, delta=1e-3, sensitivity=1.0), CALLS,
         "Gaussian mechanism on a query answer"),
        ("geometric", mechanisms.Geometric(epsilon=1.0, sensitivity=1), CALLS, "geometric mechanism on a count"),
        ("exponential", mechanisms.Exponential(epsilon=1.0, sensitivity=1.0, utility=[0.0] * 10), CALLS,
         "exponential mechanism over ten candidates"),
        ("mean", functools.partial(tools.mean, epsilon=1.0, bounds=(0.0, 1.0)), TOOLS, "tools.mean of floats"),
        ("var", functools.partial(tools.var, epsilon=1.0, bounds=(0.0, 1.0)), TOOLS, "tools.var of floats"),
        ("histogram", functools.partial(tools.histogram, epsilon=1.0, bins=4, range=(0.0, 1.0)), TOOLS,
         "tools.histogram, four bins"),
        ("median", functools.partial(tools.median, epsilon=1.0, bounds=(0.0, 1.0)), TOOLS, "tools.median"),
        ("linear-regression", models.LinearRegression(epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0)), FITS,
         "LinearRegression on one feature"),
        ("gaussian-nb", models.GaussianNB(epsilon=1.0, bounds=([0.0], [1.0])), FITS, "GaussianNB on one feature"),
    ]


def diffprivlib_scenarios() -> list[Scenario]:
    """diffprivlib's mechanisms, tools and models, each against its own ``epsilon`` (and ``delta``)."""
    pairs: dict[str, dict[str, Any]] = {
        "exponential": {"d": np.array([0.0] + [1.0] * 9), "d_prime": np.array([1.0] + [0.0] * 9)}}
    return [_scenario(name, from_diffprivlib(obj, claim_id=f"diffprivlib/{name}", **pairs.get(name, {})), factor,
                      about) for name, obj, factor, about in diffprivlib_objects()]


def pydp_scenarios() -> list[Scenario]:
    """python-dp's Laplace algorithms, each against its own ``epsilon``."""
    laplacian = load_library("pydp.algorithms.laplacian", "python-dp")
    bounded = {"epsilon": 1.0, "lower_bound": 0.0, "upper_bound": 1.0, "dtype": "float"}
    cases = [
        ("count", functools.partial(laplacian.Count, epsilon=1.0, dtype="int"), "Count"),
        ("bounded-sum", functools.partial(laplacian.BoundedSum, **bounded), "BoundedSum of floats in [0, 1]"),
        ("bounded-mean", functools.partial(laplacian.BoundedMean, **bounded), "BoundedMean of floats in [0, 1]"),
        ("bounded-variance", functools.partial(laplacian.BoundedVariance, **bounded),
         "BoundedVariance of floats in [0, 1]"),
        ("median", functools.partial(laplacian.Median, **bounded), "Median of floats in [0, 1]"),
        ("max", functools.partial(laplacian.Max, **bounded), "Max of floats in [0, 1]"),
    ]
    return [_scenario(name, from_pydp(obj, claim_id=f"pydp/{name}"), CALLS, about) for name, obj, about in cases]


def _version(distribution: str) -> str:
    return library_version(distribution)


OPENDP_DOC = Document(key="OpenDP", reference="The OpenDP Project, the OpenDP library (Python package opendp): each "
                      "measurement's privacy map, with its proof in the library's documentation")
DIFFPRIVLIB_DOC = Document(key="diffprivlib", reference="Holohan, Braghin, Mac Aonghusa and Levacher, Diffprivlib: "
                           "the IBM differential privacy library (arXiv:1907.02444, 2019), Python package diffprivlib")
PYDP_DOC = Document(key="python-dp", reference="OpenMined, python-dp (PyDP): Python bindings of Google's "
                    "differential-privacy library, Python package python-dp")
FLOAT_PROOFS = ("Unverified for the implementation: the library's guarantee is proved for the mechanism over the real "
                "numbers; floating-point noise and arithmetic can leak more (Mironov, CCS 2012; Casacuberta, "
                "Shoemate, Vadhan and Wagaman, CCS 2022).")


def _claim(family: str, document: str, name: str, statement: str, relation: str, status: str, reason: str) -> Claim:
    return Claim(id=f"{family}/{name}", document=document, where="the installed release", statement=statement,
                 relations=(relation,), status=status, reason=reason)


OPENDP_PROOF = ("Proven by the library: OpenDP's privacy maps come with proofs that cover its floating-point "
                "implementation (exact samplers, rounding-aware sensitivities).")
OPENDP_CLAIMS = tuple(_claim("opendp", "OpenDP", name, f"{what}: {measure} at d_in = {d_in} is at most map(d_in)",
                             relation, "proven", OPENDP_PROOF)
                      for name, what, measure, d_in, relation in (
                          ("laplace-count", "make_count >> then_laplace", "ε-DP", 1, "add-remove"),
                          ("laplace-sum", "make_sum >> then_laplace", "ε-DP", 1, "add-remove"),
                          ("laplace-mean", "make_mean (n = 10) >> then_laplace", "ε-DP", 2, "swap"),
                          ("laplace-variance", "make_variance (n = 10) >> then_laplace", "ε-DP", 2, "swap"),
                          ("laplace-histogram", "make_count_by_categories >> then_laplace", "ε-DP", 1, "add-remove"),
                          ("quantile", "make_private_quantile", "ε-DP", 1, "add-remove"),
                          ("noisy-max", "make_noisy_max (L∞ scores)", "ε-DP", 1, "swap"),
                          ("noisy-max-zcdp", "make_noisy_max (L∞ scores, zCDP)", "ρ-zCDP", 1, "swap"),
                          ("gaussian-sum-zcdp", "make_sum >> then_gaussian", "ρ-zCDP", 1, "add-remove")))
DIFFPRIVLIB_CLAIMS = tuple(_claim("diffprivlib", "diffprivlib", name, f"{what} is (epsilon, delta)-DP as parametrised",
                                  relation, "unverified", FLOAT_PROOFS)
                           for name, what, relation in (
                               ("laplace", "Laplace", "swap"), ("gaussian", "Gaussian", "swap"),
                               ("geometric", "Geometric", "swap"), ("exponential", "Exponential", "swap"),
                               ("mean", "tools.mean", "swap"), ("var", "tools.var", "swap"),
                               ("histogram", "tools.histogram", "add-remove"), ("median", "tools.median", "swap"),
                               ("linear-regression", "models.LinearRegression", "swap"),
                               ("gaussian-nb", "models.GaussianNB", "swap")))
PYDP_CLAIMS = tuple(_claim("pydp", "python-dp", name, f"{what} is epsilon-DP for one record added or removed",
                           "add-remove", "unverified", FLOAT_PROOFS)
                    for name, what in (("count", "Count"), ("bounded-sum", "BoundedSum"),
                                       ("bounded-mean", "BoundedMean"), ("bounded-variance", "BoundedVariance"),
                                       ("median", "Median"), ("max", "Max")))

OPENDP = Family(name="opendp", about=f"OpenDP {_version('opendp')}: measurements against their own privacy maps",
                documents=(OPENDP_DOC,), claims=OPENDP_CLAIMS, libraries=opendp_scenarios)
DIFFPRIVLIB = Family(name="diffprivlib", about=f"diffprivlib {_version('diffprivlib')}: mechanisms, tools and models "
                     "against their epsilon", documents=(DIFFPRIVLIB_DOC,), claims=DIFFPRIVLIB_CLAIMS,
                     libraries=diffprivlib_scenarios)
PYDP = Family(name="python-dp", about=f"python-dp {_version('python-dp')} (Google's library): algorithms against "
              "their epsilon", documents=(PYDP_DOC,), claims=PYDP_CLAIMS, libraries=pydp_scenarios)

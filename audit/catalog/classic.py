"""The textbook references: randomized response, Laplace, Gaussian, the exponential mechanism
(with the factor 2 of the KL paper's Definition 2) and report-noisy-max, plus the broken
exponential mechanism of :mod:`dpaudit.mechanisms.faulty`."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy import integrate, optimize, stats

from dpaudit.catalog import svt_laws
from dpaudit.catalog.family import BenchCase, Family, Scenario, TightnessCase, entry
from dpaudit.catalog.kl_claims import KL_PAPER
from dpaudit.core import Claim, Document
from dpaudit.engine.bounds import Ceiling, all_subsets, best_event
from dpaudit.engine.exact import pure_epsilon
from dpaudit.mechanisms.classic import (
    ExponentialMechanism,
    Gaussian,
    Laplace,
    RandomizedResponse,
    ReportNoisyMax,
    SnappingLaplace,
)
from dpaudit.mechanisms.faulty import (
    ExponentialMechanismWithoutFactor2,
    NoisyMaxValue,
    SparseVectorWithoutCutoff,
    SparseVectorWithoutQueryNoise,
    TextbookFloatLaplace,
)
from dpaudit.mechanisms.vector import NoisyHistogram, NoisyMax, SparseVector
from dpaudit.neighbors import Dataset, Pair, add_remove
from dpaudit.neighbors.search import worst_pair
from dpaudit.neighbors.synthetic import vote_record, votes


def _bit_pair() -> Pair:
    bit = Dataset({"bit": [0]})
    return Pair(bit, bit.add({"bit": 1}), "add a record with bit 1")


def scenarios() -> list[Scenario]:
    """Randomized response and Laplace at ε = 1, and the exponential mechanism on its worst pair."""
    value = Dataset({"value": [0.5, 0.25]})
    expmech = ExponentialMechanism(1.0)
    ballots = votes([6, 5, 5, 2])
    exp_pair = worst_pair(expmech, add_remove(ballots, [vote_record(j, 4) for j in range(4)]), pure_epsilon).pair
    return [
        Scenario("rr", RandomizedResponse(1.0), _bit_pair(), {"classic/rr": "pass"},
                 about="randomized response, eps = 1"),
        Scenario("laplace", Laplace(1.0), Pair(value, value.add({"value": 1.0}), "add a record with value 1"),
                 {"classic/laplace": "pass"}, about="Laplace mechanism on a clipped sum, eps = 1"),
        Scenario("expmech", expmech, exp_pair, {"expmech/def2": "pass"},
                 about="exponential mechanism, non-monotone vote utility, worst add/remove pair"),
    ]


def errata() -> list[Scenario]:
    """``--suite errata``: one witness per refuted classic claim (the printed broken variants of the
    auditing literature), each refuted from samples within the default budget."""
    value = Dataset({"value": [0.0]})
    return [
        Scenario("float-laplace", TextbookFloatLaplace(1.0),
                 Pair(value, value.add({"value": 1.0}), "add a record with value 1: q = 0 vs q = 1"),
                 {"classic/float-laplace": "violation"},
                 about="textbook Laplace in doubles (Mironov 2012): reachable outputs differ, true eps infinite"),
        Scenario("noisy-max-value", NoisyMaxValue(0.1),
                 Pair(np.zeros(5), np.ones(5), "all five answers up by 1 (all above)"),
                 {"classic/noisy-max-value": "violation"},
                 about="report noisy max returning the value, 5 queries: true eps 2.5 x 0.1"),
        Scenario("svt-no-query-noise", SparseVectorWithoutQueryNoise(0.1),
                 Pair(np.zeros(10), np.r_[1.0, np.zeros(9)], "the first answer up by 1"),
                 {"classic/svt-no-query-noise": "violation"},
                 about="sparse vector without query noise (Lyu, Su & Li 2017, Alg. 5): true eps infinite"),
        Scenario("svt-no-cutoff", SparseVectorWithoutCutoff(1.0),
                 Pair(np.zeros(10), np.r_[np.ones(5), -np.ones(5)], "half the answers up by 1, half down"),
                 {"classic/svt-no-cutoff": "violation"},
                 about="sparse vector without a cutoff (Lyu, Su & Li 2017, Alg. 6): loss grows with the queries"),
    ]


def categorical_reference(p: np.ndarray):
    """A plain draw-and-count reference for a finite output distribution ``p`` (counts output 0)."""
    return lambda rng, n: int(np.count_nonzero(rng.choice(len(p), n, p=p) == 0))


# --- statistical ceilings (dpaudit.engine.bounds.ceiling) of the bench's known mechanisms ------------------
#
# The ceiling is the Clopper–Pearson bound of the best event fixed in advance, at the expected
# counts of the estimation split.  Which events are searched, per mechanism:
# * finite outputs (randomized response, report-noisy-max, sparse vector): every set of outputs,
#   from the exact output distribution (for the last two by numerical integration over the noise);
# * a location shift of a continuous scalar with a monotone likelihood ratio (Laplace, Gaussian)
#   and the noisy histogram, whose privacy loss depends only on the bin that differs: every
#   threshold event {x ≥ t} and {x ≤ t} of that coordinate, on a grid of 200 001 points;
# * the sparse-vector variants of Lyu, Su & Li's Fig. 1 (dpaudit.catalog.svt_laws): every set of
#   rows for at most 16 rows, else the likelihood-ratio prefixes, from the exact law of the rows.

def _finite_ceiling(distributions: Callable[[], tuple[np.ndarray, np.ndarray]],
                    outcome: Callable[[np.ndarray], np.ndarray], delta: float = 0.0):
    """Every set of a finite output space; ``distributions()`` (computed when first asked) gives
    the point probabilities under D and D′, ``outcome(outputs)`` the index of each output."""
    @functools.cache
    def events() -> tuple[np.ndarray, np.ndarray]:
        return all_subsets(*distributions())

    def at(n: int, confidence: float) -> Ceiling:
        eps, i, favours = best_event(*events(), n, delta, confidence)
        members = np.flatnonzero(((i + 1) >> np.arange(len(distributions()[0]))) & 1)  # all_subsets' order
        return Ceiling(eps, favours, lambda outputs: np.isin(outcome(outputs), members))
    return at


def _shift_ceiling(dist, loc_d: float, loc_dp: float, scale: float, delta: float = 0.0, coordinate: int | None = None):
    """Thresholds {x ≥ t} and {x ≤ t} of a location family ``dist`` (scipy.stats) at ``loc_d``
    (D) and ``loc_dp`` (D′), for scalar outputs or one ``coordinate`` of vector outputs."""
    lo, hi = min(loc_d, loc_dp) - 60 * scale, max(loc_d, loc_dp) + 60 * scale
    t = np.linspace(lo, hi, 200_001)

    @functools.cache
    def events() -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([dist.sf(t, loc_d, scale), dist.cdf(t, loc_d, scale)]),
                np.concatenate([dist.sf(t, loc_dp, scale), dist.cdf(t, loc_dp, scale)]))

    def at(n: int, confidence: float) -> Ceiling:
        eps, i, favours = best_event(*events(), n, delta, confidence)
        cut, upper = float(t[i % len(t)]), i < len(t)

        def contains(outputs: np.ndarray) -> np.ndarray:
            x = np.asarray(outputs, dtype=float)
            x = x if coordinate is None else x[:, coordinate]
            return x >= cut if upper else x <= cut
        return Ceiling(eps, favours, contains)
    return at


def _first_above(rows: np.ndarray) -> np.ndarray:
    """The sparse vector's outcome index: the first ⊤, or m when every answer is ⊥."""
    above = np.asarray(rows) == 1
    return np.where(above.any(axis=1), np.argmax(above, axis=1), above.shape[1])


def _index(outputs: np.ndarray) -> np.ndarray:
    return np.asarray(outputs).astype(np.int64)


def _integrate(f, scale: float, centre: float = 0.0) -> float:
    """∫ f over the real line, for f concentrated within ±60·``scale`` of ``centre``."""
    return float(integrate.quad(f, centre - 60 * scale, centre + 60 * scale, points=[centre], limit=400)[0])


def sparse_vector_distribution(mechanism: SparseVector, q: np.ndarray) -> np.ndarray:
    """P[output] of the sparse vector with cutoff 1 on answers ``q`` (m queries): index k < m is
    "first ⊤ at query k" (⊥ before, aborted after), index m is "all ⊥".

    P[k] = E_ρ[Π_{i<k} F_i(T + ρ) · (1 − F_k(T + ρ))] with F_i(t) = P[q_i + ν_i < t], integrated
    over ρ ~ Lap(Δ/ε₁) numerically."""
    if mechanism.cutoff != 1:
        raise ValueError("the sparse vector's distribution is computed for cutoff 1 only")
    rho_scale, nu_scale = mechanism.noise_scales
    q = np.asarray(q, dtype=float)

    def below(t: float) -> np.ndarray:
        return stats.laplace.cdf(t - q, 0.0, nu_scale)

    def row(k: int, t: float) -> float:
        b = below(t)
        return float(np.prod(b[:k]) * (1.0 - b[k])) if k < len(q) else float(np.prod(b))

    out = np.array([_integrate(lambda r, k=k: stats.laplace.pdf(r, 0.0, rho_scale) * row(k, mechanism.threshold + r),
                               rho_scale) for k in range(len(q) + 1)])
    return out / out.sum()


def noisy_max_distribution(utility: np.ndarray, scale: float) -> np.ndarray:
    """P[argmax_a u_a + Lap(scale)] = ∫ f_a(t) Π_{b≠a} F_b(t) dt, integrated numerically."""
    u = np.asarray(utility, dtype=float)

    def density(a: int, t: float) -> float:
        cdf = stats.laplace.cdf(t, u, scale)
        return float(stats.laplace.pdf(t, u[a], scale) * np.prod(np.delete(cdf, a)))

    out = np.array([_integrate(lambda t, a=a: density(a, t), scale, float(u[a])) for a in range(len(u))])
    return out / out.sum()


def analytic_gaussian_shift(epsilon: float, delta: float) -> float:
    """μ with δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Theorem 8): the
    standardised shift of the Gaussian mechanism that is exactly (ε, δ)-DP."""
    def excess(mu: float) -> float:
        return float(stats.norm.cdf(mu / 2 - epsilon / mu) - np.exp(epsilon) * stats.norm.cdf(-mu / 2 - epsilon / mu)
                     - delta)
    return float(optimize.brentq(excess, 1e-3, 50.0))


def _analytic_gaussian(epsilon: float, delta: float) -> Gaussian:
    """:class:`Gaussian` with σ = 1/μ for Δ = 1: exactly (ε, δ)-DP on a pair whose sums differ by 1
    (its own classical calibration is bypassed by choosing the ε it is built with)."""
    mu = analytic_gaussian_shift(epsilon, delta)
    return Gaussian(math.sqrt(2 * math.log(1.25 / delta)) * mu, delta)


SVT_QUERIES = (np.zeros(10), np.array([1.0] * 5 + [-1.0] * 5))  # the classic benchmark's worst pattern
HISTOGRAM = np.array([10.0, 10.0, 10.0, 10.0, 10.0])


def bench() -> list[BenchCase]:
    rr = RandomizedResponse(1.0)
    pair = _bit_pair()
    value = Dataset({"value": [0.5]})
    svt = SparseVector(1.0, cutoff=1)
    hist = NoisyHistogram(1.0)
    ballots = votes([2, 2, 2, 2])
    rnm = ReportNoisyMax(1.0)
    gauss = _analytic_gaussian(1.0, 1e-5)
    scale = 2.0 * rnm.sensitivity / rnm.epsilon
    u_d, u_dp = (ExponentialMechanism(1.0).utility(b) for b in (ballots, ballots.add(vote_record(0, 4))))
    return [
        BenchCase("randomized response", rr, pair.d, pair.d_prime,
                  categorical_reference(rr.output_distribution(pair.d)),
                  ceiling=_finite_ceiling(lambda: (rr.output_distribution(pair.d),
                                                   rr.output_distribution(pair.d_prime)), _index)),
        BenchCase("laplace", Laplace(1.0), value, value.add({"value": 1.0}),
                  lambda rng, n: int(np.count_nonzero(0.5 + rng.laplace(0, 1, n) >= 1.0)),
                  ceiling=_shift_ceiling(stats.laplace, 0.5, 1.5, 1.0)),
        BenchCase("report noisy max", rnm, ballots, ballots.add(vote_record(0, 4)),
                  lambda rng, n: int(np.count_nonzero(np.argmax(u_d + rng.laplace(0, scale, (n, 4)), axis=1) == 0)),
                  ceiling=_finite_ceiling(lambda: (noisy_max_distribution(u_d, scale),
                                                   noisy_max_distribution(u_dp, scale)), _index)),
        BenchCase("sparse vector m=10", svt, *SVT_QUERIES,
                  lambda rng, n: int(np.count_nonzero(svt.sample(SVT_QUERIES[0], n, rng)[:, 0] == 1)),
                  ceiling=_finite_ceiling(lambda: (sparse_vector_distribution(svt, SVT_QUERIES[0]),
                                                   sparse_vector_distribution(svt, SVT_QUERIES[1])), _first_above)),
        BenchCase("noisy histogram 5 bins", hist, HISTOGRAM, HISTOGRAM + np.eye(5)[0],
                  lambda rng, n: int(np.count_nonzero(hist.sample(HISTOGRAM, n, rng)[:, 0] >= 10.5)),
                  ceiling=_shift_ceiling(stats.laplace, 10.0, 11.0, 1.0, coordinate=0)),
        BenchCase("gaussian eps(1e-5)=1", gauss, value, value.add({"value": 1.0}),
                  lambda rng, n: int(np.count_nonzero(0.5 + rng.normal(0, gauss.sigma, n) >= 1.0)),
                  ceiling=_shift_ceiling(stats.norm, 0.5, 1.5, gauss.sigma, 1e-5), deltas=(1e-5,)),
        *svt_laws.bench_cases(),  # Lyu, Su & Li's variants at eps 0.1 and 1 (exact laws, m = 10)
    ]


def tightness() -> list[TightnessCase]:
    value = Dataset({"value": [0.5]})
    laplace_pair = Pair(value, value.add({"value": 1.0}), "add a record with value 1")
    gauss = _analytic_gaussian(1.0, 1e-5)
    gauss_ceiling = _shift_ceiling(stats.norm, 0.5, 1.5, gauss.sigma, 1e-5)
    return [TightnessCase("randomized response eps=1", RandomizedResponse(1.0), _bit_pair(), 1_000_000, 1.0,
                          ceiling=_finite_ceiling(lambda: (RandomizedResponse(1.0).output_distribution(_bit_pair().d),
                                                           RandomizedResponse(1.0).output_distribution(
                                                               _bit_pair().d_prime)), _index)),
            TightnessCase("laplace eps=1", Laplace(1.0), laplace_pair, 1_000_000, 1.0,
                          ceiling=_shift_ceiling(stats.laplace, 0.5, 1.5, 1.0)),
            TightnessCase("laplace eps=0.1", Laplace(0.1), laplace_pair, 10_000_000, 0.1,
                          ceiling=_shift_ceiling(stats.laplace, 0.5, 1.5, 10.0)),
            TightnessCase("gaussian eps(1e-5)=1", gauss, laplace_pair, 1_000_000, 1.0, deltas=(1e-5,),
                          ceiling=gauss_ceiling),
            TightnessCase("gaussian eps(1e-5)=1", gauss, laplace_pair, 10_000_000, 1.0, deltas=(1e-5,),
                          ceiling=gauss_ceiling)]


# --- the claim registry: one entry per claim id this family's mechanisms emit ---

DOCUMENTS = (
    Document(key="Dwork & Roth (2014)",
             reference="C. Dwork and A. Roth, The Algorithmic Foundations of Differential Privacy, "
                       "Foundations and Trends in Theoretical Computer Science 9(3–4), 2014"),
    KL_PAPER,
    Document(key="Mironov (2012)",
             reference="I. Mironov, On Significance of the Least Significant Bits For Differential Privacy, "
                       "Proceedings of the 2012 ACM Conference on Computer and Communications Security (CCS), 2012"),
    Document(key="Ding et al. (2018)",
             reference="Z. Ding, Y. Wang, G. Wang, D. Zhang and D. Kifer, Detecting Violations of Differential "
                       "Privacy, Proceedings of the 2018 ACM Conference on Computer and Communications Security "
                       "(CCS), 2018"),
    Document(key="Lyu, Su & Li (2017)",
             reference="M. Lyu, D. Su and N. Li, Understanding the Sparse Vector Technique for Differential Privacy, "
                       "Proceedings of the VLDB Endowment 10(6), 2017"),
)

CLAIMS = (
    Claim(id="classic/rr", document="Dwork & Roth (2014)", where="§3.2 (randomized response)",
          statement="report the bit q(D) with probability e^ε/(1 + e^ε), its complement otherwise: ε-DP",
          relations=("add-remove", "swap", "label-flip"), status="proven",
          reason="Proven: neighbours change the bit by at most one, and the two output distributions differ by "
                 "exactly e^ε, so the bound is attained (Warner 1965; Dwork & Roth 2014, §3.2).",
          premises=("q(D) ∈ {0, 1}",)),
    Claim(id="classic/laplace", document="Dwork & Roth (2014)", where="Theorem 3.6 (Laplace mechanism)",
          statement="q(D) + Lap(Δ/ε) for a query of ℓ1-sensitivity Δ: ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="proven",
          reason="Proven (Dwork & Roth 2014, Theorem 3.6); threshold events attain the bound.",
          premises=("|q(D) − q(D′)| ≤ Δ for neighbours (here a sum of values clipped to [0, Δ])",)),
    Claim(id="classic/gaussian", document="Dwork & Roth (2014)", where="Theorem A.1 (Gaussian mechanism)",
          statement="q(D) + N(0, σ²), σ = Δ₂√(2 log(1.25/δ))/ε: (ε, δ)-DP",
          relations=("add-remove", "swap", "zero-out"), status="proven",
          reason="Proven for ε < 1 (Dwork & Roth 2014, Theorem A.1); for ε ≥ 1 the classical calibration is not "
                 "covered and the claim is not applicable.",
          premises=("ε < 1", "|q(D) − q(D′)| ≤ Δ₂ for neighbours")),
    Claim(id="classic/report-noisy-max", document="Dwork & Roth (2014)", where="Claim 3.9 (report noisy max)",
          statement="argmax_a u(a; D) + Lap(2Δu/ε): ε-DP",
          relations=("add-remove",), status="proven",
          reason="Proven: Claim 3.9 gives ε-DP with Lap(1/ε) for counting queries; the doubled scale 2Δu/ε covers "
                 "utilities of sensitivity Δu that move in both directions.",
          premises=("|u(a; D) − u(a; D′)| ≤ Δu for every output a",)),
    Claim(id="expmech/def2", document="KL paper", where="Definition 2, eq. (6) (exponential mechanism)",
          statement="π(a; D) ∝ exp(ε u(a; D)/(2Δu)): ε-DP",
          relations=("add-remove",), status="proven",
          reason="Proven (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10); the factor 2 is needed for "
                 "non-monotone utilities, where the variant without it loses up to 2ε.",
          premises=("|u(a; D) − u(a; D′)| ≤ Δu for every output a",)),
    Claim(id="classic/sparse-vector", document="Lyu, Su & Li (2017)", where="Algorithm 1, Theorem 2",
          statement="ρ ~ Lap(Δ/ε₁), ν_i ~ Lap(2cΔ/ε₂), answer ⊤ when q_i + ν_i ≥ T + ρ, stop after c ⊤: "
                    "(ε₁ + ε₂)-DP",
          relations=("add-remove", "swap", "zero-out"), status="proven",
          reason="Proven (Lyu, Su & Li 2017, Theorem 2) for queries of sensitivity Δ.",
          premises=("‖q(D) − q(D′)‖_∞ ≤ Δ for neighbours",)),
    Claim(id="classic/noisy-histogram", document="Dwork & Roth (2014)", where="Theorem 3.6 (Laplace mechanism)",
          statement="h(D) + Lap(Δ/ε) in every bin, for a histogram of ℓ1-sensitivity Δ: ε-DP",
          relations=("add-remove", "zero-out"), status="proven",
          reason="Proven (Dwork & Roth 2014, Theorem 3.6): one record changes one bin by one.",
          premises=("‖h(D) − h(D′)‖₁ ≤ Δ for neighbours",)),
    Claim(id="classic/noisy-max", document="Dwork & Roth (2014)", where="Claim 3.9 (report noisy max, scale 2Δ/ε)",
          statement="argmax_i q_i + Lap(2Δ/ε) on a query vector with ‖q(D) − q(D′)‖_∞ ≤ Δ: ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="proven",
          reason="Proven (Dwork & Roth 2014, Claim 3.9, with the scale doubled for answers that move in both "
                 "directions); on 5 queries the one-up-rest-down pair attains 0.93ε.",
          premises=("‖q(D) − q(D′)‖_∞ ≤ Δ for neighbours",)),
    Claim(id="classic/noisy-max-value", document="Ding et al. (2018)",
          where="§6, report noisy max returning the noisy maximum value",
          statement="max_i (q_i + Lap(2Δ/ε)) on m queries: ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="refuted",
          reason="Below min_i q_i the value's density is ∝ e^{my/b} (b = 2Δ/ε), so shifting every answer by Δ "
                 "multiplies it by e^{mε/2}: the true ε is mε/2 (2.5ε for m = 5; 'all above' pair).",
          premises=("‖q(D) − q(D′)‖_∞ ≤ Δ for neighbours",)),
    Claim(id="classic/svt-no-query-noise", document="Lyu, Su & Li (2017)",
          where="Fig. 1, Algorithm 5 (Stoddard et al. 2014)",
          statement="ρ ~ Lap(2Δ/ε), answer ⊤ when q_i ≥ T + ρ, no query noise, no cutoff: ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="refuted",
          reason="The true ε is ∞ (Lyu, Su & Li 2017, §4): with q = 0 and q′ = (Δ, 0, …) the answer (⊤, ⊥, …) is "
                 "possible only under q′.",
          premises=("‖q(D) − q(D′)‖_∞ ≤ Δ for neighbours",)),
    Claim(id="classic/svt-no-cutoff", document="Lyu, Su & Li (2017)", where="Fig. 1, Algorithm 6 (Chen et al. 2015)",
          statement="ρ ~ Lap(2Δ/ε), ν_i ~ Lap(2Δ/ε), answer ⊤ when q_i + ν_i ≥ T + ρ, no cutoff: ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="refuted",
          reason="The true ε is ∞ (Lyu, Su & Li 2017, §4): the loss of ⊤ on answers that rose and ⊥ on answers "
                 "that fell grows with the number of queries.",
          premises=("‖q(D) − q(D′)‖_∞ ≤ Δ for neighbours",)),
    Claim(id="classic/snapping", document="Mironov (2012)", where="Theorem 1 (the snapping mechanism)",
          statement="clamp_B(⌊clamp_B(q) ⊕ S ⊗ λ ⊗ LN(U*)⌉_Λ) in doubles, λ < B < 2^46 λ, Δ = 1: "
                    "(1/λ + 2^−49 B/λ)-DP",
          relations=("add-remove", "swap", "zero-out"), status="proven",
          reason="Proven (Mironov 2012, Theorem 1) for the floating-point computation itself; dpaudit sets "
                 "λ = (1 + 2^−49 B)/ε so the guarantee is ε.",
          premises=("|q(D) − q(D′)| ≤ 1 for neighbours", "λ < B < 2^46 λ")),
    Claim(id="classic/float-laplace", document="Mironov (2012)", where="§3 (the textbook Laplace mechanism in doubles)",
          statement="q ⊕ Lap(Δ/ε) computed in doubles (numpy's laplace): ε-DP",
          relations=("add-remove", "swap", "zero-out"), status="refuted",
          reason="The true ε is ∞ (Mironov 2012, §3): the sets of reachable doubles differ between q and q′; for "
                 "q = 1 every output in [−1, −0.5) has a zero last mantissa bit, which half of them have not for "
                 "q = 0.",
          premises=("|q(D) − q(D′)| ≤ Δ for neighbours",)),
)

FAMILY = Family(
    name="classic",
    about="textbook references (Dwork & Roth 2014) and the exponential mechanism of the KL paper's Definition 2",
    mechanisms=tuple(entry(cls, claims=(cid,)) for cls, cid in (
        (RandomizedResponse, "classic/rr"), (Laplace, "classic/laplace"), (Gaussian, "classic/gaussian"),
        (ExponentialMechanism, "expmech/def2"), (ReportNoisyMax, "classic/report-noisy-max"),
        (ExponentialMechanismWithoutFactor2, "expmech/def2"), (SparseVector, "classic/sparse-vector"),
        (NoisyHistogram, "classic/noisy-histogram"), (NoisyMax, "classic/noisy-max"),
        (NoisyMaxValue, "classic/noisy-max-value"), (SparseVectorWithoutQueryNoise, "classic/svt-no-query-noise"),
        (SparseVectorWithoutCutoff, "classic/svt-no-cutoff"), (SnappingLaplace, "classic/snapping"),
        (TextbookFloatLaplace, "classic/float-laplace"))),
    generators={"votes": votes},
    scenarios=scenarios,
    bench=bench,
    tightness=tightness,
    errata=errata,
    documents=DOCUMENTS,
    claims=CLAIMS,
)

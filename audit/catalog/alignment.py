"""Fixtures for the alignment paper's mechanisms and their scenarios.

Worst pairs: for Algorithm 2, a record whose covariance term has the
largest Frobenius norm (‖x‖ = 2L) zeroed out, or replaced by the same record along an
orthogonal direction (swap).  For Algorithm 1, a sanity fixture for the χ-bound (d = 1, 50
comparisons at x = 2 with 45 labelled 1, add (x = 2, y = 0)) and its d-dimensional analogue.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize

from dpaudit.catalog.family import Family, MechanismEntry, Scenario, TightnessCase, timed
from dpaudit.catalog.kl_claims import DPAUDIT
from dpaudit.catalog.onerun import designs_of
from dpaudit.core import Claim, Document, Relation, require
from dpaudit.mechanisms.align_covariance import CALIBRATIONS as COV_CALIBRATIONS
from dpaudit.mechanisms.align_covariance import CovarianceWitness, PrivateCovariance
from dpaudit.mechanisms.align_mle import CALIBRATIONS as MLE_CALIBRATIONS
from dpaudit.mechanisms.align_mle import PrivateMLE
from dpaudit.mechanisms.align_policy import PessimisticPolicy, PrivateAlignment
from dpaudit.mechanisms.preferences import MODELS, BradleyTerry
from dpaudit.neighbors import Dataset, Pair
from dpaudit.neighbors.synthetic import ball, extreme_record, preference_records, preferences

FEATURES = {"pairwise": ("x",), "kwise": ("phi",), "trajectory": ("steps",)}


def record_model(kind: str, K: int = 4, H: int = 3) -> Any:
    return MODELS[kind](K=K) if kind == "kwise" else MODELS[kind](H=H) if kind == "trajectory" else MODELS[kind]()


def _extreme_pair(kind: str, relation: Relation | str, rest: Dataset, d: int, K: int, H: int, y: int = 1,
                  y_swap: int = 1) -> Pair:
    """The extreme record along e₁ (label ``y``) put before ``rest``; zeroed out, or swapped for its
    twin along e₂ (label ``y_swap``)."""
    extreme = extreme_record(kind, np.eye(d)[0], K=K, H=H, y=y)
    base = Dataset({c: np.concatenate([np.asarray([extreme[c]], dtype=rest[c].dtype), rest[c]]) for c in rest})
    if relation == Relation.ZERO_OUT:
        return Pair(base, base.zero_out(0, FEATURES[kind]), "zero out the extreme record (norm 2L along e1)",
                    "zero-out")
    return Pair(base, base.replace(0, extreme_record(kind, np.eye(d)[1], K=K, H=H, y=y_swap)),
                "swap the extreme record along e1 for one along e2 (orthogonal)", "swap")


def covariance_pair(kind: str, relation: Relation | str, n: int = 20, d: int = 2, seed: int = 0, K: int = 4,
                    H: int = 3) -> Pair:
    """n records: n − 1 random ones and the extreme record along e₁; zero it out or swap it to e₂."""
    rest = preference_records(kind, n - 1, d, np.random.default_rng(seed), K=K, H=H)
    return _extreme_pair(kind, relation, rest, d, K, H)


def mle_pair_1d() -> Pair:
    """The χ-bound's sanity fixture: 50 comparisons at x = 2, 45 labelled 1; D′ adds (x = 2, y = 0)."""
    d = preferences(np.full((50, 1), 2.0), [1] * 45 + [0] * 5)
    return Pair(d, d.add({"x": [2.0], "y": 0}), "add (x = 2, y = 0) to 50 comparisons at x = 2 (45 labelled 1)")


def mle_pair(kind: str, relation: Relation | str = "add-remove", n: int = 30, d: int = 2, seed: int = 3, K: int = 4,
             H: int = 3) -> Pair:
    """Random records plus an extreme one; add/remove (or zero-out, or swap to an orthogonal one) it."""
    rest = preference_records(kind, n, d, np.random.default_rng(seed), K=K, H=H)
    if relation in (Relation.SWAP, Relation.ZERO_OUT):
        return _extreme_pair(kind, relation, rest, d, K, H, y=0, y_swap=1)
    extreme = extreme_record(kind, np.eye(d)[0], K=K, H=H, y=0)
    return Pair(rest.add(extreme), rest, "remove the extreme record (norm bound, along e1, label 0)")


def covariance(kind: str, calibration: str = "paper", relation: Relation | str = "swap", epsilon: float = 1.0,
               delta: float = 1e-6, **shape) -> PrivateCovariance:
    return PrivateCovariance(record_model(kind, **shape), epsilon, delta, calibration=calibration, relation=relation)


def mle(kind: str, calibration: str = "paper", relation: Relation | str = "add-remove", **options) -> PrivateMLE:
    return PrivateMLE(record_model(kind), 1.0, 1e-6, calibration=calibration, relation=relation, **options)


def scenarios() -> list[Scenario]:
    """The default suite's fixtures for align/*, with Algorithm 2's exact verdicts."""
    tight = {"align/alg2-tight": "pass"}
    out = [
        Scenario("align-alg2-swap", covariance("pairwise"), covariance_pair("pairwise", "swap"),
                 {"align/alg2-printed": "violation", **tight}, samples_factor=10,
                 about="Algorithm 2 as printed, eps = 1, delta = 1e-6, swap x -> x' orthogonal, norm 2L: "
                       "claim (0.5, 5e-7), tight eps 0.819 (Balle-Wang curve)"),
        Scenario("align-alg2-zero-out", covariance("pairwise"), covariance_pair("pairwise", "zero-out"),
                 {"align/alg2-printed": "exact-violation", **tight},
                 samples_factor=0.5,
                 about="Algorithm 2 as printed, zero-out of a norm-2L record: tight eps 0.566 vs 0.5 (white box)"),
        Scenario("align-alg2-tight", covariance("pairwise", "tight"), covariance_pair("pairwise", "swap"),
                 {"align/alg2-corrected": "pass", **tight},
                 samples_factor=0.5,
                 about="Algorithm 2 with sigma calibrated on the exact curve for swap (Lemma A.7 fixed)"),
        Scenario("align-kwise-cov", covariance("kwise"), covariance_pair("kwise", "zero-out"),
                 {"align/kwise-cov": "pass", **tight},
                 samples_factor=0.5,
                 about="K = 4 rankings, Lemma B.5's sigma (K^6): holds, over-noised"),
        Scenario("align-trajectory-cov", covariance("trajectory"), covariance_pair("trajectory", "zero-out"),
                 {"align/trajectory-cov": "pass", **tight},
                 samples_factor=0.5,
                 about="H = 3 trajectories, Lemma C.5's sigma (H^4): holds, over-noised"),
        Scenario("align-trajectory-h1-cov", covariance("trajectory", H=1),
                 covariance_pair("trajectory", "zero-out", H=1),
                 {"align/trajectory-cov": "exact-violation", **tight},
                 samples_factor=0.5,
                 about="H = 1 trajectories: Lemma C.5 is violated like Lemma A.7"),
        Scenario("align-alg1-paper", mle("pairwise"), mle_pair("pairwise"),
                 {"align/alg1-printed": "pass", "align/alg1-chi": "pass"}, samples_factor=0.2,
                 about="Algorithm 1 as printed (C = 1), d = 2, remove a norm-2L record: UNVERIFIED, no counterexample"),
        Scenario("align-alg1-instantiated", mle("pairwise", "instantiated"), mle_pair("pairwise"),
                 {"align/alg1-instantiated": "pass", "align/alg1-chi": "pass"}, samples_factor=0.1,
                 about="dpaudit's instantiation of Algorithm 1 for add/remove, (eps/2, delta/2) = (0.5, 5e-7)"),
        Scenario("align-alg1-instantiated-swap", mle("pairwise", "instantiated", "swap"), mle_pair("pairwise", "swap"),
                 {"align/alg1-instantiated": "pass", "align/alg1-chi": "pass"}, samples_factor=0.1,
                 about="dpaudit's instantiation of Algorithm 1 for swap, orthogonal norm-2L records"),
        Scenario("align-alg1-exact-1d", mle("pairwise", lambda_r=8.55, output_noise=False), mle_pair_1d(),
                 {"align/alg1-chi": "pass"}, samples_factor=0.2,
                 about="chi-bound sanity fixture, d = 1, exact minimiser, lambda_R = 8.55 (the d = 10 value, so not "
                       "Algorithm 1 as printed): the chi-bound against the exact curve by change of variables"),
    ]
    release = PrivateAlignment(mle("pairwise"), covariance("pairwise"))
    out.append(Scenario("align-release-pairwise", release, covariance_pair("pairwise", "zero-out"),
                        {"align/thm41": "pass", "align/thm41-composed": "pass"}, samples_factor=0.1,
                        about="(theta, Sigma) released together: Theorem 4.1 by composition, UNVERIFIED"))
    policy = PessimisticPolicy(release, ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.5, 0.5)), radius=1.0, ridge=1.0)
    out.append(Scenario("align-pessimistic", policy, covariance_pair("pairwise", "zero-out"),
                        {"align/thm41": "pass", "align/thm41-composed": "pass"}, samples_factor=0.1,
                        about="Algorithm 3's chosen action (4 actions): post-processing of (theta, Sigma)"))
    return out


# The errata's witness of Lemma A.7 under zero-out (and of Lemma C.5 at H = 1, the same release on the same
# shift): the bit 1[Sigma~_00 >= c] of the release (dpaudit.mechanisms.align_covariance.CovarianceWitness), a
# post-processing fixed here, before any draw, so it keeps every claim the release meets and a refutation on it
# refutes the release.  Its counts are exact binomial draws: the budget costs ~1 CPU s, not ~1e2 per 1e9.
# The release's entry (0, 0) is shifted by mu = 0.1345 standard deviations (tight eps(5e-7) = 0.566 vs 0.5).
# c sits WITNESS_Z standard deviations above the mean of D' (the smaller side):
#   p_D = Phi-bar(3.6 - mu) = 2.65e-4, p_D' = Phi-bar(3.6) = 1.59e-4, log((p_D - 5e-7)/p_D') = 0.5069 > 0.5.
# A deeper c has a larger ratio (0.551 at 4.0) but fewer counts on the selection split (capped at 3e6 per side,
# halved: dpaudit.engine.streaming), which must see the bit favour D: with c at 3.6 the rows view chooses {1} for
# D whenever the fitting half orders it first (a1 > b1) and the scoring half clears one standard error each way
# (a2 - sqrt(a2) > b2 + sqrt(b2) + 2; tests/test_errata_witness.py checks the engine does), which fails with
# probability <= 6.6e-7 by the binomial laws of the counts (1.4e-10 + 6.5e-7); at 3.75 it would be 3.4e-4.
# The first of the sequential rule's four looks (1/8 of the estimation split, alpha/8) then certifies unless
# the binomial counts of 2.5e10 per side fall low: P <= 1.1e-7 with the Clopper-Pearson pair, 1.4e-12 with the
# joint test; so each witness misses with probability <= 1e-6 (dpaudit.catalog: ERRATUM_MISS = 1e-4).  The
# budget is 8 x 2.5e10 per side so that look 1 holds 2.5e10; the run stops there.
WITNESS_Z = 3.6
WITNESS_FACTOR = 200_000  # 2e11 per side: look 1 at 1/8 of it (less the 3e6 selection) >= 2.5e10


def covariance_witness(mech: PrivateCovariance, pair: Pair, z: float = WITNESS_Z) -> CovarianceWitness:
    """``mech`` seen through the bit 1[Σ̃_ij ≥ c]: (i, j) the entry where Σ_D and Σ_D′ differ most, c
    ``z`` standard deviations above the smaller of the two (so the bit favours the larger side)."""
    a, b = mech.covariance(pair.d), mech.covariance(pair.d_prime)
    require(a.shape == b.shape and len(pair.d) == len(pair.d_prime), "pair", pair.description,
            "the witness needs D and D' of equal size (one noise scale)")
    entry = np.unravel_index(int(np.argmax(np.abs(a - b))), a.shape)
    threshold = float(min(a[entry], b[entry])) + z * mech.sigma(len(pair.d))
    return CovarianceWitness(mech.model, mech.epsilon, mech.delta, mech.calibration, mech.relation,
                             (int(entry[0]), int(entry[1])), threshold)


def errata() -> list[Scenario]:
    """``--suite errata``: Lemma A.7 (``align/alg2-printed``) under zero-out and Lemma C.5
    (``align/trajectory-cov``) at H = 1, refuted from samples alone (tight ε(δ/2) = 0.566 vs
    0.5 at ε = 1, δ = 1e-6) through the witness bit 1[Σ̃_00 ≥ c] fixed in advance (a post-processing:
    module comment above), its draws counted exactly; the white box's verdict is reported beside, not deciding."""
    tight = {"align/alg2-tight": "pass"}
    zero_out = covariance_pair("pairwise", "zero-out")
    h1 = covariance_pair("trajectory", "zero-out", H=1)
    return [
        Scenario("align-alg2-zero-out", covariance_witness(covariance("pairwise"), zero_out), zero_out,
                 {"align/alg2-printed": "violation", **tight}, samples_factor=WITNESS_FACTOR,
                 about="Algorithm 2 as printed, zero-out of a norm-2L record: tight eps 0.566 vs 0.5, from samples "
                       "of the witness bit [Sigma~_00 >= c] (c fixed in advance, 3.6 sd; eps 0.507 at delta 5e-7), "
                       "counted"),
        Scenario("align-trajectory-h1-cov", covariance_witness(covariance("trajectory", H=1), h1), h1,
                 {"align/trajectory-cov": "violation", **tight}, samples_factor=WITNESS_FACTOR,
                 about="H = 1 trajectories: Lemma C.5 is Lemma A.7 (tight eps 0.566 vs 0.5), from samples of the "
                       "witness bit [Sigma~_00 >= c] (3.6 sd; eps 0.507), counted"),
    ]


def extended() -> list[Scenario]:
    """Slower align/* fixtures for ``--suite full``: Algorithm 1 and the released pair on K-wise
    rankings and trajectories, and Algorithm 2 under swap at delta = 1e-10 with 10^8 samples."""
    out = [
        Scenario("align-kwise-mle", mle("kwise", "instantiated"), mle_pair("kwise", n=10),
                 {"align/alg1-instantiated": "pass", "align/alg1-chi": "pass"}, samples_factor=0.05,
                 about="Algorithm 1 on K = 4 rankings, dpaudit's instantiation (lambda 24, sigma_b 118.6)"),
        Scenario("align-trajectory-mle", mle("trajectory", "instantiated"), mle_pair("trajectory"),
                 {"align/alg1-instantiated": "pass", "align/alg1-chi": "pass"}, samples_factor=0.1,
                 about="Algorithm 1 on H = 3 trajectories, dpaudit's instantiation (lambda 67.6, sigma_b 103.3)"),
        # the white box decides (its tight eps is exact); the samples' verdict is shown beside it.  A sampled
        # refutation at 1e8 per side misses in ~28 % of runs and no affordable budget fixes it (the tail pilot
        # picks a deeper, luckier threshold as the budget grows: dpaudit.catalog's suite derivation)
        Scenario("align-alg2-swap-1e-10", covariance("pairwise", delta=1e-10), covariance_pair("pairwise", "swap"),
                 {"align/alg2-printed": "exact-violation", "align/alg2-tight": "pass"}, samples_factor=100,
                 about="Algorithm 2 as printed, eps = 1, delta = 1e-10, swap: claim (0.5, 5e-11), tight eps 0.876"),
    ]
    for kind in ("kwise", "trajectory"):
        cid = {"kwise": "align/kwise", "trajectory": "align/trajectory"}[kind]
        out.append(Scenario(f"align-release-{kind}", PrivateAlignment(mle(kind), covariance(kind)),
                            covariance_pair(kind, "zero-out", n=10 if kind == "kwise" else 20),
                            {cid: "pass", "align/thm41-composed": "pass"}, samples_factor=0.2,
                            about=f"(theta, Sigma) released together ({kind}): Theorem "
                                  f"{ {'kwise': '4.3', 'trajectory': '5.1'}[kind]} by composition"))
    return out


def tightness() -> list[TightnessCase]:
    """Algorithm 2 as printed under swap: ε_lower against the exact ε(10^-3) of the pair."""
    pair, mech = covariance_pair("pairwise", "swap"), covariance("pairwise")
    exact = mech.exact_epsilon(pair.d, pair.d_prime, 1e-3)
    assert exact is not None, "Algorithm 2's exact curve is known on its swap pair"
    return [TightnessCase("align alg2 swap, delta=1e-3", mech, pair, 10_000_000, exact, deltas=(1e-3,))]


def align_mle(seed: int = 0, trials: int = 20_000, loop_trials: int = 100, n: int = 1000, d: int = 5) -> dict[str, Any]:
    """Algorithm 1 trials per second (Bradley–Terry, d = 5, n = 1000, exact minimiser): all noise
    draws by batched Newton, against a per-trial ``scipy.optimize.minimize`` loop (Newton-CG with
    the same analytic gradient and Hessian) on the same draws, and their largest disagreement."""
    rng = np.random.default_rng(seed)
    data = preferences(ball(n, d, 2.0, rng), rng.integers(0, 2, n))
    mech = PrivateMLE(BradleyTerry(), 1.0, 1e-6)
    terms, lam, theta0, _ = mech._fit(data)
    b = mech.sigma_b * rng.standard_normal((trials, d))
    mech.minimiser(data, b[:10])
    batched, t_batched = timed(lambda: mech.minimiser(data, b))
    model = mech.model

    def objective(th, bb):
        return float(model.objective(th[None, :], terms)[0] + 0.5 * lam * th @ th + bb @ th)

    def gradient(th, bb):
        return model.gradient_hessian(th[None, :], terms, hessian=False)[0][0] + lam * th + bb

    def hessian(th, bb):
        return model.gradient_hessian(th[None, :], terms)[1][0] + lam * np.eye(d)

    def solve_all():
        return np.array([optimize.minimize(objective, theta0, args=(bb,), jac=gradient, hess=hessian,
                                           method="Newton-CG", options={"xtol": 1e-10}).x for bb in b[:loop_trials]])

    looped, t_loop = timed(solve_all)
    ours, plain = trials / t_batched, loop_trials / t_loop
    return {"trials_per_second": ours, "scipy_loop_trials_per_second": plain, "ratio": ours / plain,
            "max_abs_difference": float(np.abs(looped - batched[:loop_trials]).max()), "d": d, "n": n,
            "trials": trials, "loop_trials": loop_trials}


_MODEL_HELP = {"model": "the record model: pairwise (Bradley–Terry), kwise (Plackett–Luce) or trajectory",
               "K": "items ranked per record (kwise model)", "H": "steps per trajectory (trajectory model)",
               "output_noise": "add Algorithm 1's output noise to θ (False: objective perturbation only)"}


def _covariance(model: str = "pairwise", K: int = 4, H: int = 3, **params: Any) -> PrivateCovariance:
    return PrivateCovariance(record_model(model, K=K, H=H), **params)


def _mle(model: str = "pairwise", K: int = 4, H: int = 3, **params: Any) -> PrivateMLE:
    return PrivateMLE(record_model(model, K=K, H=H), **params)


# --- the claim registry: one entry per claim id this family's mechanisms emit ---

DOCUMENTS = (
    Document(key="alignment paper",
             reference="Anonymous, AI alignment with provable protection of human judgements, "
                       "paper under double-blind review"),
    DPAUDIT,
)

_PAPER_PREMISES = ("ε ≤ 1", "δ ≤ 1/n²")
_MLE_RELATIONS = ("add-remove", "zero-out", "swap")
_COV_RELATIONS = ("zero-out", "swap")

CLAIMS = (
    # --- Algorithm 1: the private MLE ---
    Claim(id="align/alg1-printed", document="alignment paper", where="Algorithm 1 and Lemma A.10",
          statement="σ_b² = 40L² log(1/δ)/ε², ν² = 40β_opt log(1/δ)/(αε²), "
                    "α = 2Cγ√(d log(1/δ) log(1/η_f))/(εn): θ̃ is (ε/2, δ/2)-DP",
          relations=_MLE_RELATIONS, status="unverified",
          reason="The cited theorems' constants could not be checked and σ_b is calibrated to L, not the Lipschitz "
                 "constant 2L. dpaudit's χ-bound (align/alg1-chi) certifies it for an exact minimiser under "
                 "add/remove when C ≥ 1, but only δ ≈ 1.5e-4 for an approximate one and δ(0.5) ≤ 1.1e-3 under swap; "
                 "no counterexample is known (at d = 1, C = 0.9 fails only with n ≈ 1.8e6, outside δ ≤ 1/n²).",
          premises=(*_PAPER_PREMISES, "0 < β_opt < 1/n", "C, the constant of Lemma A.9 (its value is not given)")),
    Claim(id="align/alg1-instantiated", document="dpaudit",
          where="provably private instantiation of the alignment paper's Algorithm 1",
          statement="ε_J = ε_A/4, ε_G = ε_A/2, ε_out = ε_A/8; λ_R = β_s/(e^{ε_J} − 1) (or τ/ε_J); σ_b from the "
                    "χ-bound, ν from δ_Gauss; solve over ℝ^d to accuracy r0: (ε_A, δ_A) = (ε/2, δ/2)",
          relations=_MLE_RELATIONS, status="corrected",
          reason="Proof: objective perturbation by change of variables (the χ-bound of align/alg1-chi) and "
                 "output noise by the weak triangle inequality for hockey-stick divergences; the split certifies "
                 "exactly (ε_A, δ_A).",
          premises=("unconstrained minimisation over ℝ^d, stopped at parameter accuracy r0",
                    "σ_b and ν calibrated for the audited relation (a swap calibration covers add/remove)")),
    Claim(id="align/alg1-chi", document="dpaudit", where="χ-bound of objective perturbation (Algorithm 1)",
          statement="exact minimiser: δ(ε) ≤ E_{ρ∼χ_k}[(1 − e^{ε − ε_J − μ²/2 − μρ})_+], μ = D_g/σ_b; "
                    "approximate minimiser: (ε1 + 2ε2, e^{ε2}δ1 + (1 + e^{ε1 + ε2})δ2), δ2 = δ_Gauss(ε2; r/ν)",
          relations=_MLE_RELATIONS, status="corrected",
          reason="Proof: by change of variables b_D(θ) = −Σ∇ℓ_i(θ) − λ_Rθ, the loss is at most ε_J + μ²/2 + μρ "
                 "with ρ ∼ χ_k; the approximate case adds output noise by the weak triangle inequality. On the d = 1 "
                 "fixture it bounds the "
                 "exact curve (0.12 vs 1.3e-2 at ε = 0.05).",
          premises=("unconstrained minimisation over ℝ^d",
                    "per record ‖∇ℓ_i‖ ≤ L_g and a PSD Hessian of rank ≤ k0 (trace ≤ τ)")),
    # --- Algorithm 2: the private covariance ---
    Claim(id="align/alg2-printed", document="alignment paper", where="Algorithm 2 and Lemma A.7",
          statement="Σ̃_D = Σ_D + G, G with i.i.d. N(0, σ²) entries, σ² = 64 log(1/δ)L⁴/(ε²n²): (ε/2, δ/2)-DP",
          relations=_COV_RELATIONS, status="refuted",
          reason="The Dwork–Roth condition needs 2 log(1.25/δ), and swap (the paper's \"differ in one item\") "
                 "doubles the variance needed. Witness: ε = 1, δ = 1e-6, a norm-2L "
                 "record zeroed out or swapped for an orthogonal one: exact ε(δ/2) = 0.566 (zero-out) and 0.819 "
                 "(swap) vs claimed 0.5.",
          premises=_PAPER_PREMISES),
    Claim(id="align/alg2-tight", document="dpaudit",
          where="tight curve of Algorithm 2 (Balle & Wang 2018, Theorem 8)",
          statement="ε(δ/2) of δ_Gauss(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), μ = Δ_F/σ for the worst pair",
          relations=_COV_RELATIONS, status="reference",
          reason="Exact: the release is a Gaussian mechanism on vec Σ_D, (ε, δ)-DP if and only if "
                 "δ ≥ δ_Gauss(ε; Δ_F/σ), with the Frobenius sensitivity of the record type and relation."),
    Claim(id="align/alg2-corrected", document="dpaudit", where="corrected calibration of Algorithm 2 (Lemma A.7 fixed)",
          statement="σ = Δ_F/μ⋆ with δ_Gauss(ε/2; μ⋆) = δ/2 for the target relation: (ε/2, δ/2)-DP",
          relations=_COV_RELATIONS, status="corrected",
          reason="Exact by the Balle–Wang curve; a swap calibration also covers zero-out, and symmetrising G keeps "
                 "the calibration valid.",
          premises=("σ calibrated for the audited relation (a swap calibration covers zero-out)",)),
    Claim(id="align/kwise-cov", document="alignment paper", where="Lemma B.5 (Algorithm 2 on K-wise rankings)",
          statement="σ² = 64 log(1/δ)K⁶L⁴/(ε²n²): the K-wise covariance is (ε/2, δ/2)-DP",
          relations=_COV_RELATIONS, status="proven",
          reason="Holds, over-noised, although its sensitivity 4K³L²/n is not the true 2KL²/((K − 1)n): σ is at "
                 "least 3 times the classical calibration for (ε/2, δ/2) for every K ≥ 2 (n ≥ 2), zero-out or swap "
                 "(exact ε(δ/2) = 0.0042 and 0.0062 at K = 4, ε = 1, δ = 1e-6, vs 0.5).",
          premises=_PAPER_PREMISES),
    Claim(id="align/trajectory-cov", document="alignment paper", where="Lemma C.5 (Algorithm 2 on trajectories)",
          statement="σ² = 64 log(1/δ)H⁴L⁴/(ε²n²): the trajectory covariance is (ε/2, δ/2)-DP",
          relations=_COV_RELATIONS, status="refuted",
          reason="At H = 1 it is Lemma A.7 and fails the same way: ε = 1, δ = 1e-6, "
                 "exact ε(δ/2) = 0.566 (zero-out) and 0.819 (swap) vs 0.5. For H ≥ 2 it holds, over-noised (H = 3: "
                 "0.176 and 0.254); its proof is copied from the K-wise case.",
          premises=_PAPER_PREMISES),
    # --- the released pair (θ̃, Σ̃): Theorems 4.1, 4.3, 5.1 ---
    Claim(id="align/thm41", document="alignment paper",
          where="Theorem 4.1 (Algorithms 1 and 2, basic composition)",
          statement="the pair (θ̃, Σ̃) is (ε, δ)-DP: (ε/2, δ/2) + (ε/2, δ/2)",
          relations=_COV_RELATIONS, status="unverified",
          reason="Rests on Lemma A.7 (refuted) and Lemma A.10 (unverified), but composition has slack. Exact checks "
                 "(ε = 1, δ = 1e-6, exact minimiser): it holds at d = 1; at d = 2 under swap δ_pair(1.0) = 1.03e-6 "
                 "> 1e-6 needs about 8.8e5 records, outside δ ≤ 1/n² (the best within it is 7.3e-7).",
          premises=(*_PAPER_PREMISES, "0 < β_opt < 1/n")),
    Claim(id="align/thm41-composed", document="dpaudit",
          where="tight check of the released pair (Theorem 4.1)",
          statement="ε_pair(δ) of Algorithm 1's χ-bound composed with Algorithm 2's exact Gaussian curve "
                    "(privacy-loss distributions composed; any record type)",
          relations=_COV_RELATIONS, status="corrected",
          reason="An upper bound: composition of the dominating privacy-loss distribution of the objective "
                 "perturbation and the exact one of the covariance release.",
          premises=("exact minimiser",)),
    Claim(id="align/kwise", document="alignment paper",
          where="Theorem 4.3 (K-wise rankings, basic composition)",
          statement="the pair (θ̃, Σ̃) for Plackett–Luce K-wise records is (ε, δ)-DP: (ε/2, δ/2) + (ε/2, δ/2)",
          relations=_COV_RELATIONS, status="unverified",
          reason="The covariance half (Lemma B.5) holds, over-noised, but the MLE half inherits Algorithm 1's "
                 "unverified constants (and the paper's rank \"as large as K³\" is wrong: it is at most K − 1); no "
                 "counterexample is known.",
          premises=(*_PAPER_PREMISES, "0 < β_opt < 1/n")),
    Claim(id="align/trajectory", document="alignment paper",
          where="Theorem 5.1 (trajectories, basic composition)",
          statement="the pair (θ̃, Σ̃) for trajectory records is (ε, δ)-DP: (ε/2, δ/2) + (ε/2, δ/2)",
          relations=_COV_RELATIONS, status="unverified",
          reason="Lemma C.5 fails at H = 1 and Algorithm 1's constants are unverified (Lemma C.6 cites itself), but "
                 "composition has slack; no counterexample to the pair is known.",
          premises=(*_PAPER_PREMISES, "0 < β_opt < 1/n")),
)

FAMILY = Family(
    name="alignment",
    about="AI alignment with provable protection of human judgements (anonymous, under review)",
    mechanisms=(MechanismEntry(PrivateCovariance.name, _covariance,
                               "Algorithm 2: the Gaussian covariance release (model = pairwise | kwise | trajectory)",
                               forwards=PrivateCovariance,
                               help={**_MODEL_HELP, "calibration": " | ".join(COV_CALIBRATIONS)},
                               claims=("align/alg2-printed", "align/alg2-corrected", "align/alg2-tight",
                                       "align/kwise-cov", "align/trajectory-cov"),
                               canaries="m rare vectors on dedicated coordinates, in zero-out slots; score: the "
                                        "released diagonal entry of the canary's coordinate; tests the corrected "
                                        "calibration's (eps/2, delta/2) and the exact Gaussian curve "
                                        "(align/alg2-tight) (align-alg2-tight)"),
                MechanismEntry(PrivateMLE.name, _mle,
                               "Algorithm 1: objective-perturbed MLE (model = pairwise | kwise | trajectory)",
                               forwards=PrivateMLE,
                               help={**_MODEL_HELP, "calibration": " | ".join(MLE_CALIBRATIONS)},
                               claims=("align/alg1-printed", "align/alg1-instantiated", "align/alg1-chi"),
                               canaries="m canary comparisons on dedicated item features (d = d0 + m), or random "
                                        "unit directions when d < m; score: the fitted theta's coordinate (or "
                                        "cosine); tests the printed and the instantiated calibration "
                                        "(align-alg1-dedicated-*, align-alg1-*)")),
    generators={"preferences": preferences},
    scenarios=scenarios,
    extended=extended,
    errata=errata,
    tightness=tightness,
    benchmarks={"align_mle": align_mle},
    onerun=lambda: designs_of("alignment"),
    documents=DOCUMENTS,
    claims=CLAIMS,
)

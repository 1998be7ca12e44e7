"""Private policy optimisation (the PO slides): DP-PG with both reward conventions, the one-pass
meta-algorithm under user-level neighbours, DP-NPG (PrivLS exponential mechanism) and DP-REBEL.

The worst user-level pair of DP-PG: a gradient of norm G with Â = ±R.  Prompt 0
has features ±e1, the reference μ always answers response 0 and θ_1 = (−20, 0) makes
π_θ(1|x0) ≈ 1, so y = 0, y′ = 1 and ∇log π(0|x0) = 2e1 (norm G = 2) surely; the other
users have constant rewards (Â = 0).  Replacing the extreme user's rewards (R, −R) by
(−R, R) moves ĝ by exactly the sensitivity: 2GR/m (advantage) or 4GR/m (reward).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpaudit.catalog.designs.policy import dppg_design
from dpaudit.catalog.family import Family, MechanismEntry, Scenario, one_line, timed
from dpaudit.catalog.kl_claims import DPAUDIT
from dpaudit.catalog.onerun import designs_of
from dpaudit.core import Claim, Document, Guarantee
from dpaudit.engine.exact import pure_epsilon
from dpaudit.mechanisms.curves import gauss_epsilon
from dpaudit.mechanisms.private_po import DPNPG, DPPG, DPREBEL, PolicyEnv
from dpaudit.neighbors import Dataset, Pair
from dpaudit.neighbors.search import worst_pair
from dpaudit.onerun.design import CanaryDesign

ENV = PolicyEnv(features=(((1.0, 0.0), (-1.0, 0.0)), ((0.0, 1.0), (0.0, -1.0))),
                reference=((1.0, 0.0), (0.5, 0.5)), theta0=(-20.0, 0.0))


def population(m: int, rounds: int, extreme_round: int, reward_bound: float = 1.0) -> Pair:
    """m·rounds users, all neutral but one extreme user in ``extreme_round``; D′ flips its rewards."""
    n = m * rounds
    prompts = np.ones(n, dtype=np.int64)
    rewards = np.zeros((n, 2))
    i = extreme_round * m
    prompts[i] = 0
    rewards[i] = (reward_bound, -reward_bound)
    d = Dataset({"prompt": prompts, "reward": rewards})
    return Pair(d, d.replace(i, {"prompt": 0, "reward": [-reward_bound, reward_bound]}),
                f"user {i} (round {extreme_round + 1}): rewards (R, -R) replaced by (-R, R)", "user-level")


def tight_claims(mech: DPPG, data: Dataset) -> list[Guarantee]:
    """The mechanism's claims plus the exact Gaussian curve at its δ (kind ``tight``).

    One pass: the changed user moves one round's step, μ = Δ/σ.  Repeated users move every
    round's step: the T steps compose to μ√T (Gaussian composition is exact)."""
    mu = mech.sensitivity / mech.sigma * (math.sqrt(mech.T) if mech.schedule == "repeat" else 1.0)
    tight = Guarantee(epsilon=gauss_epsilon(mech.delta, mu), delta=mech.delta, relation="user-level",
                      source=f"Balle & Wang (2018), Thm 8: the exact Gaussian curve, mu = {mu:.4g}",
                      claim_id="po/dp-pg-tight", kind="tight")
    return [*mech.guarantees(data, "user-level"), tight]


def batch(m: int = 6, seed: int = 11) -> Dataset:
    """One round's users with their sampled responses, for DP-NPG and DP-REBEL."""
    rng = np.random.default_rng(seed)
    prompts = np.r_[0, rng.integers(0, 2, m - 1)]
    y = np.r_[0, rng.integers(0, 2, m - 1)]
    yp = np.r_[1, rng.integers(0, 2, m - 1)]
    rewards = np.round(rng.uniform(-1, 1, (m, 2)), 3)
    rewards[0] = (1.0, -1.0)
    return Dataset({"prompt": prompts, "y": y, "y_prime": yp, "reward": rewards})


def user_candidates() -> list[dict]:
    return [{"prompt": p, "y": a, "y_prime": b, "reward": [r1, r2]}
            for p in (0, 1) for a in (0, 1) for b in (0, 1) for r1 in (-1.0, 1.0) for r2 in (-1.0, 1.0)]


def disc(radius: float, n: int = 3) -> tuple:
    grid = np.linspace(-radius, radius, n)
    pts = [(a, b) for a in grid for b in grid if math.hypot(a, b) <= radius * (1 + 1e-12)]
    return tuple(pts)


def npg(enforced: bool = True) -> DPNPG:
    radius = 1.0 / ENV.G if enforced else 6.0 / ENV.G
    return DPNPG(ENV, disc(radius, 5), epsilon=1.0, reward_bound=1.0, enforce_condition=enforced)


def rebel() -> DPREBEL:
    return DPREBEL(ENV, disc(2.0, 5), epsilon=1.0, clip=1.0)


def dppg(convention: str, epsilon: float = 4.0, T: int = 1, schedule: str = "one-pass",
         output: str = "final") -> DPPG:
    return DPPG(ENV, m=2, T=T, epsilon=epsilon, delta=1e-5, reward_bound=1.0, convention=convention,
                schedule=schedule, output=output)


def scenarios() -> list[Scenario]:
    """The fixtures for po/*, with the tight Gaussian curve beside DP-PG's claims."""
    out = []
    # Rewards in [-R, R] break Theorem 1's premise |Â| <= R (a misuse demonstration: at 10^7 samples
    # per side the record says the samples would refute the claim); the valid convention passes.
    for name, conv, expect, factor in (("po-dp-pg-reward", "reward", "not-applicable", 10),
                                       ("po-dp-pg-advantage", "advantage", "pass", 2)):
        mech, pair = dppg(conv), population(2, 1, 0)
        out.append(Scenario(name, mech, pair, {"po/dp-pg": expect, "po/dp-pg-tight": "pass"}, samples_factor=factor,
                            about=f"DP-PG, claimed (4, 1e-5), {conv} convention",
                            claims=tight_claims(mech, pair.d)))
    mech, pair = dppg("advantage", T=5, output="transcript"), population(2, 5, 2)
    out.append(Scenario("po-meta-one-pass", mech, pair,
                        {"po/dp-pg": "pass", "po/meta": "pass", "po/dp-pg-tight": "pass"},
                        samples_factor=2, about="meta-algorithm, T = 5, one user changed in round 3: one round's loss",
                        claims=tight_claims(mech, pair.d)))
    mech, pair = dppg("advantage", T=5, schedule="repeat"), population(2, 1, 0)
    out.append(Scenario("po-meta-repeat", mech, pair, {"po/dp-pg": "not-applicable", "po/meta": "not-applicable",
                                                       "po/dp-pg-tight": "pass"}, samples_factor=6,
                        about="misuse demonstration: users repeat in all 5 rounds, outside Proposition 1's one-pass "
                              "premise; the rounds compose (the tight curve holds)",
                        claims=tight_claims(mech, pair.d)))
    base = batch()
    candidate_mechs: tuple[tuple[str, DPNPG | DPREBEL, str], ...] = (
        ("po-dp-npg", npg(), "pass"), ("po-dp-npg-unenforced", npg(False), "not-applicable"),
        ("po-dp-rebel", rebel(), "pass"))
    for name, candidate_mech, expect in candidate_mechs:
        pairs = [Pair(base, base.replace(i, c), f"replace user {i} by {c}", "user-level")
                 for i in range(len(base)) for c in user_candidates()]
        pair = worst_pair(candidate_mech, pairs, pure_epsilon).pair
        cid = "po/dp-rebel" if name == "po-dp-rebel" else "po/dp-npg"
        out.append(Scenario(name, candidate_mech, pair, {cid: expect},
                            about=f"{candidate_mech.name} on one round's batch, worst user swap"))
    return out


def extended() -> list[Scenario]:
    """DP-PG at ε = 1 with rewards in [−R, R], outside Theorem 1's premise |Â| ≤ R: at 10^8 samples per side
    the record shows the samples would refute it (tight ε 1.098)."""
    mech, pair = dppg("reward", epsilon=1.0), population(2, 1, 0)
    return [Scenario("po-dp-pg-reward-eps1", mech, pair, {"po/dp-pg": "not-applicable", "po/dp-pg-tight": "pass"},
                     samples_factor=100, about="DP-PG, claimed (1, 1e-5), rewards in [-R, R]: tight 1.098",
                     claims=tight_claims(mech, pair.d))]


FIXTURE_NAME = "po-dp-pg-advantage-one-run"


def onerun_fixtures() -> list[CanaryDesign]:
    """The default suite's one-run fixture: DP-PG at po-dp-pg-advantage's printed claim (ε = 4,
    δ = 1e-5, advantage convention, user-level), audited from ONE training run of 400 canary users
    (d = 48, T = 10 rounds of 50 users, white-box scores, k₊ = k₋ = 100 fixed in advance), so the
    report puts the multi-run and the one-run answers on po/dp-pg side by side."""
    design = dppg_design(m=400, d=48, rounds=10, per_round=50, epsilon=4.0, delta=1e-5)
    return [dataclasses.replace(design, name=FIXTURE_NAME,
                                description=f"one run of DP-PG at po-dp-pg-advantage's claim (4, 1e-5): "
                                            f"{design.description}")]


def dp_pg_rounds(seed: int = 0, runs: int = 10_000, rounds: int = 10, loop_runs: int = 200) -> dict[str, Any]:
    """DP-PG rounds per second (d = 8, m = 64, 4 responses): all runs as arrays, against a plain
    loop over runs (one run per call) measured in the same run."""
    rng = np.random.default_rng(seed)
    env = PolicyEnv(features=tuple(rng.normal(size=(16, 4, 8)) / 4))  # the field is a tuple (of 16 arrays here)
    mech = DPPG(env, m=64, T=rounds, epsilon=1.0, delta=1e-5)
    data = Dataset({"prompt": rng.integers(0, 16, 64 * rounds), "reward": rng.uniform(-1, 1, (64 * rounds, 4))})
    _, batched = timed(lambda: mech.sample(data, runs, rng))
    _, looped = timed(lambda: [mech.sample(data, 1, rng) for _ in range(loop_runs)])
    ours, plain = runs * rounds / batched, loop_runs * rounds / looped
    return {"rounds_per_second": ours, "plain_loop_rounds_per_second": plain, "ratio": ours / plain,
            "runs": runs, "rounds": rounds, "d": 8, "m": 64, "responses": 4}


_ENV_HELP = {"env": "the policy environment as a table: features[x, y] (prompts × responses × d), optional "
                    "reference μ(y|x) (None: uniform) and theta0 θ_1 (None: zeros)",
             "m": "users per round", "T": "rounds", "reward_bound": "R_max, the bound on rewards or advantages",
             "learning_rate": "the policy-gradient step size",
             "candidates": "the finite candidate set the exponential mechanism chooses from",
             "enforce_condition": "refuse candidates with ||w|| > R/G (the claim needs sup |w . grad log pi| <= R)",
             "clip": "c, the clip of the squared REBEL residual", "rebel_eta": "η of the REBEL regression"}


def _with_env(cls: type):
    """A builder taking the environment as a table (``env = {features = [...], reference = [...]}``)."""
    def build(env: dict, **params: Any):
        return cls(PolicyEnv(**env), **params)
    build.__doc__ = cls.__doc__
    return build


# --- the claim registry: one entry per claim id this family's mechanisms emit ---

DOCUMENTS = (
    Document(key="PO slides",
             reference="Private policy optimization, slides (title, authors and date not given on the slides): a "
                       "meta-algorithm for differentially private policy optimization, DP-PG, DP-NPG and DP-REBEL"),
    DPAUDIT,
)

_ONE_PASS = "each user contributes one record in exactly one round (one pass)"

CLAIMS = (
    Claim(id="po/dp-pg", document="PO slides", where="Theorem 1 (privacy of DP-PG, Algorithm 2)",
          statement="σ² = 16 log(1.25/δ)R_max²G²/(m²ε²): (ε, δ)-DP in PO",
          relations=("user-level",), status="proven",
          reason="Holds with about a factor 2 in ε to spare when |Â| ≤ R_max (swap sensitivity 2GR_max/m), also "
                 "for ε ≥ 1 by the exact curve (po/dp-pg-tight: 0.514 at ε = 1, 2.37 at ε = 4, δ = 1e-5). "
                 "With rewards in [−R_max, R_max] "
                 "(|Â| ≤ 2R_max) it fails: exact ε(1e-5) = 1.098 at claimed ε = 1, 5.24 at ε = 4.",
          premises=("|Â| ≤ R (advantage clipped)", "‖∇_θ log π_θ‖ ≤ G", _ONE_PASS)),
    Claim(id="po/dp-pg-tight", document="dpaudit",
          where="tight curve of DP-PG (Balle & Wang 2018, Theorem 8)",
          statement="ε(δ) of δ_Gauss(ε; μ), μ = Δ₂/σ (μ√T when the same users take part in all T rounds)",
          relations=("user-level",), status="reference",
          reason="Exact: the changed user moves one round's Gaussian step by Δ₂ (2GR/m with |Â| ≤ R, 4GR/m with "
                 "rewards in [−R, R]); Gaussian composition over repeated rounds is exact."),
    Claim(id="po/meta", document="PO slides", where="Proposition 1 (meta-algorithm, Algorithm 1)",
          statement="PrivUpdate (ε, δ)-DP for replace-one on each round's batch: the T-round run is (ε, δ)-DP in PO",
          relations=("user-level",), status="proven",
          reason="Adaptive parallel composition over disjoint batches. With users "
                 "repeating across rounds the claim does not apply: compose over their participations.",
          premises=(_ONE_PASS, "PrivUpdate is (ε, δ)-DP for replace-one on its batch")),
    Claim(id="po/dp-npg", document="PO slides",
          where="Algorithm 5 (PrivLS by the exponential mechanism) in DP-NPG",
          statement="P(w) ∝ exp(−ε L(w)/(8R_max²)) over a finite W: ε-DP in PO",
          relations=("user-level",), status="proven",
          reason="The exponential mechanism with per-record terms in [0, 4R_max²], i.e. the KL-policy family with "
                 "u = −L, η = 8R_max²/ε and uniform π0, so ε_pair ≤ (max Δu − min Δu)/η ≤ ε; without the "
                 "condition on w the per-record range is unbounded and the claim fails.",
          premises=("sup_{w,x,y} |wᵀ∇log π(y|x)| ≤ R_max (e.g. ‖w‖ ≤ R_max/G)", "|Â| ≤ R_max", "W finite")),
    Claim(id="po/dp-rebel", document="dpaudit",
          where="instantiation of the slides' DP-REBEL",
          statement="P(θ) ∝ exp(−ε F_t(θ)/(2c)) over a finite Θ, F_t the REBEL regression loss with squared "
                    "residuals clipped at c: ε-DP in PO",
          relations=("user-level",), status="corrected",
          reason="The slides give no privacy parameters and an inconsistent update; this exponential mechanism, "
                 "each record's term in [0, c], is ε-DP by construction (McSherry & Talwar 2007).",
          premises=("Θ finite", "squared REBEL residual clipped at c")),
    Claim(id="po/dp-pg-curve-if-premise", document="dpaudit",
          where="tight curve of DP-PG's printed σ under Theorem 1's premise (Balle & Wang 2018, Theorem 8)",
          statement="μ-GDP with μ = 2GR/(mσ): the exact Gaussian curve of the printed σ, were |Â| ≤ R",
          relations=("user-level",), status="reference",
          reason="Evidence beside a not-applicable po/dp-pg: with rewards in [−R, R] (|Â| up to 2R) one user moves "
                 "its round's step by up to 4GR/m, twice the premise's sensitivity, so a run outside the premise "
                 "rejects this curve; that says the printed σ does not cover the run, not that Theorem 1 is wrong."),
)

FAMILY_NAME = "policy-optimization"
DPPG_CANARIES = ("m canary users (user-level), each in one round on a dedicated feature coordinate with extreme "
                 "advantages (R, -R), its mirror (-R, R) when left out; white-box score: the projection of that "
                 "round's noisy step on the canary's coordinate; tests the printed (eps, delta) and the exact "
                 "Gaussian curve of the sigma (po/dp-pg-tight); twins: sigma for the wrong relation, the other "
                 "reward convention (dppg-whitebox*, and po-dp-pg-advantage-one-run in the default suite)")
FAMILY = Family(
    name=FAMILY_NAME,
    about="private policy optimisation slides: DP-PG, the meta-algorithm, DP-NPG and DP-REBEL (user-level DP)",
    mechanisms=tuple(MechanismEntry(cls.name, _with_env(cls), one_line(cls.__doc__), forwards=cls, help=_ENV_HELP,
                                    claims=ids, canaries=canaries)
                     for cls, ids, canaries in ((DPPG, ("po/dp-pg", "po/meta"), DPPG_CANARIES),
                                                (DPNPG, ("po/dp-npg",), ""), (DPREBEL, ("po/dp-rebel",), ""))),
    scenarios=scenarios,
    extended=extended,
    benchmarks={"dp_pg_rounds": dp_pg_rounds},
    onerun=lambda: designs_of(FAMILY_NAME),
    onerun_fixtures=onerun_fixtures,
    onerun_fixture_names=(FIXTURE_NAME,),
    documents=DOCUMENTS,
    claims=CLAIMS,
)

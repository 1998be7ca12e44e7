"""Training mechanisms audited in one run: a reward model trained with DP-SGD (numpy), and
Opacus's DP-SGD through its public API (the ``opacus`` extra).

DP-SGD (Abadi et al., CCS 2016, Algorithm 1) draws every record into each step's batch with
probability q, clips each per-example gradient to norm C and adds N(0, σ²C²I) to the sum; its
claim is the accountant's: the privacy loss distribution of T self-composed Poisson-subsampled
Gaussians (dp-accounting's PLD accountant, pessimistic, so an upper bound on the true ε), read as
one (ε, δ) (``dpsgd/accountant``) or as the whole trade-off curve (``dpsgd/curve``).  A training
run is far too costly for the Monte Carlo path (10⁵–10⁹ draws per side), so this family has no
multi-run scenario: its scenarios are one-run (canary) audits (:mod:`dpaudit.catalog.onerun`).
"""

from __future__ import annotations

from dpaudit.catalog.family import Family, MechanismEntry, one_line
from dpaudit.catalog.onerun import designs_of
from dpaudit.core import Claim, Document
from dpaudit.mechanisms.dpsgd import DPSGD

NAME = "dp-sgd"

DOCUMENTS = (
    Document(key="DP-SGD",
             reference="M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang, Deep Learning "
                       "with Differential Privacy, ACM CCS 2016 (Algorithm 1); accounted with the privacy loss "
                       "distribution of the Poisson-subsampled Gaussian (A. Koskela, J. Jälkö, A. Honkela, AISTATS "
                       "2020; V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, PETS 2022), as "
                       "Google's dp-accounting library computes it"),
)

_PREMISES = ("Poisson subsampling: each record enters each step's batch independently with probability q",
             "every per-example gradient clipped to norm C", "Gaussian noise N(0, σ²C²I) added to each step's sum",
             "add-or-remove one record")
_WHY = ("T-fold composition of the Poisson-subsampled Gaussian mechanism; the PLD accountant is exact up to its "
        "discretisation, which it rounds pessimistically (every δ an upper bound).")

# Opacus's accountants as dpaudit.pipelines.opacus reads them (engine.accountant.mechanism()).
_OPACUS_ACCOUNTANTS = (
    ("prv", "PRV", "proven", "Gopi, Lee & Wutschitz (2021): the PRV accountant's ε is an upper bound up to its "
                             "stated discretisation error (Opacus's eps_error)."),
    ("rdp", "RDP", "proven", "Mironov (2017) and the subsampled-Gaussian RDP bound, converted to (ε, δ): an upper "
                             "bound, looser than the PLD accountant's."),
    ("gdp", "GDP", "unverified", "Bu, Dong, Long & Su (2020): the central-limit approximation of the composed "
                                 "subsampled Gaussian; an approximation, not an upper bound, at finite T."),
)

CLAIMS = (
    Claim(id="dpsgd/accountant", document="DP-SGD", where="Algorithm 1, PLD accountant",
          statement="(ε, δ)-DP with ε = the PLD accountant's ε(δ) of T Poisson-subsampled Gaussians of noise "
                    "multiplier σ and rate q (add-or-remove one record)",
          relations=("add-remove",), status="proven", reason=_WHY, premises=_PREMISES),
    Claim(id="dpsgd/curve", document="DP-SGD", where="Algorithm 1, PLD accountant (whole privacy profile)",
          statement="f-DP for the trade-off curve of the accountant's privacy profile δ(ε) of T Poisson-subsampled "
                    "Gaussians (σ, q), sampled on a grid of ε in [0, 40] and read as its lower envelope "
                    "max_j f_{ε_j, δ(ε_j)} (a weaker curve than the true one)",
          relations=("add-remove",), status="proven", reason=_WHY, premises=_PREMISES),
    Claim(id="opacus/pld-accountant", document="DP-SGD",
          where="Algorithm 1 as Opacus's DPOptimizer runs it, our PLD accountant",
          statement="(ε, δ)-DP with ε = the PLD accountant's ε(δ) at Opacus's (σ, q, T) (add-or-remove one record)",
          relations=("add-remove",), status="proven", reason=_WHY, premises=_PREMISES),
    *(Claim(id=f"opacus/{name}-accountant", document="DP-SGD",
            where=f"Algorithm 1 as Opacus's DPOptimizer runs it, Opacus's own {title} accountant",
            statement=f"(ε, δ)-DP with ε = Opacus's {title} accountant's get_epsilon(δ) after the run, at the "
                      "(σ, q, T) its history recorded (add-or-remove one record); the claim a user of "
                      "dpaudit.pipelines.opacus audits",
            relations=("add-remove",), status=status, reason=reason, premises=_PREMISES)
      for name, title, status, reason in _OPACUS_ACCOUNTANTS),
    Claim(id="opacus/pld-curve", document="DP-SGD",
          where="Algorithm 1 as Opacus's DPOptimizer runs it, our PLD accountant (whole privacy profile)",
          statement="f-DP for the lower envelope of the PLD accountant's privacy profile at Opacus's (σ, q, T)",
          relations=("add-remove",), status="proven", reason=_WHY, premises=_PREMISES),
)


def _dpsgd(noise_multiplier: float, sampling_probability: float, steps: int, **params: object) -> DPSGD:
    return DPSGD(noise_multiplier=float(noise_multiplier), sampling_probability=float(sampling_probability),
                 steps=int(steps), **params)  # type: ignore[arg-type]


_dpsgd.__doc__ = DPSGD.__doc__

FAMILY = Family(
    name=NAME,
    about="a reward model trained with DP-SGD (Poisson subsampling, clipping, Gaussian noise; PLD accountant), "
          "audited in one run",
    mechanisms=(MechanismEntry("dpsgd-reward-model", _dpsgd,
                               one_line("DP-SGD on a Bradley-Terry (logistic) reward model, rows [x, y, kind]; "
                                        "one run(dataset, rng) trains it once"),
                               forwards=DPSGD, claims=("dpsgd/accountant", "dpsgd/curve"),
                               canaries="white box: m gradient (Dirac) canaries, scored by the sum over steps of "
                                        "per-step log-likelihood ratios; black box: m input canaries with private "
                                        "features, scored by the last iterate; tests the PLD accountant's (eps, "
                                        "delta) and its whole curve, and reads the strongest rejected accountant "
                                        "curve (sigma varied; valid against that family only); twins: noise x0.5, "
                                        "no clipping on canaries (dpsgd-*)",
                               help={"noise_multiplier": "σ: the noise is N(0, σ²C²I) on each step's sum",
                                     "sampling_probability": "q: each record's probability to enter a step's batch",
                                     "steps": "T, the number of steps", "clip": "C, the per-example gradient norm",
                                     "learning_rate": "η: each step sets θ ← θ − η·U_t / (qN)",
                                     "bug": "a faulty twin: none, noise-halved, no-clip-canaries, shuffle-batches",
                                     "keep_updates": "keep every step's noisy sum (what a white-box auditor reads)"}),),
    onerun=lambda: designs_of(NAME),
    documents=DOCUMENTS,
    claims=CLAIMS,
)

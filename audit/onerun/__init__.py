"""One-run (canary) auditing: bound the privacy of a training run from one run of it.

Steinke, Nasr, Jagielski, *Privacy Auditing with One (1) Training Run*, NeurIPS 2023 (the game
and the (ε, δ) bound); Mahloujifar, Melis, Chaudhuri, *Auditing f-Differential Privacy in One
Run*, ICML 2025 (the test of a claimed trade-off curve).  Modules:

* :mod:`.game` — the canary game (secret, datasets, runs, record); :mod:`.secret_order` — whether a
  caller's secret is laid out in a plausibly random order;
* :mod:`.rules` — guessing rules valid by construction (fixed, Bonferroni grid, split);
* :mod:`.steinke` — the (ε, δ) lower bound; :mod:`.fdp` — the curve test and the GDP μ;
* :mod:`.curves` — curve claims (μ-GDP, (ε, δ), a sampled privacy profile);
* :mod:`.bound` / :mod:`.api` — the entry points; :mod:`.result` — the record; :mod:`.wording` — what a
  verdict rests on, in the words printed beside it;
* :mod:`.planner` — how many canaries a target needs; :mod:`.fixtures` — reference mechanisms;
* :mod:`.design` — :class:`~dpaudit.onerun.design.CanaryDesign`, what a training mechanism declares to be
  audited in one run (the papers' designs are the catalog's: :mod:`dpaudit.catalog.designs`).
"""

from __future__ import annotations

from dpaudit.onerun.api import audit_one_run
from dpaudit.onerun.bound import one_run_bound
from dpaudit.onerun.curves import CurveClaim, approx_dp, gdp, gdp_epsilon, gdp_mu, profile, subsampled_gaussian_profile
from dpaudit.onerun.game import CanaryGame, GameRecord
from dpaudit.onerun.planner import Plan, plan_canaries
from dpaudit.onerun.result import MU_LABEL, OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split

__all__ = ["MU_LABEL", "CanaryGame", "CurveClaim", "Fixed", "GameRecord", "Grid", "OneRunResult", "Plan", "Split",
           "approx_dp", "audit_one_run", "gdp", "gdp_epsilon", "gdp_mu", "one_run_bound", "plan_canaries", "profile",
           "subsampled_gaussian_profile"]

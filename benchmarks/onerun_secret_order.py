"""One-run null validity with a caller's secret (issue 41, item 10): every rule a caller's secret is
bounded under, scores independent of a Bernoulli(1/2) secret in a random order, 400 seeds per case.

Cases: i.i.d. N(0, 1) scores; scores drifting with the canary index (−0.01·j + N(0, 1): the canaries
added first score higher); scores
patterned by parity (±1 on even/odd canaries + N(0, 1)).  Rules: Fixed(50, 50), the default grid,
Split(), the rule planned from a gdp(1) claim.  Each rate is P[ε_LB > 0] and P[μ_LB > 0] at
α = 0.05 (m = 1000); the bound is α + 3 s.e. = 0.0827.  The ordered secrets the issue measured
(included-first on drifting scores, alternating on parity scores) are refused by
:mod:`dpaudit.onerun.secret_order`; with the check switched off they are "caught" again (the row
``ordered, check off``), which shows the measurement sees what the check refuses.

    PYTHONPATH=$PWD python benchmarks/onerun_secret_order.py [--seeds 400]

The same computation is tests/test_onerun_premises.py's slow tier.  Measured on the shared 2-core
machine (seeds 0-399 of stream [41, seed], tie-break seed = the seed), P[eps_LB > 0] / P[mu_LB > 0]:

    rule           i.i.d.           drift (-0.01 j)   parity           (drift +0.01 j)
    Fixed(50, 50)  0.0575 / 0.0375  0.0275 / 0.0200   0.0400 / 0.0275  0.0425 / 0.0325
    default grid   0.0225 / 0.0175  0.0150 / 0.0150   0.0225 / 0.0225  0.0275 / 0.0275
    Split()        0.0250 / 0.0175  0.0150 / 0.0150   0.0225 / 0.0225  0.0325 / 0.0325
    planned gdp(1) 0.0475 / 0.0475  0.0325 / 0.0325   0.0325 / 0.0325  0.0450 / 0.0450

all <= 0.0827, no random secret refused (4,800 games).  Ordered secrets, 100 seeds each: included-first
on falling drift and alternating on parity refused 100/100 under Fixed(50, 50) and the default grid;
with the order check off, 100/100 false findings (included-first on a rising drift: 0/100, the
guesses go the wrong way).  CPU per case: 2-3 s (Fixed, planned), 11 s (grid), 80 s (Split).
"""

from __future__ import annotations

import argparse
import math
import time

import dpaudit.onerun.bound as bound_module
from dpaudit.onerun import Fixed
from tests.test_onerun_premises import RULES, SCORES, _alternating, _in_first, false_findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400)
    seeds = parser.parse_args().seeds
    limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds)
    print(f"m = 1000, alpha = 0.05, {seeds} seeds per case, bound alpha + 3 s.e. = {limit:.4f}")
    for rule in RULES:
        for scores in SCORES:
            start = time.process_time()
            eps, mu, refused = false_findings(RULES[rule], SCORES[scores], seeds=seeds)
            print(f"{rule:13s} {scores:7s} eps_LB>0 {eps / seeds:.4f}  mu_LB>0 {mu / seeds:.4f}  refused {refused}  "
                  f"({time.process_time() - start:.1f} CPU s)", flush=True)
    original = bound_module.check_secret_order
    for name, layout, scores in (("included-first", _in_first, "drift"), ("alternating", _alternating, "parity")):
        eps, _, refused = false_findings(Fixed(50, 50), SCORES[scores], seeds=100, secret=layout())
        bound_module.check_secret_order = lambda bits: None  # type: ignore[assignment]
        try:
            off, _, _ = false_findings(Fixed(50, 50), SCORES[scores], seeds=100, secret=layout())
        finally:
            bound_module.check_secret_order = original
        print(f"ordered {name} on {scores}: refused {refused}/100; check off: eps_LB>0 in {off}/100")


if __name__ == "__main__":
    main()

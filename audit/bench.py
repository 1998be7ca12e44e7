"""``python -m audit bench``: throughput and tightness, measured in one run.

Throughput: samples per second (both sides) through ``audit_mechanism`` end to end —
selection, every view, streamed counting, bounds — for each built-in mechanism family, and
the same figure for a plain-numpy reference that only draws the same output distribution
and counts one fixed event, the least work any sampling auditor must do.  Their ratio is
the price of everything dpaudit adds.  Tightness: ε_lower/ε_true on randomized response and
the Laplace mechanism at the budgets of the acceptance tests.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from audit.api import audit_mechanism
from mechanisms.classic import Laplace, RandomizedResponse
from mechanisms.kl_bandits import KLBandit
from mechanisms.kl_linear import KLLinearBandit
from mechanisms.kl_rlhf import KLRLHF
from neighbors import Dataset
from neighbors.synthetic import bandit_log, comparisons, linear_log


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _families() -> list[tuple[str, Any, Any, Any, Callable[[np.random.Generator, int], int]]]:
    bit = Dataset({"bit": [0]})
    value = Dataset({"value": [0.5]})
    mab = KLBandit(3, eta=0.25, beta0=0.5, pi0=(0.02, 0.49, 0.49))
    log = bandit_log([[1.0, 0.0, 0.0, 0.0], [0.5] * 20, [0.3] * 30])
    lin = KLLinearBandit(((1.0,), (-1.0,)), ridge=100.0, beta0=0.0, eta=0.02, pi0=(1e-3, 1 - 1e-3))
    empty = linear_log([], [], d=1)
    rlhf = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.1)
    canon = comparisons(np.full((10, 1), 2.0), [1] * 5 + [0] * 5)

    def categorical(p: np.ndarray) -> Callable[[np.random.Generator, int], int]:
        return lambda rng, n: int(np.count_nonzero(rng.choice(len(p), n, p=p) == 0))

    rr = RandomizedResponse(1.0)
    return [
        ("randomized response", rr, bit, bit.add({"bit": 1}), categorical(rr.output_distribution(bit))),
        ("laplace", Laplace(1.0), value, value.add({"value": 1.0}),
         lambda rng, n: int(np.count_nonzero(0.5 + rng.laplace(0, 1, n) >= 1.0))),
        ("kl-bandit", mab, log, log.remove(0), categorical(mab.output_distribution(log))),
        ("kl-linear", lin, empty, empty.add({"phi": [1.0], "reward": 1.0}), categorical(lin.output_distribution(empty))),
        ("kl-rlhf", rlhf, canon, canon.flip(0), categorical(rlhf.output_distribution(canon))),
    ]


def run(samples: int = 2_000_000, seed: int = 0) -> dict[str, Any]:
    """Throughput rows per family and the tightness figures."""
    rows = []
    for name, mech, d, dp, reference in _families():
        audit_mechanism(mech, d, dp, samples=20_000, seed=seed)  # warm caches and imports
        result, ours = _timed(lambda: audit_mechanism(mech, d, dp, samples=samples, seed=seed))
        rng = np.random.default_rng(seed)
        _, plain = _timed(lambda: [reference(rng, samples) for _ in range(2)])
        rows.append({"family": name, "samples_per_side": samples, "ours_seconds": ours, "plain_seconds": plain,
                     "ours_per_second": 2 * samples / ours, "plain_per_second": 2 * samples / plain,
                     "ratio_ours_to_plain": plain / ours, "epsilon_lower": result.epsilon_lower})
    bit = Dataset({"bit": [0]})
    value = Dataset({"value": [0.5]})
    tight = []
    for label, mech, d, dp, n, truth in [
        ("randomized response eps=1", RandomizedResponse(1.0), bit, bit.add({"bit": 1}), 1_000_000, 1.0),
        ("laplace eps=1", Laplace(1.0), value, value.add({"value": 1.0}), 1_000_000, 1.0),
        ("laplace eps=0.1", Laplace(0.1), value, value.add({"value": 1.0}), 10_000_000, 0.1),
    ]:
        r, secs = _timed(lambda: audit_mechanism(mech, d, dp, samples=n, seed=seed))
        tight.append({"audit": label, "samples_per_side": n, "epsilon_true": truth, "epsilon_lower": r.epsilon_lower,
                      "tightness": r.epsilon_lower / truth, "seconds": secs})
    from audit import align_fixtures as af
    pair, mech = af.covariance_pair("pairwise", "swap"), af.covariance("pairwise")
    r, secs = _timed(lambda: audit_mechanism(mech, pair.d, pair.d_prime, samples=10_000_000, seed=seed,
                                             deltas=(1e-3,), relation="swap"))
    truth = mech.exact_epsilon(pair.d, pair.d_prime, 1e-3)
    tight.append({"audit": "align alg2 swap, delta=1e-3", "samples_per_side": 10_000_000, "epsilon_true": truth,
                  "epsilon_lower": r.epsilon_lower, "tightness": r.epsilon_lower / truth, "seconds": secs})
    return {"throughput": rows, "tightness": tight, "dp_pg_rounds": dp_pg_rounds(seed), "align_mle": align_mle(seed),
            "machine": {"python": platform.python_version(), "numpy": np.__version__,
                        "processor": platform.processor() or platform.machine()}}


def dp_pg_rounds(seed: int = 0, runs: int = 10_000, rounds: int = 10, loop_runs: int = 200) -> dict[str, Any]:
    """DP-PG rounds per second (d = 8, m = 64, 4 responses): all runs as arrays, against a plain
    loop over runs (one run per call) measured in the same run."""
    from mechanisms.private_po import DPPG, PolicyEnv
    rng = np.random.default_rng(seed)
    env = PolicyEnv(features=rng.normal(size=(16, 4, 8)) / 4)
    mech = DPPG(env, m=64, T=rounds, epsilon=1.0, delta=1e-5)
    data = Dataset({"prompt": rng.integers(0, 16, 64 * rounds), "reward": rng.uniform(-1, 1, (64 * rounds, 4))})
    _, batched = _timed(lambda: mech.sample(data, runs, rng))
    _, looped = _timed(lambda: [mech.sample(data, 1, rng) for _ in range(loop_runs)])
    ours, plain = runs * rounds / batched, loop_runs * rounds / looped
    return {"rounds_per_second": ours, "plain_loop_rounds_per_second": plain, "ratio": ours / plain,
            "runs": runs, "rounds": rounds, "d": 8, "m": 64, "responses": 4}


def align_mle(seed: int = 0, trials: int = 20_000, loop_trials: int = 100, n: int = 1000, d: int = 5) -> dict[str, Any]:
    """Algorithm 1 trials per second (Bradley–Terry, d = 5, n = 1000, exact minimiser): all noise
    draws by batched Newton, against a per-trial ``scipy.optimize.minimize`` loop (Newton-CG with
    the same analytic gradient and Hessian) on the same draws, and their largest disagreement."""
    from scipy import optimize

    from mechanisms.align_mle import PrivateMLE
    from mechanisms.preferences import BradleyTerry
    from neighbors.synthetic import ball, preferences

    rng = np.random.default_rng(seed)
    data = preferences(ball(n, d, 2.0, rng), rng.integers(0, 2, n))
    mech = PrivateMLE(BradleyTerry(), 1.0, 1e-6)
    terms, lam, theta0, _ = mech._fit(data)
    b = mech.sigma_b * rng.standard_normal((trials, d))
    mech.minimiser(data, b[:10])
    batched, t_batched = _timed(lambda: mech.minimiser(data, b))
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

    looped, t_loop = _timed(solve_all)
    ours, plain = trials / t_batched, loop_trials / t_loop
    return {"trials_per_second": ours, "scipy_loop_trials_per_second": plain, "ratio": ours / plain,
            "max_abs_difference": float(np.abs(looped - batched[:loop_trials]).max()), "d": d, "n": n,
            "trials": trials, "loop_trials": loop_trials}


def table(report: dict[str, Any]) -> str:
    lines = ["throughput (samples per second, both sides; plain = draw the same distribution and count one event)",
             f"{'family':22s} {'ours/s':>12s} {'plain/s':>12s} {'ours/plain':>11s} {'eps_lower':>10s}"]
    for r in report["throughput"]:
        lines.append(f"{r['family']:22s} {r['ours_per_second']:12.3g} {r['plain_per_second']:12.3g} "
                     f"{r['ratio_ours_to_plain']:11.3f} {r['epsilon_lower']:10.4f}")
    lines += ["", "tightness (eps_lower / eps_true, seed 0, confidence 0.95)",
              f"{'audit':28s} {'samples':>10s} {'eps_lower':>10s} {'tightness':>10s} {'seconds':>8s}"]
    for t in report["tightness"]:
        lines.append(f"{t['audit']:28s} {t['samples_per_side']:10d} {t['epsilon_lower']:10.5f} "
                     f"{t['tightness']:10.4f} {t['seconds']:8.2f}")
    pg = report.get("dp_pg_rounds")
    if pg:
        lines += ["", f"DP-PG (d = {pg['d']}, m = {pg['m']}, {pg['responses']} responses): {pg['rounds_per_second']:.3g} "
                  f"rounds/s batched across runs, {pg['plain_loop_rounds_per_second']:.3g} in a plain loop over runs "
                  f"({pg['ratio']:.0f}x)"]
    al = report.get("align_mle")
    if al:
        lines += [f"Algorithm 1 private MLE (d = {al['d']}, n = {al['n']}, exact minimiser): "
                  f"{al['trials_per_second']:.3g} trials/s batched Newton, {al['scipy_loop_trials_per_second']:.3g} "
                  f"in a per-trial scipy.optimize loop ({al['ratio']:.0f}x); solutions agree to "
                  f"{al['max_abs_difference']:.1e}"]
    return "\n".join(lines) + "\n"

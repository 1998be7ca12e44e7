"""The one-run audit's figures: canary scores by inclusion, and ε_LB against the number of guesses.

Both are drawn from a result or its saved JSON (with ``include_scores=True``): nothing is
re-sampled, and the same scores give the same pixels.  matplotlib is imported when a figure is
drawn, never at import.

The second panel is *exploratory*: each point is the bound a rule fixed in advance at that k
(k₊ = k₋ = k, r = 2k guesses) would have given, so the curve as a whole is a look at the data,
not a bound (its maximum is not valid without a multiplicity correction, Steinke, Nasr, Jagielski,
NeurIPS 2023, §6); the panel says so on the figure, and the audit's own rule, fixed in advance,
is marked on it.  The reported ε_LB is the payload's, never read off this curve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit.onerun.rules import counts
from dpaudit.onerun.steinke import epsilon_lower

__all__ = ["guesses_curve", "guesses_figure", "onerun_page", "page_figure", "scores_figure", "thresholds"]

POINTS = 30  # values of k on the exploratory curve (geometric from 1 to m/2)


def _doc(result: Any) -> Mapping[str, Any]:
    return result if isinstance(result, Mapping) else result.to_dict()


def _arrays(result: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(result, Mapping):
        scores, secret = result.get("scores"), result.get("secret")
    else:
        scores, secret = getattr(result, "scores", None), getattr(result, "secret", None)
    if scores is None or secret is None:
        raise ValueError("the one-run plots need the scores and the secret (save with include_scores=True)")
    return np.asarray(scores, dtype=float), np.asarray(secret, dtype=int)


def guesses_curve(scores: np.ndarray, secret: np.ndarray, *, delta: float, alpha: float,
                  ks: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(r, ε_LB at r = 2k guesses, k₊ = k₋ = k) for each k: exploratory, see the module docstring."""
    m = scores.size
    chosen: Sequence[int] | np.ndarray = (
        ks if ks is not None else np.unique(np.round(np.geomspace(1, max(m // 2, 1), POINTS)).astype(int)))
    rs = np.array([2 * k for k in chosen])
    eps = np.array([epsilon_lower(m, 2 * k, counts(scores, secret, int(k), int(k)), delta=delta, alpha=alpha)
                    for k in chosen])
    return rs, eps


def thresholds(scores: np.ndarray, k_plus: int, k_minus: int) -> tuple[float | None, float | None]:
    """The scores at which the rule's guesses start: "in" at or above the k₊-th highest score, "out"
    at or below the k₋-th lowest (ties broken by position, as :func:`dpaudit.onerun.rules.counts`)."""
    order = np.argsort(-scores, kind="stable")
    upper = float(scores[order[k_plus - 1]]) if 0 < k_plus <= scores.size else None
    lower = float(scores[order[scores.size - k_minus]]) if 0 < k_minus <= scores.size else None
    return upper, lower


def _draw_scores(ax: Any, scores: np.ndarray, secret: np.ndarray, cuts: tuple[float | None, float | None],
                 colours: tuple[str, str] = ("#1f4e79", "#d68910")) -> None:
    bins = np.histogram_bin_edges(scores, bins=40)
    ax.hist(scores[secret == 1], bins=bins, alpha=0.6, color=colours[0], label=f"included ({int(secret.sum())})")
    ax.hist(scores[secret == 0], bins=bins, alpha=0.6, color=colours[1],
            label=f"excluded ({int((secret == 0).sum())})")
    upper, lower = cuts
    if upper is not None:
        ax.axvline(upper, color="black", ls="--", lw=0.9, label="guess in at or above")
    if lower is not None:
        ax.axvline(lower, color="black", ls=":", lw=0.9, label="guess out at or below")
    ax.set_xlabel("canary score (higher = guessed in)")
    ax.set_ylabel("canaries")


def _draw_guesses(ax: Any, rs: np.ndarray, eps: np.ndarray, delta: float, chosen_r: int | None) -> None:
    ax.plot(rs, eps, marker="o", ms=3, color="#1e8449", lw=1.1, label="rule fixed at this r (one point each)")
    ax.set_xscale("log")
    ax.set_xlabel("number of guesses r (k+ = k- = r/2)")
    ax.set_ylabel(f"eps lower bound at delta = {delta:g}")
    if chosen_r is not None:
        ax.axvline(chosen_r, color="black", ls="--", lw=1, label=f"the audit's rule: r = {chosen_r}")
    ax.set_title("exploratory: each point alone, not a bound as a curve", fontsize=7, loc="right")


def scores_figure(result: Any, ax: Any = None) -> Any:
    """Histogram of the scores of included vs excluded canaries."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    scores, secret = _arrays(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    _draw_scores(ax, scores, secret, (None, None))
    ax.legend()
    return ax


def guesses_figure(result: Any, *, delta: float, alpha: float, ax: Any = None, chosen_r: int | None = None) -> Any:
    """ε_LB against the number of guesses (exploratory), with the audit's own r marked."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    scores, secret = _arrays(result)
    rs, eps = guesses_curve(scores, secret, delta=delta, alpha=alpha)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    _draw_guesses(ax, rs, eps, delta, chosen_r)
    ax.legend()
    return ax


def onerun_page(result: Any, path: str | None = None) -> Any:
    """Both panels on one matplotlib figure; saved to ``path`` when given (for notebooks: the PDF
    report draws :func:`page_figure`)."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    scores_figure(result, ax=a)
    doc = _doc(result)
    delta = float(doc["bounds"][0]["delta"])
    guesses_figure(result, delta=delta, alpha=float(doc["alpha"]), ax=b, chosen_r=int(doc["r"]))
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def page_figure(scenario: Mapping[str, Any]) -> tuple[bytes, float, float]:
    """The report's figure of a one-run scenario (a results.json entry with its scores): the two
    panels side by side, as a palette PNG with its size in inches (see :mod:`dpaudit.reports.plots`).

    The rule's guess thresholds are drawn where the guesses are taken over all canaries (fixed and
    grid rules; a split rule guesses on its held-out part only, so no threshold over all is drawn)."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)
    from matplotlib.ticker import FuncFormatter

    from dpaudit.reports import plots  # optional: it draws with matplotlib (the PDF extra)

    scores, secret = _arrays(scenario)
    delta = float(scenario["bounds"][0]["delta"])
    rule = (scenario.get("rule") or {}).get("rule")
    cuts = thresholds(scores, int(scenario["k_plus"]), int(scenario["k_minus"])) if rule in ("fixed", "grid") \
        else (None, None)
    rs, eps = guesses_curve(scores, secret, delta=delta, alpha=float(scenario["alpha"]))
    chosen = int(scenario["r"]) if rule in ("fixed", "grid") else None
    width, height = plots.WIDTH, 2.7
    with plt.rc_context(plots.STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(width, height))
        fig.subplots_adjust(left=0.08, right=0.985, top=0.9, bottom=0.34, wspace=0.28)
        _draw_scores(left, scores, secret, cuts, (plots.BLUE, plots.ORANGE))
        left.set_title("scores of included vs excluded canaries")
        _draw_guesses(right, rs, eps, delta, chosen)
        right.xaxis.set_major_formatter(FuncFormatter(plots.tick))
        top = float(eps.max()) if eps.size and math.isfinite(float(eps.max())) else 0.0
        right.set_ylim(0, max(top * 1.1, 0.1))
        for ax, columns in ((left, 2), (right, 1)):  # the right panel's two entries are long: one a line
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.19), ncol=columns, frameon=False)
        return plots.png(fig, width, height)

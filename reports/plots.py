"""The figures of a scenario page, each drawn from one results record set (no re-sampling)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.patches import Rectangle
from matplotlib.ticker import NullFormatter

from dpaudit.reports.text import fmt

RED, GREEN, GREY, BLUE, ORANGE = "#c0392b", "#1e8449", "#7f8c8d", "#1f4e79", "#d68910"


def _finite(v: Any) -> float | None:
    if v is None or isinstance(v, str):
        return None
    return float(v) if math.isfinite(v) else None


def chain(ax, claims: list[dict[str, Any]], epsilon_sup: float | None) -> None:
    """One row per claim: ε_lower (with its confidence) ≤ ε_exact ≤ ε_claim at the claim's δ."""
    rows = [c for c in claims if c["verdict"] != "not-applicable"]
    if not rows:
        ax.text(0.5, 0.5, "no applicable claim on this pair", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    values = [v for c in rows for v in (_finite(c["epsilon_lower"]), _finite(c["epsilon_exact"]),
                                          _finite(c["epsilon_claim"])) if v]
    positive = [v for v in values if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 50
    top = max(values) * (3 if log else 1.15) if values else 1.0
    for y, c in enumerate(rows):
        lower, exact, claim = _finite(c["epsilon_lower"]), _finite(c["epsilon_exact"]), _finite(c["epsilon_claim"])
        colour = RED if c["finding"].startswith("refuted") else GREEN
        if lower is not None:
            ax.plot([max(lower, 1e-12), top], [y, y], color=colour, lw=6, alpha=0.25, solid_capstyle="butt")
            ax.plot(max(lower, 1e-12), y, marker=">", color=colour, ms=8, ls="none")
        if exact is not None:
            ax.plot(exact, y, marker="o", color=BLUE, ms=7, ls="none")
        elif c["epsilon_exact"] == "inf":
            ax.annotate("exact = inf", (top, y), xytext=(-4, 5), textcoords="offset points", ha="right",
                        fontsize=6.5, color=BLUE)
        if claim is not None:
            ax.plot([claim, claim], [y - 0.3, y + 0.3], color="black", lw=2)
    if epsilon_sup is not None and _finite(epsilon_sup):
        ax.axvline(float(epsilon_sup), color=ORANGE, ls=":", lw=1)
    ax.set_yticks([])
    for y, c in enumerate(rows):  # labels inside the axes: long claim ids never run off the page
        ax.text(0.005, y + 0.28, f"{c['claim_id']} (delta {fmt(c['delta'])}): {c['verdict']}", fontsize=6.5,
                transform=ax.get_yaxis_transform(), va="bottom",
                color=RED if c["finding"].startswith("refuted") else "black")
    ax.set_ylim(-0.6, len(rows) - 0.1)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(positive) / 3, top)
    else:
        ax.set_xlim(0, top)
    ax.set_xlabel("epsilon", fontsize=8)
    ax.tick_params(labelsize=7)
    handles = [ax.plot([], [], marker=">", color=GREEN, ls="none", label="eps_lower (true eps lies right of it)")[0],
               ax.plot([], [], marker="o", color=BLUE, ls="none", label="eps_exact (white box)")[0],
               ax.plot([], [], marker="|", color="black", ls="none", ms=10, mew=2, label="eps_claim")[0]]
    if epsilon_sup is not None and _finite(epsilon_sup):
        handles.append(ax.plot([], [], color=ORANGE, ls=":", label="sup over reference policies")[0])
    ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=len(handles),
              frameon=False)
    ax.set_title("The chain eps_lower <= eps_exact <= eps_claim (red: claim refuted)", fontsize=9)


def distributions(ax, scenario: dict[str, Any]) -> None:
    """Exact output distributions (finite outputs) or the selection split's picture."""
    dist = scenario.get("distributions")
    display = scenario["estimate"].get("display") or {}
    if dist:
        p, q = np.asarray(dist["D"]), np.asarray(dist["D'"])
        idx = np.argsort(-np.maximum(p, q), kind="stable")[:24]
        idx = np.sort(idx)
        x = np.arange(len(idx))
        ax.bar(x - 0.2, p[idx], width=0.4, color=BLUE, label="P[M(D) = a]")
        ax.bar(x + 0.2, q[idx], width=0.4, color=ORANGE, label="P[M(D') = a]")
        ax.set_xticks(x)
        ax.set_xticklabels([str(i) for i in idx], fontsize=6 if len(idx) <= 12 else 5,
                           rotation=0 if len(idx) <= 12 else 90)
        smallest = min(p[p > 0].min() if (p > 0).any() else 1, q[q > 0].min() if (q > 0).any() else 1)
        if max(p.max(), q.max()) / max(smallest, 1e-300) > 100:
            ax.set_yscale("log")
        ax.set_xlabel("output", fontsize=8)
        ax.set_title("Exact output distributions", fontsize=9)
    elif display.get("kind") == "outputs":
        x = np.arange(len(display["values"]))
        nx, ny = display["n"]
        ax.bar(x - 0.2, np.asarray(display["D"]) / nx, width=0.4, color=BLUE, label="under D")
        ax.bar(x + 0.2, np.asarray(display["D'"]) / ny, width=0.4, color=ORANGE, label="under D'")
        ax.set_xticks(x)
        labels = [v + (" *" if e else "") for v, e in zip(display["values"], display["in_event"], strict=True)]
        ax.set_xticklabels(labels, fontsize=5.5, rotation=45, ha="right")
        ax.set_title("Top outputs (selection split; * in event)", fontsize=9)
    elif display.get("kind") == "histogram":
        edges = np.asarray(display["edges"])
        nx, ny = display["n"]
        centres = (edges[:-1] + edges[1:]) / 2
        px, py = np.asarray(display["D"]) / nx, np.asarray(display["D'"]) / ny
        ax.step(centres, np.where(px > 0, px, np.nan), where="mid", color=BLUE, label="under D")
        ax.step(centres, np.where(py > 0, py, np.nan), where="mid", color=ORANGE, label="under D'")
        ax.set_yscale("log")
        if display.get("threshold") is not None:
            ax.axvline(display["threshold"], color="black", ls="--", lw=1, label="event threshold")
        ax.set_xlabel(display.get("statistic", "statistic"), fontsize=8)
        ax.set_title("Statistic under D and D' (selection split)", fontsize=9)
    else:
        ax.text(0.5, 0.5, "no output summary recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.set_ylabel("probability", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6.5)


def convergence(ax, scenario: dict[str, Any], claims: list[dict[str, Any]]) -> None:
    series = scenario["estimate"].get("convergence") or []
    if not series:
        ax.text(0.5, 0.5, "no convergence series", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    n, eps = zip(*series, strict=True)
    ax.plot(n, eps, marker="o", color=GREEN, ms=4, label="eps_lower at the first delta")
    exact = _finite(scenario.get("epsilon_exact"))
    if exact is not None:
        ax.axhline(exact, color=BLUE, ls="-", lw=1, label="eps_exact")
    for c in claims:
        v = _finite(c["epsilon_claim"])
        if v is not None and c["delta"] == scenario["estimate"]["bounds"][0]["delta"]:
            ax.axhline(v, color="black", ls="--", lw=1, label=f"claim {c['claim_id']}")
    if max(n) / min(n) >= 10:  # within one decade a log axis has no labelled tick
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on short log ranges
    ax.set_xlabel("estimation samples per side", fontsize=8)
    ax.set_ylabel("epsilon", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    ax.set_title("Convergence", fontsize=9)


def tradeoff(ax, scenario: dict[str, Any], claims: list[dict[str, Any]]) -> None:
    """Empirical (FPR, FNR) boxes and the region each claim allows (f-DP view)."""
    pts = scenario["estimate"].get("tradeoff") or []
    grid = np.linspace(0, 1, 400)
    shown = 0
    for c in claims:
        eps = _finite(c["epsilon_claim"])
        if eps is None or shown >= 3:
            continue
        e = math.exp(min(eps, 700))
        f = np.maximum.reduce([np.zeros_like(grid), 1 - c["delta"] - e * grid, (1 - c["delta"] - grid) / e])
        ax.plot(grid, f, color=RED if c["finding"].startswith("refuted") else "black", lw=1,
                label=f"claimed f: {c['claim_id']}")
        shown += 1
    for p in pts:
        ax.add_patch(_box(p))
    if pts:
        ax.plot([p["fpr"] for p in pts], [p["fnr"] for p in pts], ".", color=GREEN, ms=3, label="empirical tests")
    largest = max((_finite(c["epsilon_claim"]) or 0 for c in claims), default=0)
    if largest > 3:  # large-epsilon curves hug the axes: spread the corner out
        ax.set_xscale("symlog", linthresh=1e-6)
        ax.set_yscale("symlog", linthresh=1e-6)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("false-positive rate", fontsize=8)
    ax.set_ylabel("false-negative rate", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="upper right")
    ax.set_title("Trade-off (f-DP): boxes below a curve refute it", fontsize=8.5)


def _box(p: dict[str, float]) -> Rectangle:
    return Rectangle((p["fpr_lower"], p["fnr_lower"]), p["fpr_upper"] - p["fpr_lower"],
                     p["fnr_upper"] - p["fnr_lower"], facecolor=GREEN, alpha=0.3, edgecolor=GREEN, lw=0.5)


def has_profile(scenario: dict[str, Any], claims: list[dict[str, Any]]) -> bool:
    """A privacy profile has something to show: an exact distribution, or δ > 0 bounds or claims."""
    return bool(scenario.get("exact_profile")) or any(b["delta"] > 0 for b in scenario["estimate"]["bounds"]) \
        or any(c["delta"] > 0 and c["verdict"] != "not-applicable" for c in claims)


def profile(ax, scenario: dict[str, Any], claims: list[dict[str, Any]]) -> None:
    """ε(δ): claimed points, the exact curve (finite outputs), the empirical bounds."""
    profile_points = scenario.get("exact_profile")
    if profile_points:
        deltas = np.array([pt["delta"] for pt in profile_points])
        curve = np.array([float(pt["epsilon"]) for pt in profile_points])
        finite = np.isfinite(curve)
        if finite.any():
            ax.plot(deltas[finite], curve[finite], color=BLUE, label="exact eps(delta)")
        else:
            ax.plot([], [], color=BLUE, label="exact eps(delta): infinite at every delta shown")
    bounds = [b for b in scenario["estimate"]["bounds"] if b["delta"] > 0]
    if bounds:
        ax.plot([b["delta"] for b in bounds], [b["epsilon_lower"] for b in bounds], ">", color=GREEN,
                label="eps_lower(delta)")
    for c in claims:
        v = _finite(c["epsilon_claim"])
        if v is not None and c["delta"] > 0:
            ax.plot(c["delta"], v, "s", color=RED if c["finding"].startswith("refuted") else "black", ms=6,
                    label=f"claim {c['claim_id']}")
    ax.set_xscale("log")
    ys = [v for line in ax.get_lines() for v in np.asarray(line.get_ydata(), dtype=float) if v > 0]
    if ys and max(ys) / min(ys) > 50:
        ax.set_yscale("log")
    ax.set_xlabel("delta", fontsize=8)
    ax.set_ylabel("epsilon", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    ax.set_title("Privacy profile", fontsize=9)


def sweep(ax, sweep_payload: dict[str, Any]) -> None:
    """ε_claim(n), ε_exact(n), ε_lower(n) on log-log axes against the paper's 1/n."""
    recs = sweep_payload["records"]
    ids = sorted({r["claim_id"] for r in recs})
    colours = [RED, "black", ORANGE, "purple"]
    for i, cid in enumerate(ids):
        rows = sorted((r for r in recs if r["claim_id"] == cid), key=lambda r: r["n"])
        ax.plot([r["n"] for r in rows], [r["epsilon_claim"] for r in rows], "s-", color=colours[i % 4], ms=4,
                label=f"claim {cid}")
    rows = sorted({r["n"]: r for r in recs}.values(), key=lambda r: r["n"])
    ns = np.array([r["n"] for r in rows], dtype=float)
    ax.plot(ns, [r["epsilon_exact"] for r in rows], "o-", color=BLUE, ms=4, label="eps_exact")
    ax.plot(ns, [max(r["epsilon_lower"], 1e-12) for r in rows], ">-", color=GREEN, ms=4, label="eps_lower")
    ref = rows[0]["epsilon_exact"] * ns[0] / ns
    ax.plot(ns, ref, ":", color=GREY, label="rate 1/n")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (dataset size)", fontsize=8)
    ax.set_ylabel("epsilon", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6.5)
    ax.set_title(f"Rates: {sweep_payload['family']}", fontsize=9)

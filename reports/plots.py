"""The report's figures, each drawn from saved records (no re-sampling) and returned as PNG bytes
with its size in inches.  A figure is drawn only where it says something (the callers decide);
every line is told apart by colour, line style, marker and label, and ticks read 1e6, 2e6."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from PIL import Image
from scipy.stats import norm

from dpaudit.reports.text import fmt

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

RED, GREEN, GREY, BLUE, ORANGE = "#c0392b", "#1e8449", "#7f8c8d", "#1f4e79", "#d68910"
COLOURS = ("#1f4e79", "#d68910", "#1e8449", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b7950b")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<")
DPI = 150
WIDTH = 7.0  # inches: within the text frame's width (7.008 in), so a figure is never scaled down
MIN_POINTS = 7  # the smallest text of a figure as printed (the report's smallest text, as its tables')
MIN_LOOKS = 3  # a convergence plot needs at least this many looks to show a trend
STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans", "font.size": MIN_POINTS, "axes.titlesize": 8, "axes.titleweight": "bold",
    "axes.labelsize": MIN_POINTS, "xtick.labelsize": MIN_POINTS, "ytick.labelsize": MIN_POINTS,
    "legend.fontsize": MIN_POINTS, "axes.unicode_minus": False}
Figure = tuple[bytes, float, float]


def _finite(v: Any) -> float | None:
    if v is None or isinstance(v, str):
        return None
    return float(v) if math.isfinite(v) else None


def tick(value: float, _pos: Any = None) -> str:
    """A readable tick label: 0.5, 20, 1e6, 2.5e-3 (never 1000000 or 1e+06)."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e4:
        short = f"{value:.3g}"
        return f"{value:.0f}" if "e" in short else short
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def style(i: int) -> dict[str, Any]:
    """The i-th line's colour, line style and marker: distinct for the first 32 lines of a plot."""
    return {"color": COLOURS[i % len(COLOURS)], "ls": LINESTYLES[(i // len(COLOURS)) % len(LINESTYLES)],
            "marker": MARKERS[(i + i // len(COLOURS)) % len(MARKERS)]}


def _axis(axis: Any, log: bool, decades: float = 9.0, ticks: int = 8) -> None:
    """Readable ticks: on a log axis of up to three decades also 2 and 5 times each power of ten;
    at most about ``ticks`` labels, so they never run into each other."""
    if log:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,),
                                          numticks=ticks))
        axis.set_minor_formatter(NullFormatter())
    else:
        axis.set_major_locator(MaxNLocator(6))
    axis.set_major_formatter(FuncFormatter(tick))


def _zero_at(ax: Any, which: str, floor: float, top: float) -> float:
    """Where ε = 0 is drawn on a log ``which`` ("x" or "y") axis spanning [``floor``, ``top``]: at a
    tick labelled "0" beyond a break (two slashes on the axis and a dotted line across the plot)
    left of (below) the positive values, never silently at the axis' edge.  Returns its position."""
    zero = floor / 4
    low = zero / 1.8
    cut = math.sqrt(zero * floor)
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.set_xlim if which == "x" else ax.set_ylim)(low, top)
    ticks = LogLocator(base=10, subs=(1.0, 2.0, 5.0) if top / floor <= 1e3 else (1.0,), numticks=6)
    shown = [t for t in ticks.tick_values(floor, top) if floor <= t <= top] + [zero]
    axis.set_major_locator(FixedLocator(shown))
    axis.set_minor_locator(FixedLocator([]))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: "0" if math.isclose(v, zero) else tick(v)))
    line = ax.axvline if which == "x" else ax.axhline
    line(cut, color=GREY, lw=0.6, ls=":")
    for shift in (0.88, 1.12):
        at = [cut * shift / 1.06, cut * shift * 1.06]
        if which == "x":
            ax.plot(at, [-0.025, 0.025], transform=ax.get_xaxis_transform(), color="black", lw=0.8, clip_on=False)
        else:
            ax.plot([-0.025, 0.025], at, transform=ax.get_yaxis_transform(), color="black", lw=0.8, clip_on=False)
    return zero


def _room_for_labels(fig: plt.Figure, ax: Any) -> None:
    """Move the axes' left edge so that its widest y tick label, as drawn, fits the figure (a long
    "scenario: claim id" at the report's smallest text never runs off the page)."""
    # Measured, not drawn: a label's width is its text's extent at the figure's dpi, whatever its
    # position (a full draw here cost as much as the figure's own, a third of a chain's time).
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # matplotlib.use("Agg") above: pyplot's figures draw on Agg
    renderer = canvas.get_renderer()
    widest = max((t.get_window_extent(renderer).width for t in ax.get_yticklabels()), default=0.0) / fig.dpi
    left = min(0.62, (widest + 0.2) / fig.get_figwidth())  # 0.2 in: the ticks, their pad and a margin
    box = ax.get_position()
    ax.set_position((left, box.y0, 0.98 - left, box.height))


def png(fig: plt.Figure, width: float, height: float) -> Figure:
    """The figure as a palette PNG: plots have few colours, and 128 of them keep anti-aliased edges
    while the file is about a third of the RGB one (the report embeds a dozen figures)."""
    fig.set_dpi(DPI)
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # matplotlib.use("Agg") above: pyplot's figures draw on Agg
    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[..., :3]
    plt.close(fig)
    image = Image.fromarray(rgb).quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), width, height


def looks(scenario: dict[str, Any]) -> int:
    return len(scenario["estimate"].get("convergence") or [])


Scale = tuple[bool, float, float]


def chain_scale(rows: Sequence[tuple[str, dict[str, Any]]]) -> Scale:
    """(log axis, left end, right end) of the chain's epsilon axis over ``rows``: shared by every
    figure a long chain is split into, so their rows compare by eye.  A linear axis starts at 0 unless
    every value is positive and they cluster (their spread under a third of the largest, as the classic
    mechanisms' bounds near their claim of 1): then it spans the values only, so a lower bound 0.7 %
    below its claim is a marker's width apart from it, not drawn on top of it (the ticks say where the
    axis starts)."""
    values = [v for _, c in rows for v in (_finite(c["epsilon_lower"]), _finite(c["epsilon_exact"]),
                                           _finite(c["epsilon_claim"])) if v is not None]
    positive = [v for v in values if v > 0] or [1.0]
    log = max(positive) / min(positive) > 50
    if log:
        return True, min(positive) / 3, max(positive) * 3
    low, high = min(positive), max(positive)
    if len(positive) < len(values) or high - low >= high / 3:
        return False, 0.0, high * 1.15
    pad = max(0.15 * (high - low), 0.02 * high)
    return False, max(0.0, low - pad), high + 2 * pad


def chain(rows: Sequence[tuple[str, dict[str, Any]]], scale: Scale | None = None) -> Figure:
    """The chain figure (:func:`chain_figure`) as a PNG."""
    with plt.rc_context(STYLE):
        fig = chain_figure(rows, scale)
        return png(fig, fig.get_figwidth(), fig.get_figheight())


def chain_figure(rows: Sequence[tuple[str, dict[str, Any]]], scale: Scale | None = None) -> plt.Figure:
    """One row per claim check: eps_lower (the true epsilon lies right of it) <= eps_exact <= eps_claim.
    On a log axis a value of 0 sits at the "0" tick beyond the axis' break (:func:`_zero_at`).  The
    exact value is a ring, so a lower bound that meets it (a tight audit) shows inside it."""
    log, floor, top = scale or chain_scale(rows)
    height = 0.75 + 0.17 * len(rows)
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(WIDTH, height))
        ax = fig.add_axes((0.4, 0.5 / height, 0.58, 1 - 0.78 / height))
        zero = _zero_at(ax, "x", floor, top) if log and _has_zero(rows) else floor

        def at(value: Any) -> float:
            return (float(value) if float(value) > 0 else zero) if log else float(value)

        # One artist per kind of mark (not one per row): a 40-row chain draws in a fraction of the time.
        for refuted, colour in ((False, GREEN), (True, RED)):
            ys = [y for y, (_, c) in enumerate(rows)
                  if c["finding"].startswith("refuted") == refuted and _finite(c["epsilon_lower"]) is not None]
            starts = [at(rows[y][1]["epsilon_lower"]) for y in ys]
            if ys:
                ax.hlines(ys, starts, top, colors=colour, lw=5, alpha=0.22)
                ax.plot(starts, ys, marker=">", color=colour, ms=6, ls="none")
        exact = [(at(c["epsilon_exact"]), y) for y, (_, c) in enumerate(rows)
                 if _finite(c["epsilon_exact"]) is not None]
        if exact:
            ax.plot(*zip(*exact, strict=True), marker="o", color=BLUE, mfc="none", mew=1.4, ms=6.5, ls="none")
        claims = [(at(c["epsilon_claim"]), y) for y, (_, c) in enumerate(rows)
                  if _finite(c["epsilon_claim"]) is not None]
        if claims:
            ax.vlines([x for x, _ in claims], [y - 0.32 for _, y in claims], [y + 0.32 for _, y in claims],
                      colors="black", lw=1.8)
        for y, (_, c) in enumerate(rows):
            if c["epsilon_exact"] == "inf":
                ax.annotate("exact = inf", (top, y), xytext=(-3, 0), textcoords="offset points", ha="right",
                            va="center", color=BLUE,  # in its own row, over its bar's end
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.9})
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([label for label, _ in rows])
        for label, (_, c) in zip(ax.get_yticklabels(), rows, strict=True):
            label.set_color(RED if c["finding"].startswith("refuted") else "black")
        ax.set_ylim(len(rows) - 0.5, -0.5)
        _room_for_labels(fig, ax)
        if not log:
            ax.set_xlim(floor, top)
            _axis(ax.xaxis, log)
        elif zero == floor:
            ax.set_xscale("log")
            ax.set_xlim(floor, top)
            _axis(ax.xaxis, log, math.log10(top / floor))
        ax.set_xlabel("epsilon")
        handles = [ax.plot([], [], marker=">", color=GREEN, ls="none", label="eps_lower (true eps is right of it)")[0],
                   ax.plot([], [], marker="o", color=BLUE, mfc="none", mew=1.4, ls="none",
                           label="eps_exact (white box)")[0],
                   ax.plot([], [], marker="|", color="black", ls="none", ms=9, mew=1.8, label="eps_claim")[0],
                   ax.plot([], [], marker=">", color=RED, ls="none", label="refuted claim")[0]]
        fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.01, 1 - 0.26 / height), ncol=4,
                   frameon=False, borderaxespad=0.2)
        return fig


def _has_zero(rows: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    return any(_finite(c[k]) == 0 for _, c in rows for k in ("epsilon_lower", "epsilon_exact", "epsilon_claim"))


def convergence(scenarios: Sequence[dict[str, Any]]) -> Figure:
    """eps_lower at the first delta against the estimation samples, one line per scenario (each with
    at least ``MIN_LOOKS`` looks), with the exact epsilon of the pair where it is known.  On a log
    y axis a look whose eps_lower is 0 sits at the "0" tick beyond the axis' break (:func:`_zero_at`)."""
    height = max(2.3, 0.5 + 0.14 * len(scenarios))  # the legend, one line per scenario, fits beside the plot
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(WIDTH, height))
        ax = fig.add_axes((0.08, 0.44 / height, 0.56, 1 - 0.72 / height))
        curves = [tuple(zip(*sc["estimate"]["convergence"], strict=True)) for sc in scenarios]
        ns = [x for n, _ in curves for x in n]
        ys = [e for _, eps in curves for e in eps if e > 0]
        log_x = max(ns) / min(ns) >= 10
        log_y = bool(ys) and max(ys) / min(ys) > 10
        zero = None
        if log_y and any(e <= 0 for _, eps in curves for e in eps):
            zero = _zero_at(ax, "y", min(ys) / 1.5, max(ys) * 1.5)
        for i, (sc, (n, eps)) in enumerate(zip(scenarios, curves, strict=True)):
            shown = [e if e > 0 or zero is None else zero for e in eps]
            ax.plot(n, shown, ms=3.5, lw=1.1, label=sc["scenario"], **style(i))
        if log_x:
            ax.set_xscale("log")
        _axis(ax.xaxis, log_x, math.log10(max(ns) / min(ns)))
        if zero is None:
            if log_y:
                ax.set_yscale("log")
            _axis(ax.yaxis, log_y, math.log10(max(ys) / min(ys)) if ys else 9.0)
        ax.set_xlabel("estimation samples per side")
        ax.set_ylabel("eps_lower at the first delta")
        ax.set_title("Convergence: eps_lower as the samples grow")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, ncol=1)
        return png(fig, WIDTH, height)


def tradeoff_meaningful(scenario: dict[str, Any], claims: Sequence[dict[str, Any]] = ()) -> bool:
    """The f-DP panel says something beyond the chain where the output is continuous (no finite
    exact distribution: a Gaussian trade-off curve cannot describe a discrete mechanism), the tests
    give at least three trade-off points, a mu-GDP fit is consistent with them with mu's lower
    confidence limit above 0 (a curve not told apart from the diagonal shows nothing), and a claim
    on the pair is refuted (the panel then shows the claimed curve against the tests and the fit)."""
    gdp = scenario["estimate"].get("gdp") or {}
    return (not scenario.get("distributions") and len(scenario["estimate"].get("tradeoff") or []) >= 3
            and bool(gdp.get("consistent")) and gdp.get("points", 0) >= 3 and (gdp.get("lower") or 0) > 0
            and any(str(c.get("finding", "")).startswith("refuted") for c in claims))


def tradeoff_tests(points: Sequence[dict[str, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(FPR upper, TPR lower) of each trade-off test and of its complement (the test that says D'
    where it said D): the corner of its confidence box that a claim must allow."""
    fpr = np.array([p["fpr_upper"] for p in points] + [p["fnr_upper"] for p in points])
    tpr = np.array([1 - p["fnr_upper"] for p in points] + [1 - p["fpr_upper"] for p in points])
    keep = (fpr > 0) & (tpr > 0) & (fpr < 1)
    return fpr[keep], tpr[keep]


def refuting(fpr: np.ndarray, tpr: np.ndarray) -> np.ndarray:
    """The tests (indices into ``fpr``, ``tpr``: confidence-box corners) that refute an (eps, delta) claim
    no other test refutes.  A test refutes (eps, delta), eps >= 0 and delta >= 0, when
    TPR - e^eps FPR > delta: for each slope s = e^eps >= 1 the test with the largest TPR - s FPR refutes
    every claim any test does, so a test is needed only where it is that largest, strictly and above 0,
    for some s in [1, inf).  TPR - s FPR is linear in s: the maxima change only where two tests' lines
    cross (s = their TPR gap over their FPR gap) or a line crosses 0 (s = TPR / FPR), so those points
    and s = 1 are the only s to look at (the rest of [1, inf) lies between them)."""
    _, first = np.unique(np.column_stack([fpr, tpr]), axis=0, return_index=True)
    if first.size < 2:  # (a test drawn twice is one test)
        return np.sort(first)
    fpr, tpr = fpr[first], tpr[first]
    with np.errstate(divide="ignore", invalid="ignore"):
        crossings = (tpr[:, None] - tpr[None, :]) / (fpr[:, None] - fpr[None, :])
    s = np.concatenate([[1.0], crossings[np.isfinite(crossings)], tpr / fpr])
    s = np.unique(s[s >= 1.0])
    s = np.concatenate([s, (s[:-1] + s[1:]) / 2])  # a unique maximum between two crossings shows there
    value = tpr[:, None] - s[None, :] * fpr[:, None]  # (tests, slopes)
    top = np.argsort(value, axis=0)[-2:]  # the best and the runner-up at each slope
    best, second = value[top[-1], np.arange(s.size)], value[top[-2], np.arange(s.size)]
    alone = best > np.maximum(second, 0.0)
    return np.sort(first[np.unique(top[-1][alone])])


def _spaced(points: np.ndarray, width: float) -> np.ndarray:
    """Indices of ``points`` (display positions in printed points) drawn as markers ``width`` wide: left
    to right, a point within ``width`` of one already drawn is shown by it (its position lies under
    that marker), so no two markers overlap."""
    drawn: list[int] = []
    for i in np.argsort(points[:, 0], kind="stable"):
        if all(np.hypot(*(points[i] - points[j])) >= width for j in drawn):
            drawn.append(int(i))
    return np.array(sorted(drawn), dtype=int)


TEST_MARKER = 2.5  # points: the trade-off tests' marker width


def tradeoff_figure(items: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]) -> plt.Figure:
    """The f-DP view of the trade-off tests, as the privacy loss each certifies: a test with
    false-positive rate at most FPR and power at least TPR (its confidence box's corner) violates
    an (eps, delta) claim exactly when TPR > e^eps FPR + delta, i.e. when log(TPR / FPR) lies above
    the claim's curve log(e^eps + delta / FPR); the fitted Gaussian curve G_mu gives
    log(Phi(Phi^-1(FPR) + mu) / FPR).  Plotted against FPR on a log axis, where refutations live.
    Only the tests that refute a claim no other test refutes are drawn (:func:`refuting`: the rest
    add no refutation), each marker apart from the others (:func:`_spaced`)."""
    per_row = 2  # two panels a row: each legend, at the report's smallest text, fits its panel
    rows = math.ceil(len(items) / per_row)
    height = 2.6 * rows
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, per_row, figsize=(WIDTH, height), squeeze=False)
        fig.subplots_adjust(left=0.07, right=0.98, top=1 - 0.3 / height, bottom=0.45 / height, wspace=0.3,
                            hspace=0.4)
        for ax in axes.flat[len(items):]:
            ax.set_axis_off()
        for ax, (sc, claims) in zip(axes.flat, items, strict=False):
            _tradeoff_panel(fig, ax, sc, claims)
        return fig


def _tradeoff_panel(fig: plt.Figure, ax: Any, sc: dict[str, Any], claims: list[dict[str, Any]]) -> None:
    fpr, tpr = tradeoff_tests(sc["estimate"]["tradeoff"])
    low = max(float(fpr.min()) / 2 if fpr.size else 1e-6, 1e-9)
    grid = np.logspace(math.log10(low), 0, 200)
    shown = [c for c in claims if _finite(c["epsilon_claim"]) is not None and c["finding"] != "not-applicable"]
    for i, c in enumerate(shown[:3]):
        curve = np.log(math.exp(min(float(c["epsilon_claim"]), 700)) + c["delta"] / grid)
        ax.plot(grid, curve, color=RED if c["finding"].startswith("refuted") else "black", lw=1,
                ls=LINESTYLES[i], label=f"{c['claim_id']} (eps {fmt(c['epsilon_claim'])})".replace("$", r"\$"))
    mu = sc["estimate"]["gdp"]["mu"]
    ax.plot(grid, np.log(norm.cdf(norm.ppf(grid) + mu) / grid), color=BLUE, lw=1, ls=(0, (1, 1)),
            label=f"G_mu, mu = {fmt(mu)} (fit)")
    needed = refuting(fpr, tpr)
    loss = np.log(tpr / fpr)
    top = max(ax.get_ylim()[1], float(loss[needed].max()) if needed.size else 0.0)
    ax.set_xscale("log")
    _axis(ax.xaxis, True, math.log10(1 / low), ticks=4)
    ax.set_xlim(low, 1)
    ax.set_ylim(0, top * 1.9)  # headroom: the legend (up to seven lines) sits above the curves
    at = ax.transData.transform(np.column_stack([fpr[needed], loss[needed]])) / fig.dpi * 72
    drawn = needed[_spaced(at, TEST_MARKER)]
    hidden = needed.size - drawn.size
    ax.plot(fpr[drawn], loss[drawn], "o", color=GREEN, ms=TEST_MARKER, mew=0, ls="none",
            label=f"tests (box corners): the {needed.size} of {fpr.size}\nthat refute what no other does"
            + (f"\n({hidden} within a marker of another)" if hidden else ""))
    ax.set_title(sc["scenario"])
    ax.set_xlabel("false-positive rate (upper)")
    ax.set_ylabel("log(TPR / FPR)")
    ax.legend(loc="upper right", frameon=False)


def tradeoff(items: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Figure:
    """:func:`tradeoff_figure` as a PNG, with its size in inches."""
    fig = tradeoff_figure(items)
    return png(fig, WIDTH, fig.get_figheight())


def sweep(sweep_payload: dict[str, Any]) -> Figure:
    """eps_claim(n), eps_exact(n), eps_lower(n) on log-log axes against the paper's 1/n."""
    recs = sweep_payload["records"]
    ids = sorted({r["claim_id"] for r in recs})
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(WIDTH, 3.2))
        ax = fig.add_axes((0.09, 0.14, 0.58, 0.78))
        for i, cid in enumerate(ids):
            rows = sorted((r for r in recs if r["claim_id"] == cid), key=lambda r: r["n"])
            ax.plot([r["n"] for r in rows], [r["epsilon_claim"] for r in rows], ms=3.5, label=f"claim {cid}",
                    **style(i + 3))
        rows = sorted({r["n"]: r for r in recs}.values(), key=lambda r: r["n"])
        ns = np.array([r["n"] for r in rows], dtype=float)
        ax.plot(ns, [r["epsilon_exact"] for r in rows], ms=3.5, label="eps_exact", **style(0))
        ax.plot(ns, [max(r["epsilon_lower"], 1e-12) for r in rows], ms=3.5, label="eps_lower", **style(1))
        ax.plot(ns, rows[0]["epsilon_exact"] * ns[0] / ns, color=GREY, ls=":", label="rate 1/n")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _axis(ax.xaxis, True)
        _axis(ax.yaxis, True)
        ax.set_xlabel("n (dataset size)")
        ax.set_ylabel("epsilon")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
        ax.set_title(f"Rates: {sweep_payload['family']}")
        return png(fig, WIDTH, 3.2)

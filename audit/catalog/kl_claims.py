"""The KL-regularization paper's entries of the claim registry: one per claim id its mechanisms emit,
with the document, the statement, the premises and the status (the errata among them with their
witness and corrected bound)."""

from __future__ import annotations

from dpaudit.core import Claim, Document

# The two documents other families cite too (classic, policy optimisation, alignment): defined once
# here, so every family cites them in the same words (the registry refuses one key cited two ways).
KL_PAPER = Document(key="KL paper",
                    reference="Y. Zhang, L. Shi, K. Panaganti, J. Ziani and A. Wierman, KL-regularization Itself "
                              "is Differentially Private in Bandits and RLHF, arXiv preprint arXiv:2505.18407, 2025")
DPAUDIT = Document(key="dpaudit",
                   reference="dpaudit's own corrected statements and reference curves: each registry entry states "
                             "the bound and its proof (python -m dpaudit list NAME)")

DOCUMENTS = (KL_PAPER, DPAUDIT)

_MAB = ("rewards in [0, R]",)
_RLHF = ("‖θ_MLE(D)‖, ‖θ_MLE(D′)‖ and ‖θ*‖ ≤ B", "the unconstrained MLE exists (no separation)")
_KL_BASE = ("add-remove", "swap", "label-flip")  # the §4.4 extensions take the base claim's relation

CLAIMS = (
    # --- multi-armed bandit, eq. (8) ---
    Claim(id="kl-mab/thm1-pure", document="KL paper", where="Theorem 1, eq. (9)",
          statement="ε0(D) = (4R/(N_min − 1) + β0/(N_min − 1)^{3/2})/η, N_min = min_a N(a; D)",
          relations=("add-remove",), status="proven",
          reason="Re-proved by dpaudit: the exact supremum over neighbours, rewards and "
                 "π0, ε⋆(D) = (R/N_min + β0(1/√(N_min − 1) − 1/√N_min))/η, is below ε0(D)/2; the largest ratio "
                 "over 4000 random logs is 0.331.",
          premises=("min_a N(a; D) > 1", *_MAB)),
    Claim(id="kl-mab/thm1-swap", document="KL paper",
          where="Proposition 1 (first part) applied to Theorem 1, eq. (9)",
          statement="swap neighbours: 2ε0(D), ε0 of eq. (9)",
          relations=("swap",), status="proven",
          reason="A swap changes at most two arms, each utility by at most η ε⋆(D) (the exact supremum "
                 "of kl-mab/thm1-pure), so the pair loss is at most 2ε⋆(D) < ε0(D); the largest ratio found is 0.289.",
          premises=("min_a N(a; D) > 1", *_MAB)),
    Claim(id="kl-mab/thm1-approx", document="KL paper", where="Theorem 1 (approximate part), eq. (12)",
          statement="for any N0 > 0: ε = (4R/N0 + β0/N0^{3/2})/η, "
                    "δ = |A| e^ε exp((β0/η)(1/√(max_a N(a; D)) − 1/√N0))",
          relations=("add-remove",), status="refuted",
          reason="Eq. (12) ignores a poorly covered arm with a high empirical reward or a large π0. Witness "
                 "(row 3): arms b = {1} and c = 3000 rewards 0.067345, remove (b, 1), "
                 "β0 = 0.95, η = 0.001, N0 = 1000: claimed (4.03, 3.4e-4), exact δ(4.03) = 0.50.",
          premises=("N0 > 0", *_MAB)),
    Claim(id="kl-mab/cor1", document="KL paper", where="Corollary 1 (N0 = max_a N(a; D)/k)",
          statement="ε = (4kR + k^{3/2}β0/√N_max)/(η N_max), "
                    "δ = |A| exp(4kR/N_max − (β0/η)((√k − 1)/√N_max − k^{3/2}/N_max^{3/2})) as printed",
          relations=("add-remove",), status="refuted",
          reason="Theorem 1's approximate part at N0 = N_max/k, and its printed δ also lacks 1/η on 4kR/N_max. "
                 "Witnesses: row 3 (k = 3) claims (4.03, 6.3e-6), exact δ = 0.50; "
                 "row 1 (k = 10⁴) claims (13.57, 2.4e-10), exact δ = 1.00.",
          premises=("k > 0", *_MAB)),
    Claim(id="kl-mab/thm1-approx-corrected", document="dpaudit",
          where="corrected approximate statement of the KL paper's Theorem 1",
          statement="for N0 ≥ 1: ε_c = (R/(N0 + 1) + β0(1/√N0 − 1/√(N0 + 1)))/η, δ_c = max over arms b with "
                    "N(b; D) ≤ N0 of w_b/(w_b + Σ_{a≠b} π0(a)e^{u(a;D)/η}), w_b = π0(b)e^{(R − β0/√(N(b;D) + 1))/η}",
          relations=("add-remove",), status="corrected",
          reason="Proof: a neighbour changes one arm b; if N(b; D) ≥ N0 + 1 the loss is at most |Δu_b|/η ≤ ε_c, "
                 "otherwise δ_pair(ε) ≤ |π̃(b; D) − π̃(b; D′)| and both are at most the ratio (b's weight is at "
                 "most w_b, the others do not change); no exceedance in 34,276 random "
                 "pairs. Vacuous on its fixtures: without coverage δ_c ≈ 1 (1.0 and 0.50 on the witness rows) whenever "
                 "R ≳ β0(1 − N_max^{-1/2}); it says something only when every arm has more than N0 records (δ_c = 0).",
          premises=("N0 ≥ 1", *_MAB), vacuous=True),
    # --- linear contextual bandit, eq. (10) ---
    Claim(id="kl-linear/thm2-pure", document="KL paper", where="Theorem 2 (pure part)",
          statement="ε0(D) = (2(1 + √(nd/(λ_min − 1)))R/√(λ_min − 1) + β0/(λ_min − 1))/(η√λ_min), "
                    "λ_min = λ_min(Σ_D)",
          relations=("add-remove",), status="proven",
          reason="Holds (the proof's last display drops Lemma 1's factor 2; the statement keeps it): the largest "
                 "ε_sup/ε0 on random logs is 0.765, and on the n ≤ 1, large-λ family the ratio tends to 1 (0.985 at "
                 "λ = 100), so it is asymptotically tight.",
          premises=("λ_min(Σ_D) > 1", "‖φ‖ ≤ 1", "rewards in [0, R]")),
    Claim(id="kl-linear/thm2-approx", document="KL paper", where="Theorem 2 (approximate part), eq. (24)",
          statement="for any λ0 > 0: ε = (the bracket of ε0)/(η√λ0), "
                    "δ = |A| e^ε exp((β0/η)(min_a ‖φ(x, a)‖_{Σ_D^{-1}} − 1/√λ0))",
          relations=("add-remove",), status="refuted",
          reason="Eq. (24) has the flaw of eq. (12). Witness: d = 1, λ = 1, 99 "
                 "points φ = 1 of which ten have reward 1, actions φ ∈ {1, 0}, uniform π0, β0 = 1, η = 5e-4, remove "
                 "a reward-1 point: at λ0 = 1.6e5 claimed (2.06, 0.106), exact δ = 0.50.",
          premises=("λ0 > 0", "λ_min(Σ_D) > 1", "‖φ‖ ≤ 1", "rewards in [0, R]")),
    Claim(id="kl-linear/cor2-pure", document="KL paper", where="Corollary 2 (pure part)",
          statement="ε0 = (k1 d/(nη))(2R(1 + √k1·d) + β0√(k1 d/n))",
          relations=("add-remove",), status="proven",
          reason="Follows from Theorem 2's pure part under the coverage assumption.",
          premises=("λ_min(Σ_D) ≥ 1 + n/(k1 d)", "k1 > 0", "n ≥ 1", "‖φ‖ ≤ 1", "rewards in [0, R]")),
    Claim(id="kl-linear/cor2-approx", document="KL paper", where="Corollary 2 (approximate part)",
          statement="for c ∈ (0, 1): ε = cε0, δ = |A| e^ε exp((β0/η)√(d/n)(1 − √(c k1)))",
          relations=("add-remove",), status="refuted",
          reason="Does not follow from Theorem 2 (ε = cε0 needs λ0^{-1/2} = c√(k1 d/n), not √(c k1 d/n)) and "
                 "inherits its refuted approximate part. Witness (dpaudit's exact "
                 "pair loss): d = 2, λ = 1, 1000 reward-0 points on e1 and two reward-1 points on e2, actions "
                 "{e2, 0}, β0 = 100, η = 1, π0 with π̃(e2; D) = 1/2, remove an e2 point, k1 = 250.5 (smallest "
                 "admissible), c = 0.05: claimed (3.40, 7.1e-4), exact δ(3.40) = 0.50.",
          premises=("λ_min(Σ_D) ≥ 1 + n/(k1 d)", "c ∈ (0, 1)", "‖φ‖ ≤ 1", "rewards in [0, R]")),
    # --- RLHF with the Bradley–Terry MLE, eq. (11) ---
    Claim(id="kl-rlhf/thm3-label", document="KL paper", where="Theorem 3 (pure label DP)",
          statement="ε0′ = (2 + 2e^{2B})/(η(λ_min − λ)), λ_min = λ_min(Σ_D)",
          relations=("label-flip",), status="refuted",
          reason="Loses two factors of 2 (eq. (30) ignores ‖z‖ ≤ 2; Lemma 1's attained factor 2 is omitted). "
                 "Witness: d = 1, n = 10 comparisons with z = 2, labels k = 5 → 4, "
                 "actions ±1, λ = 1, uniform π0, η = 0.1, B = 0.203: exact ε 3.38 vs claimed 1.25 "
                 "(ε_sup/ε0′ = 3.24; 3.96 at n = 200).",
          premises=("λ_min(Σ_D) > λ", *_RLHF)),
    Claim(id="kl-rlhf/thm3-label-approx", document="KL paper", where="Theorem 3 (approximate label DP)",
          statement="for λ0 > λ: ε′ = (2 + 2e^{2B})√λ_min/(η√λ0(λ_min − λ)), "
                    "δ′ = |A| e^{ε′} exp((β0/η)(min_a ‖φ(x, a)‖_{Σ_D^{-1}} − 1/√λ0))",
          relations=("label-flip",), status="refuted",
          reason="Witness: d = 1, actions φ ∈ {1, 0}, 100 comparisons with z = 2 "
                 "of which 57 are labelled 1, β0 = 3, η = 2e-3, π0 with π̃(a1; D) = 1/2, flip one label: at "
                 "λ0 = 10⁴ claimed (1.16, 2e-6), exact δ = 0.4999.",
          premises=("λ0 > λ", "λ_min(Σ_D) > λ", *_RLHF)),
    Claim(id="kl-rlhf/cor3-label", document="KL paper", where="Corollary 3 (pure label DP)",
          statement="ε0′ = (2 + 2e^{2B}) k1 d/(nη)",
          relations=("label-flip",), status="refuted",
          reason="Theorem 3 under a coverage assumption; at the smallest admissible k1 it equals Theorem 3's ε0′ and "
                 "fails with it. Witness: the canonical family (d = 1, z = 2, n = 10, "
                 "k 5 → 4, λ_min − λ = 40, k1 = 1/4, B = 0.203): ε_sup 0.405 vs claimed 0.125 at η = 1 (×3.24).",
          premises=("λ_min(Σ_D) ≥ λ + n/(k1 d)", "k1 > 0", *_RLHF)),
    Claim(id="kl-rlhf/thm3-label-corrected", document="dpaudit",
          where="corrected label bound of the KL paper's Theorem 3",
          statement="ε′_label(D) = (2/(η γ_B))·min(1, 2/√m)/√m, γ_B = 1/(2 + e^{2B} + e^{−2B}), "
                    "m = λ_min(Σ_D) − λ",
          relations=("label-flip",), status="corrected",
          reason="Proof: θ_D′ − θ_D = ±H̄⁻¹z_i with H̄ ⪰ γ_B M_D (M_D = Σ z_i z_iᵀ), leverage "
                 "‖z‖_{M⁻¹} ≤ min(1, 2/√m), and ε ≤ (max Δu − min Δu)/η; never exceeded, tight on the canonical "
                 "family (ratio 0.97 at n = 10, 0.9999 at n = 200).",
          premises=("λ_min(Σ_D) > λ", *_RLHF)),
    Claim(id="kl-rlhf/thm4-addremove", document="KL paper", where="Theorem 4 (pure add/remove DP)",
          statement="ε0 = ((1 + e^{2B})√λ_min/(λ_min − λ) + 2β0/(λ_min − 1))/(η√λ_min)",
          relations=("add-remove",), status="refuted",
          reason="Omits Lemma 1's attained factor 2 and ‖z‖ ≤ 2. Witness: the "
                 "canonical family, n = 10, k = 5, add (z = 2, y = 0), λ = 1, β0 = 0.01, B = 0.091: ε_sup 0.182 vs "
                 "claimed 0.050 at η = 1 (×3.64; up to ×3.985 in random search).",
          premises=("λ_min(Σ_D) > max(1, λ)", *_RLHF)),
    Claim(id="kl-rlhf/thm4-addremove-approx", document="KL paper", where="Theorem 4 (approximate add/remove DP)",
          statement="for λ0 > λ: ε = ((1 + e^{2B})√λ_min/(λ_min − λ) + 2β0/(λ_min − 1))/(η√λ0), "
                    "δ = |A| e^ε exp((β0/η)(min_a ‖φ(x, a)‖_{Σ_D^{-1}} − 1/√λ0))",
          relations=("add-remove",), status="refuted",
          reason="Inherits the flaws of the pure part and of eq. (24). Witness (dpaudit's exact pair loss on the "
                 "approximate fixture): d = 1, actions φ ∈ {1, 0}, 100 "
                 "comparisons with z = 2 of which 57 are labelled 1, β0 = 3, η = 2e-3, π0 with π̃(a1; D) = 1/2, "
                 "remove a label-1 comparison, B = 0.141: at λ0 = 10⁴ claimed (0.66, 1.2e-6), exact δ = 0.48.",
          premises=("λ0 > λ", "λ_min(Σ_D) > max(1, λ)", *_RLHF)),
    Claim(id="kl-rlhf/thm4-addremove-corrected", document="dpaudit",
          where="corrected add/remove bound of the KL paper's Theorem 4",
          statement="ε_add/rm(D) = (1/η)[2(1 + e^{2B})·min(1, 2/√m)/√m + (β0/√λ_min(Σ_D))(1/√(1 − p_D) − 1)], "
                    "p_D = min(4/λ_min(Σ_D), 4/(4 + λ)), m = λ_min(Σ_D) − λ",
          relations=("add-remove",), status="corrected",
          reason="Proof: θ_L − θ_S = −(s(θ_Sᵀz_w) − y_w)H̄_L⁻¹z_w for L = S ∪ {w}, with "
                 "s(2B)/γ_B = 1 + e^{2B}, the leverage bound and Sherman–Morrison for the bonus; never exceeded, "
                 "tight on the canonical "
                 "family (ratio 0.91 at n = 10, 0.9999 at n = 200).",
          premises=("λ_min(Σ_D) > max(1, λ)", *_RLHF)),
    Claim(id="kl-rlhf/prop1-swap", document="KL paper",
          where="Proposition 1 (first part) applied to Theorem 4's pure add/remove ε0",
          statement="swap neighbours: 2ε0(D), ε0 of Theorem 4",
          relations=("swap",), status="refuted",
          reason="Proposition 1's first part (group privacy) is valid, but Theorem 4's ε0 is too small by up to 4, "
                 "so its double is too. Witness: a label flip is also a swap; on the "
                 "canonical family (k = n/2 → n/2 − 1) the exact ε_sup exceeds 2ε0 by ×3.24, ×3.80 and ×3.96 at "
                 "n = 10, 40 and 200.",
          premises=("λ_min(Σ_D) > max(1, λ)", *_RLHF)),
    Claim(id="kl-rlhf/prop1-swap-corrected", document="dpaudit",
          where="Proposition 1 (first part) applied to the corrected add/remove bound of the KL paper's Theorem 4",
          statement="swap neighbours: 2ε_add/rm(D), ε_add/rm of kl-rlhf/thm4-addremove-corrected, with B ≥ ‖θ_MLE‖ "
                    "on D, D′ and D ∪ {z′}; the smaller of its values on D and on D′",
          relations=("swap",), status="corrected",
          reason="Group privacy over the chain D → L = D ∪ {z′} → D′: the first step is an addition to D, covered by "
                 "ε_add/rm(D); the second a removal from L, covered by ε_add/rm(L) ≤ ε_add/rm(D) since M_L ⪰ M_D "
                 "(KL paper, Proposition 1 part 1: group privacy of size 2). On the canonical family "
                 "(label flip k = n/2 → n/2 − 1 as a swap) ε_sup/(2ε_add/rm) = 0.81, 0.95 and 0.99 at n = 10, 40 "
                 "and 200; never exceeded on random small swap pairs (dpaudit's exact pair loss).",
          premises=("λ_min(Σ_D) > max(1, λ)", *_RLHF)),
    # --- §4.4 extensions, over any KL policy ---
    Claim(id="kl/repeated-T", document="KL paper", where="§4.4 (repeated sampling, basic composition)",
          statement="T actions drawn from π̃(·; D): T·ε0, ε0 the base mechanism's pure claim",
          relations=_KL_BASE, status="proven",
          reason="Basic composition (Dwork & Roth 2014, Theorem 3.16); the exact loss of T draws is T·ε_pair "
                 "(the privacy loss of T independent draws adds up), so it is attained wherever the base claim is.",
          premises=("the base pure claim holds for the pair", "T independent draws from one policy")),
    Claim(id="kl/repeated-T-advanced", document="KL paper", where="§4.4 (repeated sampling, advanced composition)",
          statement="(√(2T log(1/δ′))·ε + Tε(e^ε − 1), Tδ + δ′) for any δ′ > 0",
          relations=_KL_BASE, status="proven",
          reason="Advanced composition (Dwork & Roth 2014, Theorem 3.20). The paper prints \"kδ\" where Tδ is meant; "
                 "dpaudit applies it to pure base claims (δ = 0), where both agree.",
          premises=("δ′ > 0", "the base claim holds for the pair", "T independent draws from one policy")),
    Claim(id="kl/inexact", document="KL paper", where="§4.4 (inexact policy optimisation)",
          statement="(ε + 2ε̂, δ) when D∞(π̂‖π̃) ≤ ε̂ and D∞(π̃‖π̂) ≤ ε̂ on both datasets",
          relations=_KL_BASE, status="proven",
          reason="Holds for pure base claims by the triangle inequality for D∞. For δ > 0 the printed δ is wrong: "
                 "the second parameter must be e^{ε̂}δ (kl/inexact-corrected).",
          premises=("δ = 0", "D∞ gap ≤ ε̂ in both orders on D and D′", "the base claim holds for the pair")),
    Claim(id="kl/inexact-corrected", document="dpaudit",
          where="corrected δ of the KL paper's §4.4 (inexact policy optimisation)",
          statement="(ε + 2ε̂, e^{ε̂}δ) when D∞(π̂‖π̃) ≤ ε̂ and D∞(π̃‖π̂) ≤ ε̂ on both datasets",
          relations=_KL_BASE, status="corrected",
          reason="Proof: P̂(S) ≤ e^{ε̂}P̃(S) ≤ e^{ε̂}(e^ε Q̃(S) + δ) "
                 "≤ e^{ε + 2ε̂}Q̂(S) + e^{ε̂}δ.",
          premises=("D∞ gap ≤ ε̂ in both orders on D and D′", "the base claim holds for the pair")),
)


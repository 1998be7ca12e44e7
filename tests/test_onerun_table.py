"""The one-run rows of the run's text table: a μ-GDP row shows the GDP reading in its number columns
(δ, the claim's μ as ε at δ, ``mu>=μ_lower``) and says what that reading is valid against.

The games are those of tests/test_onerun_wiring.py's config (200 canaries, Fixed(50, 50), an (1, 1e-5)
claim and a 1.5-GDP claim) with its leaky trainer (every guess right), one game each on the fixed
entropy stream tests/conftest.py pins; the assertions read the game's own numbers.
"""

from __future__ import annotations

from pathlib import Path

from dpaudit.onerun.curves import gdp_epsilon
from dpaudit.reports.text import compact_table, fmt, wide_table
from dpaudit.runs.config import load
from dpaudit.runs.onerun import onerun_scenario
from tests.test_onerun_wiring import PLUGIN, config


def records(path: Path) -> list[dict]:
    design, = load(path, [PLUGIN]).onerun
    return onerun_scenario(design, seed=0, confidence=0.95, registry={}).records()


def row(table: str, claim: str) -> list[str]:
    line, = [line for line in table.splitlines() if line.split()[:1] == [claim] or claim in line.split()[1:2]]
    return line.split()


def leaky(tmp_path: Path) -> Path:
    return config(tmp_path, attr="Leaky", params="{ m = 200 }")


def test_a_gdp_row_shows_the_gdp_reading_in_its_number_columns(tmp_path):
    recs = records(leaky(tmp_path))
    gdp_record, = [r for r in recs if r["claim_id"] == "user/gdp"]
    mu_lower = gdp_record["onerun"]["gdp_mu_lower"]["mu"]
    assert mu_lower > 1.5  # every guess right: the 1.5-GDP claim is rejected and larger μ with it
    table = compact_table(recs)
    cells = row(table, "user/gdp")
    # claim, delta, eps_claim, eps_lower, eps_exact, finding...: δ is the scenario's (ε, δ) claim's
    assert cells[1:5] == ["1e-05", fmt(gdp_epsilon(1.5, 1e-5)), f"mu>={fmt(mu_lower)}", "-"]
    said = " ".join(table.split())
    assert (f"GDP reading: mu_lower {fmt(mu_lower)} (every mu-GDP claim up to it rejected), which reads as eps "
            f"{fmt(gdp_epsilon(mu_lower, 1e-5))} at delta 1e-05") in said
    assert "valid against GDP claims only, not an (eps, delta) lower bound" in said
    eps_record, = [r for r in recs if r["claim_id"] == "user/claim"]  # the (ε, δ) row beside it: as before
    assert row(table, "user/claim")[1:4] == ["1e-05", "1", fmt(eps_record["epsilon_lower"])]
    wide = row(wide_table(recs), "user/gdp")
    assert wide[3:6] == ["1e-05", fmt(gdp_epsilon(1.5, 1e-5)), f"mu>={fmt(mu_lower)}"]


def test_a_gdp_only_scenario_reads_its_gdp_row_at_the_default_delta(tmp_path):
    path = leaky(tmp_path)
    text = path.read_text()
    start = text.index("[[scenario.claim]]\nepsilon")
    path.write_text(text[:start] + text[text.index("[[scenario.claim]]\ngdp_mu"):])
    recs = records(path)
    assert [r["claim_id"] for r in recs] == ["user/gdp"]
    cells = row(compact_table(recs), "user/gdp")
    assert cells[1] == "1e-05" and cells[2] == fmt(gdp_epsilon(1.5, 1e-5)) and cells[3].startswith("mu>=")

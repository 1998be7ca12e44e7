"""A one-run design names its catalog family itself; the engine keeps the design abstraction
(:mod:`dpaudit.onerun.design`), the catalog the papers' designs (:mod:`dpaudit.catalog.designs`).

No statistics: nothing here plays a game.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dpaudit import catalog
from dpaudit.catalog.onerun import family_of
from dpaudit.core import Guarantee, InputError
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.rules import Fixed
from dpaudit.runs.config import load
from tests.test_onerun_wiring import PLUGIN, config


def toy(claim_id: str = "dpsgd/accountant", **kw) -> CanaryDesign:
    """A design whose claim id looks like a family's (the old prefix guess would have filed it)."""
    return CanaryDesign(name="toy", mechanism=lambda data, rng: None, canaries=[0, 1, 2, 3],
                        scorer=lambda out, cans: out, rule=Fixed(1, 1),
                        claims=(Guarantee(epsilon=1.0, delta=1e-5, claim_id=claim_id),), **kw)


def test_a_design_of_no_family_is_filed_under_none_whatever_its_claim_ids_look_like():
    for claim_id in ("dpsgd/accountant", "po/dp-pg", "align/alg1", "opacus/pld-curve"):
        assert toy(claim_id).family is None and family_of(toy(claim_id)) is None


def test_a_design_is_filed_under_the_family_it_names():
    assert family_of(toy("dpsgd/accountant", family="alignment")) == "alignment"


@pytest.mark.parametrize("bad", ["", "   ", 3, ("dp-sgd",)])
def test_a_family_that_is_no_name_is_refused_naming_the_field(bad):
    with pytest.raises(InputError, match=r"family = .* is invalid: a catalog family's name"):
        toy(family=bad)


def test_a_users_config_design_has_no_family_even_with_a_family_like_claim_id(tmp_path: Path):
    path = config(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace('id = "user/claim"', 'id = "dpsgd/mine"'),
                    encoding="utf-8")
    (design,) = load(path, (PLUGIN,)).onerun
    assert "dpsgd/mine" in {getattr(c, "claim_id", "") for c in design.claims}
    assert design.family is None and family_of(design) is None


def test_the_default_suites_one_run_fixture_names_its_family():
    (fixture,) = catalog.onerun_suite("default")
    assert fixture.family == "policy-optimization" == family_of(fixture)
    assert fixture.family in {f.name for f in catalog.families()}


def test_the_papers_designs_live_in_the_catalog_and_the_engine_keeps_the_abstraction():
    # no old home, no shim (a checkout may keep the old folder's __pycache__: a namespace with no module)
    old = importlib.util.find_spec("dpaudit.onerun.designs")
    assert old is None or not any(any(Path(p).glob("*.py")) for p in old.submodule_search_locations or ())
    for module in ("alignment", "covariance", "dpsgd", "mle_dedicated", "opacus_sgd", "policy", "suite"):
        assert importlib.util.find_spec(f"dpaudit.catalog.designs.{module}") is not None, module
    assert CanaryDesign.__module__ == "dpaudit.onerun.design"

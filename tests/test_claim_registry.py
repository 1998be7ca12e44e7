"""The claim registry: every claim id dpaudit emits or expects is registered exactly once, cites a
document the registry declares, is stated for the relations it is emitted under, and carries the
status the project's claims table gives it.

Emitted ids are enumerated without running an audit: for each scenario of the built-in families'
full suite, the mechanism's analytic claims on the scenario's pair (``pair_guarantees`` when it has
one, else ``guarantees`` on both datasets), the scenario's explicit claims and its expected ids.
"""

from __future__ import annotations

import pytest

from dpaudit import catalog
from dpaudit.catalog.family import Family
from dpaudit.core import CLAIM_STATUSES, Claim, Document, InputError

BUILTIN = tuple(f.name for f in catalog.BUILTIN)

# The project's claims table (statuses fixed when each claim was specified): id -> its status.
# The row of the K-wise and trajectory covariance lemmas says "H = 1 VIOLATED like Lemma A.7; K ≥ 3,
# H ≥ 2 hold": Lemma C.5 is stated for every horizon, so H = 1 refutes it, while Lemma B.5 holds.
CLAIMS_MD = {
    "kl-mab/thm1-pure": "VALID",
    "kl-mab/thm1-swap": "VALID",
    "kl-mab/thm1-approx": "VIOLATED",
    "kl-mab/cor1": "VIOLATED",
    "kl-mab/thm1-approx-corrected": "VALID",
    "kl-linear/thm2-pure": "VALID",
    "kl-linear/thm2-approx": "VIOLATED",
    "kl-linear/cor2-pure": "VALID",
    "kl-rlhf/thm3-label": "VIOLATED",
    "kl-rlhf/thm3-label-approx": "VIOLATED",
    "kl-rlhf/thm4-addremove": "VIOLATED",
    "kl-rlhf/thm3-label-corrected": "VALID",
    "kl-rlhf/thm4-addremove-corrected": "VALID",
    "kl/repeated-T": "VALID",
    "kl/inexact": "VALID",
    "expmech/def2": "VALID",
    "align/alg1-printed": "UNVERIFIED",
    "align/alg1-instantiated": "VALID",
    "align/alg2-printed": "VIOLATED",
    "align/alg2-tight": "TIGHT",
    "align/thm41": "UNVERIFIED",
    "align/kwise-cov": "VALID",
    "align/trajectory-cov": "VIOLATED",
    "align/kwise": "UNVERIFIED",
    "align/trajectory": "UNVERIFIED",
    "align/alg2-corrected": "VALID",
    "po/dp-pg": "VALID",
    "po/dp-npg": "VALID",
    "po/dp-rebel": "VALID",
    "po/meta": "VALID",
}
REGISTRY_STATUS = {"VALID": {"proven", "corrected"}, "VIOLATED": {"refuted"}, "UNVERIFIED": {"unverified"},
                   "TIGHT": {"reference"}}


@pytest.fixture(scope="module")
def suite_ids() -> tuple[dict[str, set[str]], set[str]]:
    """(claim id -> relations it is emitted under, ids the scenarios expect) over the full suite."""
    emitted: dict[str, set[str]] = {}
    expected: set[str] = set()
    for scenario in catalog.suite("full", only=BUILTIN):
        mech, pair = scenario.mechanism, scenario.pair
        if hasattr(mech, "pair_guarantees"):
            claims = list(mech.pair_guarantees(pair.d, pair.d_prime, pair.relation))
        else:
            claims = [*mech.guarantees(pair.d, pair.relation), *mech.guarantees(pair.d_prime, pair.relation)]
        for g in [*claims, *(scenario.claims or [])]:
            emitted.setdefault(g.claim_id, set()).add(g.relation)
        expected.update(scenario.expected)
    return emitted, expected


@pytest.fixture(scope="module")
def registry() -> dict[str, Claim]:
    return catalog.claims()


@pytest.mark.slow  # builds every scenario of the full suite (~15 s)
def test_every_emitted_or_expected_claim_id_is_registered(suite_ids, registry):
    emitted, expected = suite_ids
    missing = sorted((set(emitted) | expected) - set(registry))
    assert not missing, f"claim ids without a registry entry: {missing}"


@pytest.mark.slow  # builds every scenario of the full suite (~15 s)
def test_claims_are_emitted_only_under_the_relations_they_are_stated_for(suite_ids, registry):
    emitted, _ = suite_ids
    wrong = {cid: sorted(rels - set(registry[cid].relations)) for cid, rels in emitted.items()
             if cid in registry and not rels <= set(registry[cid].relations)}
    assert not wrong, f"emitted under relations the registry does not state: {wrong}"


def test_every_claim_cites_a_document_its_family_declares():
    documents = catalog.documents()
    for family in catalog.BUILTIN:
        declared = {d.key for d in family.documents}
        for claim in family.claims:
            assert claim.document in declared, f"{claim.id} cites {claim.document!r}, not declared by {family.name}"
            assert claim.document in documents
    for doc in documents.values():
        assert doc.reference and "/work/" not in doc.reference and ".md" not in doc.reference


def test_each_claim_id_maps_to_one_claim(registry):
    ids = [c.id for f in catalog.families() for c in f.claims]
    assert len(ids) == len(set(ids)) == len(registry)
    for cid, claim in registry.items():
        assert claim.id == cid and claim.where and claim.statement and claim.relations
        assert claim.status in CLAIM_STATUSES


def _family(name: str, claim_id: str, reference: str = "a paper, 2026") -> Family:
    doc = Document(key="doc", reference=reference)
    claim = Claim(id=claim_id, document="doc", where="Theorem 1", statement="ε", relations=("swap",),
                  status="proven")
    return Family(name=name, documents=(doc,), claims=(claim,))


def test_two_families_declaring_the_same_claim_id_are_refused(monkeypatch):
    monkeypatch.setattr(catalog, "families", lambda: (_family("a", "x/same"), _family("b", "x/same")))
    with pytest.raises(InputError, match="'x/same'"):
        catalog.claims()
    with pytest.raises(InputError, match="names must be unique"):
        catalog._unique("claim", [("x/same", 1), ("x/same", 2)])
    monkeypatch.setattr(catalog, "families", lambda: (_family("a", "x/one"), _family("b", "x/two")))
    assert sorted(catalog.claims()) == ["x/one", "x/two"]
    assert list(catalog.documents()) == ["doc"]  # the same document cited twice is one document


def test_two_families_citing_one_document_key_differently_are_refused(monkeypatch):
    monkeypatch.setattr(catalog, "families", lambda: (_family("a", "x/one"), _family("b", "x/two", "another")))
    with pytest.raises(InputError, match="'doc'"):
        catalog.documents()


@pytest.mark.parametrize("claim_id", sorted(CLAIMS_MD))
def test_claims_md_status(registry, claim_id):
    assert claim_id in registry, f"{claim_id} (claims table) is not registered"
    allowed = REGISTRY_STATUS[CLAIMS_MD[claim_id]]
    assert registry[claim_id].status in allowed, (claim_id, registry[claim_id].status, allowed)


def test_refuted_and_unverified_claims_say_why_and_only_corrections_are_vacuous(registry):
    for claim in registry.values():
        if claim.status in ("refuted", "unverified", "corrected"):
            assert claim.reason, claim.id
        assert not claim.vacuous or claim.status == "corrected", claim.id

"""Every rule a one-run result records validates against results.json's closed rule schema: a rule
planned from the claims (its planned_* keys) and a Split with its fallback floor included (they were
refused by summary as unknown keys when the schema was first closed)."""


import jsonschema
import numpy as np
import pytest

from dpaudit.core import Guarantee
from dpaudit.onerun import Fixed, Split, one_run_bound
from dpaudit.results.schema import run_schema


def _rule_validator():
    schema = run_schema()
    return jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/rule"})


@pytest.mark.parametrize("rule", [None, Fixed(20, 20), Split()], ids=["planned-from-claims", "fixed", "split"])
def test_the_recorded_rule_validates(rule):
    rng = np.random.default_rng(11)
    secret = rng.integers(0, 2, 2000)
    scores = rng.standard_normal(2000) + 3.0 * secret
    result = one_run_bound(scores, secret, rule=rule, claims=(Guarantee(epsilon=2.0, delta=1e-5),), tiebreak=3)
    recorded = result.to_dict()["rule"]
    if rule is None:
        assert recorded["planned_from"] == "claims"
    errors = [e.message for e in _rule_validator().iter_errors(recorded)]
    assert not errors, (recorded, errors)


def test_a_rule_with_an_unknown_key_is_still_refused():
    errors = list(_rule_validator().iter_errors({"rule": "fixed", "k_plus": 1, "k_minus": 1, "planned_by": "me"}))
    assert errors

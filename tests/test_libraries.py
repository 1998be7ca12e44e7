"""dpaudit.libraries: each adapter reads the library's own claim, pair and relation from the
library's object, and stops with a clear message (exit 2) on an object, a measure or a metric it
does not support, and on a library that is missing (naming the extra that installs it)."""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.libraries import adapt, from_diffprivlib, from_opendp, from_pydp, load_library
from dpaudit.libraries.opendp_measurements import MEASURES, opendp_distance

dp = pytest.importorskip("opendp.prelude", reason="needs the libraries extra: pip install 'dpaudit[libraries]'")
dp.enable_features("contrib")


def space(size=None, bounds=(0.0, 1.0)):
    return dp.vector_domain(dp.atom_domain(bounds=bounds), size=size), dp.symmetric_distance()


def laplace_sum(scale=1.0):
    return dp.t.make_sum(*space()) >> dp.m.then_laplace(scale=scale)


def test_opendp_pure_dp_claim_is_the_privacy_map_at_the_pairs_distance():
    audit = from_opendp(laplace_sum(0.5))
    (claim,) = audit.claims
    assert claim == Guarantee(epsilon=laplace_sum(0.5).map(1), relation="add-remove", source=claim.source)
    assert claim.epsilon > 2.0 and audit.pair.relation == "add-remove" and audit.seeded is False
    assert list(audit.pair.d) == [0.0] and list(audit.pair.d_prime) == [0.0, 1.0]
    assert "map(1) under MaxDivergence" in audit.reading and audit.library == "opendp"


def test_opendp_a_sized_domain_is_change_one_at_symmetric_distance_two():
    meas = dp.t.make_mean(*space(size=10)) >> dp.m.then_laplace(scale=0.1)
    audit = from_opendp(meas)
    assert audit.pair.relation == "swap" and len(audit.pair.d) == len(audit.pair.d_prime) == 10
    assert audit.claims[0].epsilon == meas.map(2) and "d_in = 2" in audit.pair.description


def test_opendp_a_given_pair_sets_d_in():
    audit = from_opendp(laplace_sum(), d=np.array([0.5]), d_prime=np.array([0.5, 1.0, 0.0]))
    assert audit.claims[0].epsilon == laplace_sum().map(2) and audit.pair.relation == "add-remove"
    with pytest.raises(InputError, match="equal under SymmetricDistance"):
        from_opendp(laplace_sum(), d=np.array([0.5]), d_prime=np.array([0.5]))
    with pytest.raises(InputError, match="give both d and d_prime"):
        from_opendp(laplace_sum(), d=np.array([0.5]))


def test_opendp_approximate_and_profile_measures_give_epsilon_delta_points():
    gauss = dp.t.make_sum(*space()) >> dp.m.then_gaussian(scale=1.0)
    profile = dp.c.make_zCDP_to_approxDP(gauss)
    audit = from_opendp(profile, deltas=(1e-6, 1e-3))
    assert [(c.epsilon, c.delta) for c in audit.claims] == [(profile.map(1).epsilon(d), d) for d in (1e-6, 1e-3)]
    fixed = dp.c.make_fix_delta(profile, 1e-6)
    (claim,) = from_opendp(fixed).claims
    assert (claim.epsilon, claim.delta) == fixed.map(1)
    (pure,) = from_opendp(dp.c.make_approximate(laplace_sum())).claims
    assert (pure.epsilon, pure.delta) == (laplace_sum().map(1), 0.0)


def test_opendp_zero_concentrated_divergence_is_a_zcdp_claim():
    from dpaudit.claims import ZCDP

    gauss = dp.t.make_sum(*space()) >> dp.m.then_gaussian(scale=1.0)
    (claim,) = from_opendp(gauss, claim_id="mine/zcdp").claims
    assert isinstance(claim, ZCDP) and claim.rho == gauss.map(1) and claim.claim_id == "mine/zcdp"
    (same,) = from_opendp(dp.c.make_approximate(gauss)).claims  # approximate zCDP at delta = 0
    assert isinstance(same, ZCDP) and same.rho == claim.rho


def test_opendp_bounded_distance_on_a_scalar_answer():
    meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=2.0)
    audit = from_opendp(meas)
    assert (audit.pair.d, audit.pair.d_prime) == (0.0, 1.0) and audit.claims[0].epsilon == meas.map(1.0)
    assert opendp_distance("L1Distance", [0, 1], [1, 3]) == 3.0 and opendp_distance("LInfDistance", [0, 1], [1, 3]) == 2
    assert opendp_distance("ChangeOneDistance", [1, 2, 3], [1, 2, 4]) == 1


def test_opendp_a_measure_it_cannot_convert_is_named_with_the_supported_ones():
    dp.enable_features("honest-but-curious")  # a user-defined measurement, to stand for a measure we cannot read
    user = dp.m.make_user_measurement(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                                      dp.user_divergence("Mine"), function=lambda x: x, privacy_map=lambda d: d)
    with pytest.raises(InputError, match=r"output measure .*Mine.* cannot be converted.*supported are MaxDivergence"):
        from_opendp(user, d=0.0, d_prime=1.0)
    assert "SmoothedMaxDivergence" in MEASURES


def test_opendp_bad_objects_are_refused_with_what_is_supported():
    with pytest.raises(InputError, match="this is a Transformation"):
        from_opendp(dp.t.make_sum(*space()))
    with pytest.raises(InputError, match="takes an opendp Measurement"):
        from_opendp(3)
    with pytest.raises(InputError, match="has no default pair: give d and d_prime"):
        from_opendp(dp.t.make_count_by_categories(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(),
                                                  categories=["a"]) >> dp.m.then_laplace(scale=1.0))


def test_opendp_factory_is_built_in_each_worker_and_picklable():
    audit = from_opendp(functools.partial(laplace_sum, 1.0), n_jobs=2)
    assert audit.mechanism.n_jobs == 2 and audit.claims[0].epsilon == laplace_sum().map(1)
    out = audit.mechanism.sample(audit.pair.d_prime, 50, np.random.default_rng(0))
    assert out.shape == (50,) and len(np.unique(out)) == 50


diffprivlib = pytest.importorskip("diffprivlib", reason="needs the libraries extra")


def test_diffprivlib_mechanism_claim_and_pair_come_from_its_parameters():
    from diffprivlib.mechanisms import Gaussian, Geometric

    audit = from_diffprivlib(Gaussian(epsilon=0.5, delta=1e-3, sensitivity=2.0))
    (claim,) = audit.claims
    assert (claim.epsilon, claim.delta, claim.relation) == (0.5, 1e-3, "swap") and audit.seeded is True
    assert float(audit.pair.d_prime) - float(audit.pair.d) == 2.0
    geo = from_diffprivlib(Geometric(epsilon=1.0, sensitivity=1))
    a = geo.mechanism.sample(geo.pair.d, 200, np.random.default_rng(5))
    b = geo.mechanism.sample(geo.pair.d, 200, np.random.default_rng(5))
    assert np.array_equal(a, b) and a.dtype.kind == "i"  # seeded from the audit's generator


def test_diffprivlib_tools_and_models():
    from diffprivlib.models import LinearRegression
    from diffprivlib.tools import histogram, mean

    m = from_diffprivlib(functools.partial(mean, epsilon=0.7, bounds=(0.0, 2.0)))
    assert m.claims[0].epsilon == 0.7 and m.pair.relation == "swap" and max(m.pair.d_prime) == 2.0
    h = from_diffprivlib(functools.partial(histogram, epsilon=1.0, bins=3, range=(0.0, 1.0)))
    assert h.pair.relation == "add-remove" and h.mechanism.sample(h.pair.d, 4, np.random.default_rng(0)).shape == (4, 3)
    lr = from_diffprivlib(LinearRegression(epsilon=1.0, bounds_X=(0.0, 1.0), bounds_y=(0.0, 1.0)))
    assert lr.mechanism.sample(lr.pair.d, 3, np.random.default_rng(0)).shape == (3, 2)
    with pytest.raises(InputError, match=r"tools\.mean without bounds"):
        from_diffprivlib(functools.partial(mean, epsilon=1.0))


def test_diffprivlib_an_unknown_object_is_refused_with_what_is_supported():
    from diffprivlib.mechanisms import Bingham

    with pytest.raises(InputError, match=r"does not know .*supported are the mechanisms Laplace"):
        from_diffprivlib(Bingham(epsilon=1.0))


pydp = pytest.importorskip("pydp", reason="needs the libraries extra")


def test_pydp_claim_and_pair_from_the_partial():
    from pydp.algorithms.laplacian import BoundedSum

    audit = from_pydp(functools.partial(BoundedSum, epsilon=0.8, lower_bound=-2.0, upper_bound=1.0, dtype="float"))
    assert audit.claims[0].epsilon == 0.8 and audit.pair.relation == "add-remove" and audit.seeded is False
    assert len(audit.pair.d_prime) == len(audit.pair.d) + 1 and audit.pair.d_prime[-1] == -2.0
    with pytest.raises(InputError, match="does not expose its bounds: give d and d_prime"):
        from_pydp(BoundedSum(epsilon=1.0, lower_bound=0, upper_bound=1, dtype="float"))
    obj = from_pydp(BoundedSum(epsilon=1.0, lower_bound=0, upper_bound=1, dtype="float"), d=[0.0], d_prime=[0.0, 1.0])
    assert obj.mechanism.sample([0.0], 5, np.random.default_rng(0)).shape == (5,)


def test_adapt_dispatches_by_library_and_refuses_the_rest():
    from diffprivlib.mechanisms import Laplace
    from pydp.algorithms.laplacian import Count

    assert adapt(laplace_sum()).library == "opendp"
    assert adapt(Laplace(epsilon=1.0, sensitivity=1.0)).library == "diffprivlib"
    assert adapt(functools.partial(Count, epsilon=1.0, dtype="int")).library == "python-dp"
    with pytest.raises(InputError, match=r"adapt does not know int objects.*supported are OpenDP measurements"):
        adapt(3)


def test_a_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydp", None)
    with pytest.raises(InputError, match=r"python-dp is not installed.*'libraries' extra.*dpaudit\[libraries\]"):
        load_library("pydp", "python-dp")
    with pytest.raises(InputError, match="python-dp is not installed"):
        from_pydp(functools.partial(print))


def test_the_suites_claims_are_registered_under_the_relations_they_are_emitted_under():
    from dpaudit import catalog

    registry = catalog.claims()
    scenarios = catalog.suite("libraries")
    assert {sc.name.split("-")[0] for sc in scenarios} == {"opendp", "diffprivlib", "python"}
    for sc in scenarios:
        assert set(sc.expected) <= set(registry) and set(sc.expected.values()) == {"pass"}
        for claim in sc.claims:
            assert claim.relation in registry[claim.claim_id].relations, (sc.name, claim.relation)
        assert sc.name.startswith(("opendp-0.16.0-", "diffprivlib-0.6.6-", "python-dp-1.1.5-"))


def test_a_missing_library_stops_the_suite_with_exit_2(monkeypatch):
    from dpaudit import catalog
    from tests.clirun import in_process

    monkeypatch.setitem(sys.modules, "pydp", None)
    catalog._built.cache_clear()  # the suite is built once per process: build it again without pydp
    try:
        run = in_process("run", "--suite", "libraries", "--family", "python-dp")
    finally:
        catalog._built.cache_clear()
    assert run.returncode == 2 and "python-dp is not installed" in run.stderr and "dpaudit[libraries]" in run.stderr

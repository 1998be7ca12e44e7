"""Bad input to the Opacus pipeline audit is a clear InputError (exit 2) naming the field (issue 43,
point 4): objects not made by the engine, a loop that never steps, too few steps, more canaries than
data, a model whose parameters the canaries cannot reach, a loop that raises or accumulates.  Tiny
pipelines (40 records), no statistics."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch", reason="the opacus extra is not installed (CI installs it: .ci/run)")
pytest.importorskip("opacus", reason="the opacus extra is not installed (CI installs it: .ci/run)")

import torch

from dpaudit.core import InputError
from dpaudit.onerun.game import FRESH
from dpaudit.pipelines.opacus import attach
from tests.opacus_pipelines import reward_pipeline, trainer

pytestmark = pytest.mark.filterwarnings("ignore")

TINY = {"n": 40, "features": 4, "spare": 10, "noise_multiplier": 1.0, "sample_rate": 0.25}


def _pipeline(**kwargs):
    return reward_pipeline(**{**TINY, **kwargs})


def _attach(engine, model, optimizer, loader, **kwargs):
    return attach(engine=engine, model=model, optimizer=optimizer, data_loader=loader, delta=1e-5,
                  **{"canaries": 10, **kwargs})


def test_objects_not_made_by_the_engine_are_refused():
    engine, model, optimizer, loader = _pipeline()
    plain = torch.nn.Linear(14, 1)
    with pytest.raises(InputError, match=r"model = 'Linear'.*make_private returned"):
        _attach(engine, plain, optimizer, loader)
    with pytest.raises(InputError, match="optimizer = 'SGD'"):
        _attach(engine, model, torch.optim.SGD(model.parameters(), lr=0.1), loader)
    with pytest.raises(InputError, match="engine = 'object'"):
        _attach(object(), model, optimizer, loader)
    other = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4, 14), torch.zeros(4)))
    with pytest.raises(InputError, match="data_loader = '<dataset>'"):
        _attach(engine, model, optimizer, other)
    _, model2, _, _ = _pipeline()
    with pytest.raises(InputError, match="optimizer = '<parameters>'"):
        _attach(engine, model2, optimizer, loader)


def test_more_canaries_than_data_and_than_coordinates_are_refused():
    engine, model, optimizer, loader = _pipeline()
    with pytest.raises(InputError, match=r"canaries = 41 .*dataset's size \(40 records\)"):
        _attach(engine, model, optimizer, loader, canaries=41)
    with pytest.raises(InputError, match=r"canaries = 30 .*one coordinate each: the model has 14"):
        _attach(engine, model, optimizer, loader, canaries=30)
    with pytest.raises(InputError, match="parameter = 'nope'"):
        _attach(engine, model, optimizer, loader, parameter="nope")


def test_a_loop_that_never_steps_or_steps_too_little_is_refused():
    engine, model, optimizer, loader = _pipeline()
    with pytest.raises(InputError, match="never stepped the optimizer"):
        _attach(engine, model, optimizer, loader).run(lambda m, o, d: None)
    with pytest.raises(InputError, match="too few steps for the claim: attach was told min_steps=50"):
        _attach(engine, model, optimizer, loader, min_steps=50).run(trainer(1))


def test_a_loop_that_raises_or_steps_without_the_loader_is_refused():
    engine, model, optimizer, loader = _pipeline()

    def broken(model, optimizer, data_loader):
        raise RuntimeError("boom")

    with pytest.raises(InputError, match=r"train = .*broken.* raised RuntimeError: boom"):
        _attach(engine, model, optimizer, loader).run(broken)

    def own_batches(model, optimizer, data_loader):
        x = torch.zeros(3, 14, dtype=torch.float64)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    with pytest.raises(InputError, match="stepped without a batch from the audited data loader"):
        _attach(engine, model, optimizer, loader).run(own_batches)
    with pytest.raises(InputError, match=r"train = .*must be the training loop"):
        _attach(engine, model, optimizer, loader).run("not a loop")


def test_a_model_on_a_device_the_canaries_cannot_reach_is_refused():
    engine, model, optimizer, loader = _pipeline()
    model.to("meta")
    with pytest.raises(InputError, match="model = '<parameter on meta>'"):
        _attach(engine, model, optimizer, loader)


def test_input_canaries_must_match_the_dataset_and_bring_a_loss():
    engine, model, optimizer, loader = _pipeline()
    good = [(torch.zeros(14, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))] * 10
    with pytest.raises(InputError, match="loss = None"):
        _attach(engine, model, optimizer, loader, kind="input", input_canaries=good)
    bad = [(torch.zeros(15, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))] * 10
    with pytest.raises(InputError, match=r"input_canaries\[0\]"):
        _attach(engine, model, optimizer, loader, kind="input", input_canaries=bad, loss=torch.nn.MSELoss())
    with pytest.raises(InputError, match="kind = 'other'"):
        _attach(engine, model, optimizer, loader, kind="other")


def test_a_correct_tiny_run_bounds_against_the_engines_own_accountant():
    """Not a statistical claim: the run completes, its claims are the engine's (its ε at δ equals
    ``engine.get_epsilon``), the secret is dpaudit's and the user's model is left trained."""
    engine, model, optimizer, loader = _pipeline()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = _attach(engine, model, optimizer, loader).run(trainer(2))
    ids = [c.claim.claim_id for c in result.claims]
    assert ids == ["opacus/prv-accountant", "opacus/pld-curve"]
    assert result.claims[0].claim.epsilon == pytest.approx(engine.get_epsilon(1e-5))
    assert result.secret_source == FRESH
    assert sum(h[2] for h in engine.accountant.history) == 8  # 2 epochs of 1/q = 4 steps

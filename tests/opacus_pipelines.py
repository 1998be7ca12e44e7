"""The user-side Opacus pipelines the pipeline tests attach to: the package's own examples
(:mod:`dpaudit.pipelines.opacus_examples`, shared with the built-in ``run --suite opacus``), so a
test and the suite audit the same pipeline at the same setting."""

from __future__ import annotations

from dpaudit.pipelines.opacus_examples import CHEAP, EPOCHS, SIGMA_2, reward_pipeline, spare_bias_pipeline, trainer

__all__ = ["CHEAP", "EPOCHS", "SIGMA_2", "reward_pipeline", "spare_bias_pipeline", "trainer"]

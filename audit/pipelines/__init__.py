"""Audits of a user's own training pipeline, through the library's own code (issue 43).

:mod:`.opacus` attaches to what Opacus's ``PrivacyEngine.make_private`` returned (model, optimizer,
data loader, engine), inserts canaries that go through the library's own loader, sampler, clipping,
normalisation and noise, and bounds one training run against the library's own accountant;
:mod:`.opacus_faults` is the opt-in fault catalogue (wrappers around Opacus objects, for the
control experiments) and :mod:`.opacus_plan` how many canaries catch each fault.
"""

from __future__ import annotations

__all__: list[str] = []

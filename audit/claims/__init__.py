"""Claims stated in other forms than (ε, δ): ρ-zCDP and (α, ε)-RDP (:mod:`dpaudit.claims.renyi`).

Each is audited through the (ε, δ) curve it implies, by a cited conversion; pass one wherever an
(ε, δ) claim goes (``audit_mechanism(..., claims=[ZCDP(0.125)])``, ``--rho``, ``--rdp``)."""

from dpaudit.claims.renyi import (
    CONVERSIONS,
    DEFAULT_DELTAS,
    RDP,
    ZCDP,
    RenyiClaim,
    delta_from_rdp,
    delta_from_zcdp,
    expand,
    from_dict,
    tradeoff_fnr,
)

__all__ = ["CONVERSIONS", "DEFAULT_DELTAS", "RDP", "ZCDP", "RenyiClaim", "delta_from_rdp", "delta_from_zcdp",
           "expand", "from_dict", "tradeoff_fnr"]

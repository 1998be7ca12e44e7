"""Tight privacy curves, re-exported for auditors (the math lives in :mod:`mechanisms.curves`,
where mechanisms calibrate their noise on it)."""

from mechanisms.curves import (chi_delta, chi_epsilon, classical_gauss_sigma, gauss_delta, gauss_epsilon, gauss_mu,
                               objective_sigma)

__all__ = ["chi_delta", "chi_epsilon", "classical_gauss_sigma", "gauss_delta", "gauss_epsilon", "gauss_mu",
           "objective_sigma"]

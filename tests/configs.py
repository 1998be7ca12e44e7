"""Configs the test files share: one scenario of randomized response on one bit, the smallest
config that runs (a one-bit dataset and its add-one neighbour).  Tests derive their variants from
it with ``str.replace`` (a bad key, another name, a claim), so each variant differs from a config
known to load in exactly the edit the test makes."""

RR = """
[[scenario]]
name = "rr"
mechanism = "randomized-response"
params = { epsilon = 1.0 }
[scenario.data]
columns = { bit = [0] }
[scenario.neighbour]
add = { bit = 1 }
"""


def with_samples(samples: int, config: str = RR) -> str:
    """``config`` with a ``[run]`` table that sets the samples per side."""
    return f"\n[run]\nsamples = {samples}\n{config}"

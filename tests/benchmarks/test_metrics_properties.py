"""Property test of pass@k and pass^k against the binomial formulas.

It needs hypothesis (the ``dev`` extra): without it this module skips (and fails in CI),
while the plain tests in test_metrics.py still run.
"""

# ruff: noqa: E402  (hypothesis is imported after the check that it is installed)
from __future__ import annotations

from tests.conftest import require_module

require_module("hypothesis")

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollgym.benchmarks.metrics import pass_at_k, pass_hat_k


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_the_binomial_formula(args: tuple[int, int, int]) -> None:
    n, c, k = args
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-9)
    assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-9)

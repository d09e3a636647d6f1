"""Metrics against hand-computed values and brute-force enumeration."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from rollgym.benchmarks.metrics import (
    bootstrap_interval,
    expected_best_of_k,
    pass_at_k,
    pass_hat_k,
    summarize,
    wilson_interval,
)


def brute_pass_at_k(n: int, c: int, k: int) -> float:
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


def brute_pass_hat_k(n: int, c: int, k: int) -> float:
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(all(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(brute_pass_hat_k(n, c, k), abs=1e-12)


def test_pass_at_k_hand_values() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45)  # C(7,2)/C(10,2)
    assert pass_at_k(10, 6, 5) == 1.0  # fewer than k wrong samples: some pick is right
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)


def test_pass_at_k_is_stable_for_large_n() -> None:
    # C(2000, 1000) overflows a float; the product form does not.
    value = pass_at_k(2000, 3, 1000)
    assert value == pytest.approx(1 - math.comb(1997, 1000) / math.comb(2000, 1000), rel=1e-12)
    assert 0.0 <= pass_at_k(5000, 1, 1) <= 1.0 and pass_at_k(5000, 1, 1) == pytest.approx(1 / 5000)


@pytest.mark.parametrize("args", [(0, 0, 1), (3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1), (3.0, 1, 1)])
def test_pass_at_k_rejects_impossible_counts(args: tuple) -> None:
    with pytest.raises(ValueError):
        pass_at_k(*args)


def test_wilson_interval_hand_values() -> None:
    # p = 0.8, n = 10, z = 1.959964: centre 0.71672, half-width 0.22654 (computed by hand).
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and high == pytest.approx(3.8415 / (20 + 3.8415), abs=1e-4)  # z^2 / (n + z^2)
    assert wilson_interval(20, 20)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    wide, narrow = wilson_interval(50, 100, 0.99), wilson_interval(50, 100, 0.90)
    assert wide[0] < narrow[0] < 0.5 < narrow[1] < wide[1]
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(2.0, 1.0, size=200)
    a = bootstrap_interval(values, seed=3)
    assert a == bootstrap_interval(values, seed=3)
    assert a != bootstrap_interval(values, seed=4)
    assert a[0] < values.mean() < a[1]
    # The bootstrap standard error approaches sigma / sqrt(n): the 95% width is about 2 * 1.96 * 0.0707.
    assert a[1] - a[0] == pytest.approx(2 * 1.96 / math.sqrt(200), rel=0.2)
    assert bootstrap_interval([0.5]) == (0.5, 0.5)
    assert all(math.isnan(x) for x in bootstrap_interval([]))


def test_expected_best_of_k_enumerates_subsets() -> None:
    rewards = [0.1, 0.7, 0.3, 0.9, 0.0]
    for k in range(1, 6):
        subsets = list(itertools.combinations(rewards, k))
        assert expected_best_of_k(rewards, k) == pytest.approx(sum(max(s) for s in subsets) / len(subsets))
    assert expected_best_of_k([1, 0, 0, 1], 2) == pytest.approx(pass_at_k(4, 2, 2))


@dataclass
class FakeTraj:
    correct: bool
    reward: float | None
    status: str = "completed"


@dataclass
class FakeGroup:
    trajectories: list[FakeTraj] = field(default_factory=list)


def test_summarize_counts_failures_as_unsolved_and_as_zero_in_mean_reward() -> None:
    groups = [
        FakeGroup([FakeTraj(True, 1.0), FakeTraj(False, 0.0)]),
        FakeGroup([FakeTraj(False, None, "failed"), FakeTraj(False, 0.0, "truncated")]),
    ]
    s = summarize(groups)
    assert (s.episodes, s.tasks, s.correct, s.failures, s.truncated) == (4, 2, 1, 1, 1)
    assert s.accuracy.value == 0.25 and (s.accuracy.low, s.accuracy.high) == wilson_interval(1, 4)
    assert s.mean_reward.value == pytest.approx(1 / 4)  # the failed rollout counts 0, not nothing
    assert s.pass_at_k[1].value == pytest.approx((0.5 + 0.0) / 2)
    assert s.pass_at_k[2].value == pytest.approx((1.0 + 0.0) / 2)
    assert set(s.pass_at_k) == {1, 2}
    assert summarize(groups).to_dict() == s.to_dict()  # seeded: the same every time


def test_pass_at_k_intervals_do_not_collapse_when_every_task_is_solved() -> None:
    from rollgym.benchmarks.metrics import unit_interval

    low, high = unit_interval([1.0] * 100)
    assert high == 1.0 and low == pytest.approx(wilson_interval(100, 100)[0])
    low, high = unit_interval([0.0] * 40)
    assert low == 0.0 and high == pytest.approx(wilson_interval(0, 40)[1])
    mixed = [0.25, 0.5, 1.0, 0.0] * 25
    b_low, b_high = bootstrap_interval(mixed)
    low, high = unit_interval(mixed)
    assert low <= b_low and high >= b_high and 0.0 <= low < 0.4375 < high <= 1.0

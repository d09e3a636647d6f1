"""DAPO dynamic sampling: refill the batch with informative groups from the real collector, within a cap."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rollgym.agents.base import OracleAgent
from rollgym.core import ConfigError
from rollgym.rollout import collect
from rollgym.rollout.dynamic import DynamicSampler
from rollgym.rollout.strategies import zero_variance


class CoinAgent:
    """Answers Countdown with the oracle with probability ``p`` (drawn per episode from its seed), else wrongly."""

    name = "coin"

    def __init__(self, p: float) -> None:
        self.p = p
        self.oracle = OracleAgent()
        self.solve = True

    def reset(self, seed: int | None = None) -> None:
        self.solve = bool(np.random.default_rng(seed).random() < self.p)
        self.oracle.reset(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.oracle.act(observation, info) if self.solve else "<answer>1 + 1</answer>"


def sampler_for(p: float, **kwargs: Any) -> tuple[DynamicSampler, list[int]]:
    asked: list[int] = []

    def sample(n: int, round_: int):
        asked.append(n)
        return collect(CoinAgent(p), "Countdown-v0", n, 4, split="train", seed=1000 + round_)

    return DynamicSampler(sample, **kwargs), asked


def test_the_batch_is_refilled_to_the_target_with_informative_groups():
    sampler, asked = sampler_for(0.85, target_groups=6, max_sample_factor=6.0)
    groups, cost = sampler()
    assert len(groups) == 6 and not any(zero_variance(g) for g in groups)
    assert cost.groups_kept == 6 and not cost.capped
    assert cost.rounds == len(asked) >= 2 and asked[0] == 6  # the first round asks for the target
    assert cost.groups_sampled == sum(asked) > 6
    assert cost.rollouts_sampled == 4 * cost.groups_sampled
    assert cost.extra_rollouts == cost.rollouts_sampled - 6 * 4
    assert cost.tokens_sampled == 0  # a text agent samples no tokens
    assert 0 < cost.keep_rate <= 1 and cost.to_dict()["keep_rate"] == round(cost.keep_rate, 4)
    assert len({g.task.id for g in groups}) == 6


def test_the_cap_stops_the_refill_and_says_so():
    sampler, asked = sampler_for(1.0, target_groups=3, max_sample_factor=2.0)  # every group is flat
    groups, cost = sampler()
    assert groups == [] and cost.capped and cost.groups_sampled == 6 == sum(asked)
    plain, asked = sampler_for(0.5, target_groups=4, max_sample_factor=1.0)  # factor 1: filtering only
    groups, cost = plain()
    assert asked == [4] and cost.groups_sampled == 4 and len(groups) == cost.groups_kept <= 4


def test_bad_settings():
    with pytest.raises(ConfigError):
        DynamicSampler(lambda n, r: [], target_groups=0)
    with pytest.raises(ConfigError):
        DynamicSampler(lambda n, r: [], target_groups=2, max_sample_factor=0.5)

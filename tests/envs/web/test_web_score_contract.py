"""Every web id ends an episode with the core Score fields in ``info``, for oracle and random play alike."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rollgym
from rollgym.envs.web.gen.reference import reference_policy as generated_reference_policy
from rollgym.envs.web.reference import random_action, reference_policy
from tests.conftest import check_score_fields

pytestmark = pytest.mark.slow

WEB_IDS = [info.id for info in rollgym.list_envs() if info.family == "web"]
GATED = {i for i in WEB_IDS if i.endswith("-v2")} | {"WebGen-v0"}


def _check_score_fields(reward: float, info: dict[str, Any]) -> None:
    check_score_fields(reward, info)
    assert info["success"] == info["correct"]  # the deprecated alias agrees


def test_there_are_three_generations_of_four_web_ids_and_webgen():
    assert sorted(WEB_IDS) == sorted([*(f"{n}-v{v}" for n in ("WebShop", "WebForum", "WebTravel", "WebGym")
                                        for v in range(3)), "WebGen-v0"])


@pytest.mark.parametrize("env_id", sorted(GATED))
def test_oracle_episodes_end_with_score_fields(web_runtime, env_id):
    env = gym.make(env_id).unwrapped
    policy = generated_reference_policy if env_id == "WebGen-v0" else reference_policy
    try:
        observation, info = env.reset(options={"task_index": 1, "split": "test"})
        for _ in range(60):
            observation, reward, terminated, truncated, info = env.step(policy(observation, info))
            if terminated or truncated:
                break
        _check_score_fields(reward, info)
        assert terminated and info["correct"] is True and reward == 1.0 and info["error"] is None
        assert "site_unchanged_beyond_task" in info["details"]["criteria"]
    finally:
        env.close()


@pytest.mark.parametrize("env_id", WEB_IDS)
def test_random_episodes_end_with_score_fields(web_runtime, env_id):
    env = gym.make(env_id, max_steps=3).unwrapped
    rng = np.random.default_rng(0)
    try:
        observation, info = env.reset(seed=5)
        for _ in range(3):
            observation, reward, terminated, truncated, info = env.step(random_action(observation, info, rng))
            if terminated or truncated:
                break
        assert truncated
        _check_score_fields(reward, info)
        assert info["correct"] is False and reward == 0.0
        assert ("site_unchanged_beyond_task" in info["details"]["criteria"]) == (env_id in GATED)
    finally:
        env.close()

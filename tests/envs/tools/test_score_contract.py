"""Every ToolWorld id ends an episode with the core Score fields in ``info``, for oracle and random play alike."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import rollgym
from rollgym.agents.base import OracleAgent, RandomAgent
from tests.conftest import check_score_fields

from .helpers import play

# ToolWorld's ids; the generated apps' ToolGen ids keep the same contract in test_toolgen_env.py
TOOL_IDS = [info.id for info in rollgym.list_envs() if info.family == "tools" and info.id.startswith("ToolWorld")]


def _check_score_fields(reward: float, info: dict[str, Any]) -> None:
    check_score_fields(reward, info)
    assert set(info["details"]["criteria"]) >= {"required_changes", "apps_unchanged_beyond_task"}
    assert info["correct"] == (reward == 1.0)
    assert info["verdict"]["success"] == info["correct"]  # the deprecated alias agrees


def test_every_tool_id_is_listed():
    assert len(TOOL_IDS) == 16 and "ToolWorld-v1" in TOOL_IDS and "ToolWorld-CrossApp-v1" in TOOL_IDS


@pytest.mark.parametrize("env_id", TOOL_IDS)
def test_oracle_and_random_episodes_end_with_score_fields(env_id):
    env = gym.make(env_id)
    reward, terminated, _, info = play(env, OracleAgent(), seed=3, max_steps=60)
    _check_score_fields(reward, info)
    assert terminated and info["correct"] is True and info["error"] is None
    env.close()
    env = gym.make(env_id, max_turns=8)
    reward, terminated, truncated, info = play(env, RandomAgent(7), seed=4, max_steps=60)
    _check_score_fields(reward, info)
    if truncated:
        assert info["correct"] is False and info["error"] == "not_completed" and info["details"]["completed"] is False
    env.close()

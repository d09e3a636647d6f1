"""The LLM chat agent plays the search envs through the standard tool-call format (tiny local model)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rollgym  # noqa: F401  (registers the ids)
from tests.conftest import require_module

require_module("bm25s")


@pytest.mark.slow
def test_chat_agent_plays_an_episode_with_the_env_tools(tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    env = gym.make("Search-v1", difficulty="easy", max_turns=3)
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12, temperature=1.0))
    obs, info = env.reset(seed=0)
    agent.reset(seed=0)
    done, turns = False, 0
    while not done:
        action = agent.act(obs, info)
        assert isinstance(action, str)
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(reward, float) and env.observation_space.contains(obs)
        done, turns = terminated or truncated, turns + 1
    assert turns <= 3
    assert agent.tools and {t["function"]["name"] for t in agent.tools} == {"search", "open", "find"}
    assert agent.messages[0]["role"] == "system" and "<answer>" in agent.messages[0]["content"]

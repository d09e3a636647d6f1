"""MAV-style settings: a per-move search budget, search tools without legal-move lists, hidden legal moves."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rollgym  # noqa: F401
from rollgym.core.errors import ConfigError

SIM = '<tool_call>{"name": "simulate", "arguments": {"moves": ["4"]}}</tool_call>'
LEGAL = '<tool_call>{"name": "legal_moves", "arguments": {}}</tool_call>'


def test_the_search_budget_refills_after_each_move() -> None:
    env = gym.make("ConnectFour-v0", agent_color="first", tools=["simulate"], tool_budget=10,
                   tool_budget_per_move=2, show_legal_moves=False)
    obs, info = env.reset(seed=0)
    assert [t["function"]["name"] for t in info["tools"]] == ["simulate"]
    assert "Legal moves" not in obs and info["tool_calls_left"] == 2
    obs, _, _, _, info = env.step(SIM)
    assert info["tool_calls_left"] == 1 and "1 tool calls left for this move" in obs
    obs, _, _, _, info = env.step(SIM + SIM)  # the second call of this message is over the per-move budget
    assert "tool budget exhausted" in obs and info["tool_calls_left"] == 0
    obs, _, terminated, _, info = env.step(SIM)
    assert info["error"] == "no_move" and "budget" in obs and not terminated  # a retry is used up, not the game
    obs, _, terminated, _, info = env.step("Final Answer: 4")
    assert not terminated and info["tool_calls_left"] == 2  # a new move: the budget is back
    assert "Legal moves" not in obs
    env.step(SIM)
    env.step(SIM)
    env.step("Final Answer: 4")
    env.step(SIM)
    _, _, _, _, info = env.step("Final Answer: 3")
    assert info["tool_calls_left"] == min(2, 10 - 5)


def test_a_tool_left_out_cannot_be_called() -> None:
    env = gym.make("ConnectFour-v0", agent_color="first", tools=["simulate"])
    env.reset(seed=0)
    obs, *_ = env.step(LEGAL)
    assert "unknown tool 'legal_moves'" in obs and "Legal moves" not in obs.split("Board:")[0]


def test_bad_tool_settings_are_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="tools must be"):
        gym.make("ConnectFour-v0", tools=["search_engine"])
    with pytest.raises(ConfigError, match="tool_budget_per_move"):
        gym.make("ConnectFour-v0", tools=True, tool_budget_per_move=-1)

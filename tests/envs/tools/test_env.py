"""ToolWorld env behaviour: the Gymnasium contract, the oracle, bad actions, caps and info."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.agents.base import OracleAgent, RandomAgent
from rollgym.envs.tools import SCENARIO_IDS

IDS = ["ToolWorld-v1", *SCENARIO_IDS.values()]


def play(env, agent, seed, max_steps=60):
    obs, info = env.reset(seed=seed)
    agent.reset(seed)
    reward, terminated, truncated = 0.0, False, False
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            break
    return reward, terminated, truncated, info


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_passes_without_warnings(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", IDS)
def test_oracle_solves_through_the_text_interface(env_id):
    env = gym.make(env_id)
    for seed in range(4):
        reward, terminated, truncated, info = play(env, OracleAgent(), seed)
        assert (reward, terminated, truncated) == (1.0, True, False), info.get("details")
        assert info["correct"] is True and info["error"] is None and all(info["details"]["criteria"].values())


def test_random_agent_never_crashes_the_env():
    env = gym.make("ToolWorld-v1", max_turns=25)
    for seed in range(15):
        reward, terminated, truncated, _info = play(env, RandomAgent(seed), seed, max_steps=30)
        assert reward in (0.0, 1.0)
        assert terminated or truncated


BAD_ACTIONS = [
    "",
    "I think I should look at the inbox first.",
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "contacts_get", "arguments": {"contact_id": "abc"}}</tool_call>',
    '<tool_call>{"name": "contacts_get", "arguments": {"contact_id": 1, "extra": 2}}</tool_call>',
    '<tool_call>{"name": "contacts_get", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "email_send", "arguments": {"to": "x@example.com", "subject": 1, "body": null}}</tool_call>',
    '<tool_call>{"name": "payments_send", "arguments": {"to": "x@example.com", "amount": -5}}</tool_call>',
    '<tool_call>{"name": "calendar_create", "arguments": {"title": "t", "start": "tomorrow", "end": "later"}}'
    "</tool_call>",
    '<tool_call>{"name": "contacts_search", "arguments": [1, 2]}</tool_call>',
    '<tool_call>{"name": "contacts_search", "arguments": {"page": 0}}</tool_call>',
    '<tool_call>{"name": "contacts_search", "arguments": {"page_size": 10000}}</tool_call>',
    '<tool_call>{"name": "email_search"',
    "x" * 50_000,
    '<tool_call>{"name": "shop_search", "arguments": {"max_price": "cheap"}}</tool_call>',
    '<tool_call>{"name": "contacts_get", "arguments": {"contact_id": 99999999999999999999999}}</tool_call>',
    '<tool_call>{"name": "payments_send", "arguments": {"to": "a@example.com", "amount": NaN}}</tool_call>',
    '<tool_call>{"name": "payments_send", "arguments": {"to": "a@example.com", "amount": 1e308}}</tool_call>',
    # nesting deep enough to make json raise RecursionError, in a block, in string arguments and as a bare list
    '<tool_call>{"name": "contacts_search", "arguments": {"query": ' + "[" * 5000 + "]" * 5000 + "}}</tool_call>",
    '<tool_call>{"name": "contacts_search", "arguments": "' + "[" * 5000 + "]" * 5000 + '"}</tool_call>',
    "[" * 5000 + "]" * 5000,
    '<tool_call>{"name": "email_send", "arguments": {"to": ' + "[" * 900 + "]" * 900 + "}}</tool_call>",
]


def test_malformed_calls_give_error_observations_and_the_episode_goes_on():
    env = gym.make("ToolWorld-v1")
    env.reset(seed=0)
    for action in BAD_ACTIONS:
        obs, reward, terminated, truncated, info = env.step(action)
        assert not terminated and not truncated and reward == 0.0
        assert "error" in obs.lower() or "no tool call" in obs.lower(), action[:60]
        assert "Traceback" not in obs and "sqlite" not in obs.lower() and "SELECT" not in obs
        assert "internal_error" not in obs, action[:80]
    obs, reward, terminated, truncated, info = env.step(
        '[{"type": "function", "function": {"name": "complete_task", "arguments": "{}"}}]')
    assert terminated and isinstance(info["correct"], bool) and "criteria" in info["details"]


def test_error_shape_is_uniform():
    env = gym.make("ToolWorld-v1")
    env.reset(seed=1)
    obs, *_ = env.step('<tool_call>{"name": "contacts_get", "arguments": {"contact_id": 999999}}</tool_call>')
    body = json.loads(obs.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == "not_found"


def test_turn_and_call_caps_truncate_with_zero_reward():
    env = gym.make("ToolWorld-v1", max_turns=3)
    env.reset(seed=0)
    for _turn in range(3):
        obs, reward, terminated, truncated, info = env.step(
            '<tool_call>{"name": "whoami", "arguments": {}}</tool_call>')
    assert truncated and not terminated and reward == 0.0 and info["turn"] == 3
    env = gym.make("ToolWorld-v1", max_calls_per_turn=2)
    env.reset(seed=0)
    obs, *_ = env.step('<tool_call>{"name": "whoami", "arguments": {}}</tool_call>' * 4)
    assert obs.count("call_limit") == 2


def test_several_calls_in_one_action_run_in_order_and_stop_at_complete_task():
    env = gym.make("ToolWorld-v1")
    env.reset(seed=0)
    action = ('<tool_call>{"name": "whoami", "arguments": {}}</tool_call>'
              '<tool_call>{"name": "payments_balance", "arguments": {}}</tool_call>'
              '<tool_call>{"name": "complete_task", "arguments": {}}</tool_call>'
              '<tool_call>{"name": "payments_balance", "arguments": {}}</tool_call>')
    obs, _reward, terminated, _truncated, _info = env.step(action)
    assert terminated and obs.count("<tool_response") == 3


def test_info_carries_tool_schemas_and_public_meta_only():
    env = gym.make("ToolWorld-v1")
    _obs, info = env.reset(seed=5)
    names = [t["function"]["name"] for t in info["tools"]]
    assert "complete_task" in names and len(names) == len(set(names)) >= 50
    assert info["system_prompt"] and "<tool_call>" in info["system_prompt"]
    assert info["task_meta"]["template"] and "answer" not in info["task_meta"]
    hidden = env.unwrapped.task.answer  # the hidden answer stays on the task object, outside info
    assert "answer" not in info or info.get("answer") is None or hidden is None
    assert info["task_id"].startswith("ToolWorld/train/")


def test_same_seed_same_task_and_fresh_state_each_reset():
    env = gym.make("ToolWorld-v1")
    obs_a, info_a = env.reset(seed=11)
    env.step('<tool_call>{"name": "notes_create", "arguments": {"title": "x"}}</tool_call>')
    obs_b, info_b = env.reset(seed=11)
    assert obs_a == obs_b and info_a["task_id"] == info_b["task_id"]
    assert env.unwrapped.evaluate().details["criteria"]["apps_unchanged_beyond_task"]  # last episode's note is gone
    assert info_a["episode_id"] == info_b["episode_id"]  # same instance, same seed: same episode key
    other = gym.make("ToolWorld-v1")
    assert other.reset(seed=11)[1]["episode_id"] != info_a["episode_id"]  # live episodes never share a key


def test_scenario_ids_only_draw_their_family():
    env = gym.make("ToolWorld-Payments-v1")
    for seed in range(10):
        _, info = env.reset(seed=seed)
        assert info["task_meta"]["family"] == "payments"


def test_bad_constructor_arguments_raise_one_clear_error():
    with pytest.raises(rollgym.ConfigError, match="scenario"):
        gym.make("ToolWorld-v1", scenario="banking")
    with pytest.raises(rollgym.ConfigError, match="template"):
        gym.make("ToolWorld-v1", templates=["nope"])
    with pytest.raises(rollgym.ConfigError, match="max_turns"):
        gym.make("ToolWorld-v1", max_turns=0)


def test_random_policy_is_seeded():
    from rollgym.envs.tools.policies import random_policy

    env = gym.make("ToolWorld-v1")
    _, info = env.reset(seed=0)
    a = [random_policy("", info, np.random.default_rng(3)) for _ in range(3)]
    b = [random_policy("", info, np.random.default_rng(3)) for _ in range(3)]
    assert a == b


def test_oracle_uses_public_information_only(monkeypatch):
    """While the oracle decides, the hidden expectation and direct reads of the base world are unavailable."""
    import rollgym.envs.tools.tasks.base as base
    import rollgym.envs.tools.tasks.reads as reads
    from rollgym.envs.tools.tasks import TEMPLATES, calendar_payments, contacts_email, cross_app, notes_shopping
    from rollgym.envs.tools.world import World

    def forbidden(*args, **kwargs):
        raise AssertionError("the oracle touched hidden state")

    env = gym.make("ToolWorld-v1")
    agent = OracleAgent()
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        for _ in range(60):
            with monkeypatch.context() as patch:
                for module in (base, reads, calendar_payments, contacts_email, cross_app, notes_shopping):
                    for helper in ("rows", "contact_names", "email_of"):
                        if hasattr(module, helper):
                            patch.setattr(module, helper, forbidden)
                patch.setattr(World, "table", forbidden)
                for template in TEMPLATES.values():
                    patch.setattr(template, "expect", forbidden)
                action = agent.act(obs, info)
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert reward == 1.0, info["task_meta"]["template"]


def test_a_given_task_without_tool_world_meta_is_refused_clearly():
    env = gym.make("ToolWorld-v1")
    with pytest.raises(rollgym.ConfigError, match="meta"):
        env.reset(options={"task": rollgym.Task("x", "ToolWorld-v1", "do it", None, {})})
    obs, _info = env.reset(seed=3)
    again, _ = env.reset(options={"task": env.unwrapped.task})
    assert again == obs

"""A model in the user's seat (``user_model``): the same graders, state filled from what the model says."""

from __future__ import annotations

from typing import Any

import pytest

import rollgym
from rollgym.agents import OracleAgent
from rollgym.core.errors import ConfigError
from rollgym.envs.usersim.llm_user import STOP, LLMUser, persona
from rollgym.envs.usersim.user import LEAVE, SimulatedUser, default_device
from rollgym.rollout import run_episode

FACTS = {"identity": "kenji.brennan@example.com", "amount": "$12.50"}


def test_what_the_model_says_fills_the_users_state() -> None:
    said = iter(["Hi! It's $12.50.", "<action>unlock_payments</action> Done, it's unlocked.", "Yes, go ahead.",
                 "Hmm?", f"Thanks, bye {STOP}"])
    user = LLMUser(lambda messages: next(said), "I need to pay someone.", FACTS,
                   default_device(("payments",), "payments"), confirm_values=("$12.50",))
    assert user.respond("How much is it?") == "Hi! It's $12.50." and user.state.revealed == {"amount": "$12.50"}
    assert user.respond("Please unlock your payments app.") == "Done, it's unlocked."  # the tag is not shown
    assert user.device["payments_app"] == "unlocked"
    user.respond("Shall I send $12.50?")
    assert user.state.confirmations == 1
    user.respond("Hello?")
    assert user.state.strikes == 1 and not user.state.left
    assert user.respond("Done.") == "Thanks, bye" and user.state.left
    assert "kenji.brennan@example.com" in user.messages[0]["content"]  # the persona holds the facts


def test_a_model_that_fails_or_returns_junk_costs_patience_and_never_crashes() -> None:
    def broken(messages: list[dict[str, str]]) -> Any:
        raise RuntimeError("server down")

    for model in (broken, lambda m: None, lambda m: "<action>rm -rf</action>" * 1000):
        user = LLMUser(model, "Hi", FACTS, default_device(("payments",)), patience=2)
        user.respond("How much is it?")
        assert user.respond("How much is it?") == LEAVE and user.state.revealed == {}


def test_a_confirmation_is_not_counted_when_the_agent_did_not_ask_for_one() -> None:
    user = LLMUser(lambda m: "Yes.", "Hi", FACTS, default_device(("payments",)))
    user.respond("How are you?")
    assert user.state.confirmations == 0


def rule_user_as_model(opening: str, facts: dict[str, str], confirm: tuple[str, ...]) -> Any:
    """A model that answers as the rule-driven user would (and writes an action tag when it unlocks an app)."""
    inner = SimulatedUser(facts, default_device(("payments", "shopping", "contacts", "notes", "calendar")),
                          confirm_values=confirm, patience=99)
    for key in inner.device:
        inner.device[key] = "locked" if key.endswith("_app") else inner.device[key]

    def model(messages: list[dict[str, str]]) -> str:
        assert messages[0]["role"] == "system" and messages[1] == {"role": "assistant", "content": opening}
        before = list(inner.state.actions)
        reply = inner.respond(messages[-1]["content"])
        tags = "".join(f"<action>{name}</action>" for name in inner.state.actions[len(before):])
        return tags + reply

    return model


def test_the_oracle_scores_the_same_with_a_model_in_the_users_seat() -> None:
    source = rollgym.make("UserSim-v1").unwrapped.source
    for index in range(8):
        task = source.task(index, "train")
        from rollgym.envs.usersim.scenarios import SCENARIOS

        scenario = SCENARIOS[task.meta["scenario"]]
        confirm = tuple(task.answer["facts"][kind] for key, kind in scenario.asks if key in scenario.confirm)
        model = rule_user_as_model(task.prompt, task.answer["facts"], confirm)
        env = rollgym.make("UserSim-v1", user_model=model).unwrapped
        traj, _ = run_episode(env, OracleAgent(), seed=0, options={"task": task})
        assert traj.correct, (task.id, traj.info["details"].get("reasons"))
        env.close()


def test_user_model_must_be_callable() -> None:
    with pytest.raises(ConfigError, match="user_model must be a callable"):
        rollgym.make("UserSim-v1", user_model="gpt")


def test_persona_names_every_phone_action() -> None:
    text = persona("Hi", FACTS, default_device(("payments",)))
    assert all(name in text for name in ("unlock_payments", "sign_out", "factory_reset")) and STOP in text


def test_the_tiny_model_in_the_users_seat_with_the_same_graders(tiny_backend) -> None:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.agents.llm_user import backend_user

    env = rollgym.make("UserSim-v1", user_model=backend_user(tiny_backend, SamplingParams(max_tokens=8, seed=1)),
                       max_turns=3).unwrapped
    for agent in (OracleAgent(), ChatAgent(tiny_backend, SamplingParams(max_tokens=8))):
        traj, _ = run_episode(env, agent, seed=0, max_steps=3)
        assert traj.status in {"completed", "truncated"}, traj.info.get("failure")
        assert set(traj.info["details"]["criteria"]) >= {"required_changes", "required_facts_elicited"}
        assert traj.info["user"]["messages"] >= 1
        replies = [m["content"] for m in env.user.messages if m["role"] == "assistant"][1:]
        assert replies and all(isinstance(r, str) for r in replies)  # the model's own words
    env.close()


def test_the_oracle_never_crashes_on_replies_it_cannot_read() -> None:
    env = rollgym.make("UserSim-v1", user_model=lambda messages: "¯\\_(ツ)_/¯", patience=50).unwrapped
    for index in range(6):
        traj, task = run_episode(env, OracleAgent(), seed=index, options={"task_index": index})
        assert traj.status in {"completed", "truncated"} and traj.reward == 0.0, (task.id, traj.info.get("failure"))
    env.close()

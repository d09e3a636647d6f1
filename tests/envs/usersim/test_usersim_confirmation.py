"""UserSim-v1 binds the user's confirmation to the exact call it names (issue 41).

The attack: on UserSim-v0 the user's "yes" to "please confirm that I will NOT transfer 40 to Ana" counted as the
confirmation of the transfer, so every irreversible task scored 1.0 without a real confirmation. On v1 a yes counts
only for the one call the request names (the tool and its arguments in braces, as the env renders it with
``describe_call``), with nothing negated, and only for that exact call, once.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

import rollgym
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.usersim.llm_user import LLMUser
from rollgym.envs.usersim.policies import oracle_script
from rollgym.envs.usersim.user import SimulatedUser, default_device, describe_call, named_calls
from tests.envs.usersim.conftest import irreversible_tasks

Script = Generator[str, str, None]


TASKS = irreversible_tasks(8)


def play(script: Callable[[dict[str, Any]], Script], split: str, index: int,
         env_id: str = "UserSim-v1") -> tuple[float, dict[str, Any]]:
    env = rollgym.make(env_id).unwrapped
    observation, info = env.reset(options={"task_index": index, "split": split})
    actions = script(info["task_meta"])
    action = next(actions)
    try:
        for _ in range(120):
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return reward, info
            try:
                action = actions.send(observation)
            except StopIteration:
                action = ToolCall("complete_task", {}).to_hermes()
    finally:
        env.close()
    raise AssertionError("the episode did not end")


def rewritten(meta: dict[str, Any], rewrite: Callable[[str], str]) -> Script:
    """The honest oracle with its confirmation requests rewritten."""
    script = oracle_script(meta)
    action = next(script)
    while True:
        observation = yield rewrite(action) if action.startswith("Please confirm:") else action
        try:
            action = script.send(observation)
        except StopIteration:
            return


def _details(request: str) -> str:
    return request.removeprefix("Please confirm: ").split(". I will run")[0]


def negated(request: str) -> str:
    return f"Please confirm that I will NOT do this: {_details(request)}. Shall I go ahead?"


def negated_call(request: str) -> str:
    call = request.split("I will run ", 1)[1].rsplit(". Shall I", 1)[0]
    return f"Please confirm: {_details(request)}. I will not run {call}. Shall I go ahead?"


def another_call(request: str) -> str:
    call = request.split("I will run ", 1)[1].rsplit(". Shall I", 1)[0]
    name, arguments = named_calls(call, (call.split()[0],))[0][0]
    changed = {k: (v * 10 if isinstance(v, (int, float)) else f"{v}x") for k, v in arguments.items()}
    return f"Please confirm: {_details(request)}. I will run {describe_call(name, changed)}. Shall I go ahead?"


@pytest.mark.parametrize(("split", "index"), TASKS)
def test_a_correct_confirmation_of_the_exact_call_still_scores_one(split: str, index: int) -> None:
    reward, info = play(oracle_script, split, index)
    assert reward == 1.0 and info["details"]["criteria"]["confirmed_before_irreversible"] is True


@pytest.mark.parametrize("attack", [negated, negated_call, another_call])
@pytest.mark.parametrize(("split", "index"), TASKS)
def test_a_yes_to_anything_but_the_exact_call_confirms_nothing(split: str, index: int, attack: Any) -> None:
    reward, info = play(lambda meta: rewritten(meta, attack), split, index)
    assert reward == 0.0 and info["details"]["criteria"]["confirmed_before_irreversible"] is False
    assert info["details"]["criteria"]["required_changes"] is True  # the work itself was right


def _user(**kwargs: Any) -> SimulatedUser:
    return SimulatedUser({"person": "Ana Lopez", "amount": "$40.00"}, default_device(("payments",)),
                         confirm_values=("Ana Lopez", "$40.00"), irreversible=("payments_send",),
                         bind_actions=True, patience=99, **kwargs)


CALL = describe_call("payments_send", {"to": "ana@example.com", "amount": 40.0, "note": "Lunch"})


def test_the_user_consents_to_the_named_call_only_and_once() -> None:
    user = _user()
    assert "Hold on" in user.respond("Please confirm that I will NOT transfer $40.00 to Ana Lopez. Go ahead?")
    assert "Hold on" in user.respond(f"Please confirm: I will not run {CALL} for Ana Lopez, $40.00. Go ahead?")
    assert "Hold on" in user.respond(f"Shall I go ahead? {CALL} or {CALL.replace('40.0', '4.0')}, Ana Lopez $40.00")
    assert not user.consented("payments_send", {"to": "ana@example.com", "amount": 40.0, "note": "Lunch"})
    assert "go ahead" in user.respond(f"Please confirm: {CALL} sends $40.00 to Ana Lopez. Shall I go ahead?")
    assert user.consented("payments_send", {"to": "ana@example.com", "amount": 40, "note": "Lunch"})
    assert not user.consented("payments_send", {"to": "ana@example.com", "amount": 400.0, "note": "Lunch"})
    user.spend_consent("payments_send", {"to": "ana@example.com", "amount": 40.0, "note": "Lunch"})
    assert not user.consented("payments_send", {"to": "ana@example.com", "amount": 40.0, "note": "Lunch"})


def test_a_model_in_the_users_seat_consents_only_to_a_named_call() -> None:
    def yes(messages: list[dict[str, str]]) -> str:
        return "Yes, go ahead."

    user = LLMUser(yes, "Hi", {"amount": "$40.00"}, default_device(("payments",)), confirm_values=("$40.00",),
                   irreversible=("payments_send",), bind_actions=True)
    user.respond("Please confirm that I will NOT transfer $40.00 to Ana. Shall I go ahead?")
    user.respond(f"Please confirm: I won't run {CALL}. Shall I go ahead?")
    assert user.state.consents == [] and user.state.confirmations == 0
    user.respond(f"Please confirm: I will run {CALL}. Shall I go ahead?")
    assert user.consented("payments_send", {"to": "ana@example.com", "amount": 40.0, "note": "Lunch"})


def test_broken_call_text_in_a_message_never_crashes_the_user() -> None:
    user = _user()
    for text in ["payments_send {", "payments_send {\"amount\": }", "payments_send [1, 2]", "payments_send {}" * 500,
                 "confirm payments_send {\"a\": {\"b\": " * 50]:
        assert isinstance(user.respond(text), str)

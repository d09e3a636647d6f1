"""MATHTool envs: Hermes tool calls run in the sandbox, the boxed answer ends the episode, turn caps truncate."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.math.datasets import AIME24, MathDataset

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True)
def _data_dir(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))


def python_call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def gold(task_id: str) -> str:
    """Test-only: the published AIME answer, looked up in the dataset by task id (never from info)."""
    ds = MathDataset(AIME24, hub=False)
    return str(ds.task(ds.index_of(task_id)).answer)


def test_a_tool_turn_then_a_boxed_answer() -> None:
    env = gym.make("AIME24Tool-v1")
    obs, info = env.reset(options={"task_index": 3})
    assert "<tool_call>" in obs and info["tools"][0]["function"]["name"] == "python"
    answer = int(gold(info["task_id"]))
    obs, reward, terminated, truncated, step_info = env.step(
        "Let me compute.\n" + python_call(f"a = {answer}\nprint(a)")
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs.startswith('<tool_response name="python">') and f"\n{answer}\n" in obs
    assert step_info["tool_results"][0]["ok"] is True
    obs, reward, terminated, truncated, step_info = env.step(f"So the answer is \\boxed{{{answer}}}.")
    assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
    # the code printed the answer, but a literal of its own, not a value computed from the problem
    assert step_info["verified"] is False
    assert step_info["details"]["verification"] == {
        "method": "python_rerun",
        "calls": 1,
        "successful_calls": 1,
        "code_ran": True,
        "printed_answer": True,
        "matching_calls": [0],
        "computed_calls": [],
        "reruns": [],
        "foreign_numbers": [{"call": 0, "numbers": [str(answer)]}],  # not the problem's: nothing to re-run
    }


def test_evidence_says_when_the_code_printed_something_else() -> None:
    env = gym.make("AIME24Tool-v1")
    env.reset(options={"task_index": 0})
    env.step(python_call("print(123456)"))
    *_, step_info = env.step("\\boxed{7}")
    assert step_info["verified"] is False
    evidence = step_info["details"]["verification"]
    assert evidence["code_ran"] and not evidence["printed_answer"]


def test_bad_calls_get_error_observations_and_the_episode_goes_on() -> None:
    env = gym.make("AIME24Tool-v1", max_calls_per_turn=1)
    env.reset(options={"task_index": 0})
    cases = [
        ('<tool_call>{"name": "python", "arguments": {"code": </tool_call>', "not valid JSON"),
        ('<tool_call>{"name": "bash", "arguments": {"cmd": "ls"}}</tool_call>', "unknown tool"),
        ('<tool_call>{"name": "python", "arguments": {"source": "1"}}</tool_call>', "exactly one argument"),
        (python_call("print(1)") + python_call("print(2)"), "at most 1 tool calls"),
        (python_call("import os\nos.system('ls /')"), "PermissionError"),
    ]
    for action, message in cases:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert message in obs and reward == 0.0 and not terminated and not truncated
    assert env.step("\\boxed{0}")[2] is True


def test_the_turn_cap_truncates() -> None:
    env = gym.make("AIME24Tool-v1", max_turns=2)
    env.reset(options={"task_index": 0})
    assert env.step(python_call("print(1)"))[3] is False
    _, reward, terminated, truncated, info = env.step(python_call("print(2)"))
    assert (reward, terminated, truncated, info["error"]) == (0.0, False, True, "turn_limit")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("\\boxed{1}")


def test_boxes_printed_by_tool_calls_do_not_count() -> None:
    env = gym.make("AIME24Tool-v1")
    _, info = env.reset(options={"task_index": 0})
    answer = gold(info["task_id"])
    # a tool call that mentions the right box does not answer, and the turn is a tool turn
    _, reward, terminated, *_ = env.step(python_call(f"print('\\\\boxed{{{answer}}}')"))
    assert not terminated and reward == 0.0
    *_, step_info = env.step("I think I am done.")
    assert step_info["error"] == "no_answer"


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="max_turns"):
        gym.make("AIME24Tool-v1", max_turns=0)
    with pytest.raises(ConfigError, match="sandbox"):
        gym.make("AIME24Tool-v1", sandbox="vm")

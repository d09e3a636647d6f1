"""The single-answer MATH envs: registration, env checker, reset semantics, scoring, the oracle, v0 vs v1."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.agents.base import OracleAgent
from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_info
from rollgym.core.task import Task

SINGLE_IDS = ["MATH500-v1", "AIME24-v1", "AMC23-v1"]
TOOL_IDS = ["MATH500Tool-v1", "AIME24Tool-v1", "AMC23Tool-v1"]
V0_IDS = ["MATH500-v0", "AIME24-v0", "AMC23-v0", "MATH-v0", "MATH500Tool-v0", "AIME24Tool-v0", "AMC23Tool-v0",
          "MATHTool-v0"]


@pytest.fixture(autouse=True)
def _data_dir(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))


def gold_policy(env_id: str, task_id: str) -> str:
    """The registered oracle's action for a task (it looks the published answer up by task id)."""
    return OracleAgent().act("", {"env_id": env_id, "task_id": task_id})


@pytest.mark.parametrize("env_id", SINGLE_IDS + TOOL_IDS)
def test_env_checker_passes_without_warnings(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    info = env_info(env_id)
    assert info.family == "math" and "rollgym.envs.math.prompts" in info.hashed_modules


def test_prefixed_ids_and_rollgym_make_work() -> None:
    assert gym.make("rollgym:AIME24-v1").unwrapped.env_id == "AIME24-v1"
    with pytest.raises(ConfigError, match="has no option 'nonsense'"):
        rollgym.make("MATH500-v1", nonsense=1)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("env_id", [*SINGLE_IDS, "MATH500-v0"])
def test_the_oracle_scores_one_on_every_row(env_id: str) -> None:
    env = gym.make(env_id)
    agent = OracleAgent()
    agent.check_env(env_id)
    size = env.unwrapped.source.size("test")
    rewards = []
    for index in range(size):
        obs, info = env.reset(options={"task_index": index})
        assert "answer" not in json.dumps(info["task_meta"])
        _, reward, terminated, truncated, step_info = env.step(agent.act(obs, info))
        assert terminated and not truncated
        rewards.append(reward)
        assert step_info["correct"] is (reward == 1.0)
    assert rewards == [1.0] * size


@pytest.mark.timeout(300)
@pytest.mark.parametrize("env_id", [*TOOL_IDS, "MATHTool-v1", "MATHTool-v0"])
def test_the_oracle_answers_tool_envs_on_the_first_turn(env_id: str) -> None:
    env = gym.make(env_id)
    for index in range(3):
        obs, info = env.reset(options={"task_index": index})
        _, reward, terminated, _, step_info = env.step(OracleAgent().act(obs, info))
        evidence = step_info["details"]["verification"]
        assert (reward, terminated, step_info["verified"], evidence["calls"]) == (1.0, True, False, 0)


def test_the_oracle_works_on_a_users_file(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    data.write_text(json.dumps({"problem": "What is 2+2?", "answer": "4", "id": "a"}) + "\n", encoding="utf-8")
    env = gym.make("MATH-v1", path=str(data))
    obs, info = env.reset(options={"task_index": 0})
    assert env.step(OracleAgent().act(obs, info))[1] == 1.0


V1_ONLY = [
    ("3", r"\boxed{3 \approx 4}", "relation"),
    ("3", r"\boxed{3 \text{, } 4 \text{, } 5}", "several_values"),
    ("3", r"\boxed{\{3\}}", "several_values"),
    ("3", r"\boxed{300\%}", "percent"),
    (r"\frac{\sqrt3}{3}", r"\boxed{0.57735026919}", "wrong"),
]


@pytest.mark.parametrize(("gold", "response", "error"), V1_ONLY)
def test_v1_refuses_what_v0_accepted(gold: str, response: str, error: str) -> None:
    task = Task("t", "MATH500-v1", "What is it?", gold)
    for env_id, correct in (("MATH500-v1", False), ("MATH500-v0", True), ("MATH500Tool-v1", False)):
        env = gym.make(env_id)
        env.reset(options={"task": task})
        _, reward, _, _, info = env.step(response)
        assert info["correct"] is correct, (env_id, info)
        if not correct:
            assert reward == 0.0 and info["error"] == error


@pytest.mark.parametrize("env_id", V0_IDS)
def test_v0_ids_stay_registered_and_say_they_are_superseded(env_id: str) -> None:
    info = env_info(env_id)
    assert "Superseded by -v1" in info.description and info.kwargs["rules"] == "v0"
    assert env_info(env_id.replace("-v0", "-v1")).kwargs["rules"] == "v1"


def test_wrong_and_empty_answers_score_zero() -> None:
    env = gym.make("AIME24-v1")
    env.reset(options={"task_index": 0})
    obs, reward, terminated, truncated, step_info = env.step("I do not know.")
    assert (obs, reward, terminated, truncated, step_info["error"]) == ("", 0.0, True, False, "no_answer")
    env.reset(options={"task_index": 0})
    _, reward, *_ , step_info = env.step("\\boxed{1000}")
    assert reward == 0.0 and step_info["error"] == "wrong" and step_info["parsed"] == "1000"


def test_reset_with_a_seed_is_deterministic_and_stays_in_the_test_split() -> None:
    env = gym.make("MATH500-v1")
    first = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    again = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    assert first == again and len(set(first)) > 1
    assert env.reset(seed=7)[1]["split"] == "test"


def test_train_and_validation_splits_are_refused() -> None:
    with pytest.raises(ConfigError, match="only a 'test' split"):
        gym.make("MATH500-v1", split="train")
    env = gym.make("AMC23-v1")
    with pytest.raises(ConfigError, match="only a 'test' split"):
        env.reset(options={"split": "validation"})


def test_general_env_takes_any_jsonl_with_named_fields(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    rows = [{"q": "What is 3*4?", "a": "12", "key": "p1"}, {"q": "Name the shape.", "a": "\\text{circle}", "key": "p2"}]
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    env = gym.make("MATH-v1", path=str(data), problem_field="q", answer_field="a", id_field="key")
    obs, info = env.reset(options={"task_index": 1})
    assert info["task_id"] == "mine/p2" and obs.startswith("Name the shape.")
    assert env.step("\\boxed{Circle}")[1] == 1.0
    bare = gym.make("MATH-v1")  # without data arguments it serves the MATH500 rows
    assert bare.reset(options={"task_index": 0})[1]["task_id"] == "math500/test/precalculus/807.json"
    assert bare.unwrapped.env_id == "MATH-v1" and bare.unwrapped.task.env_id == "MATH-v1"
    old = gym.make("MATHTool-v0")
    assert old.reset(options={"task_index": 0})[1]["env_id"] == "MATHTool-v0"
    assert old.unwrapped.task.env_id == "MATHTool-v0"


def test_env_options_reach_the_verifier() -> None:
    env = gym.make("AIME24-v1", box_policy="last", allow_final_answer_line=True)
    _, info = env.reset(options={"task_index": 0})
    answer = gold_policy("AIME24-v1", info["task_id"]).split("boxed{")[1].split("}")[0]
    assert env.step(f"\\boxed{{1}} no... \\boxed{{{answer}}}")[1] == 1.0
    env.reset(options={"task_index": 0})
    assert env.step(f"Final answer: {answer}")[1] == 1.0
    with pytest.raises(ConfigError, match="box_policy"):
        gym.make("AIME24-v1", box_policy="first")
    with pytest.raises(ConfigError, match="rules"):
        gym.make("AIME24-v1", rules="v9")


def test_spec_hashes_differ_between_single_and_tool_variants() -> None:
    ids = SINGLE_IDS + TOOL_IDS + ["MATH-v1", "MATHTool-v1", *V0_IDS]
    hashes: dict[str, Any] = {i: env_info(i).content_hash for i in ids}
    assert len(set(hashes.values())) == len(hashes)

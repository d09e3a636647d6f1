"""The single-answer MATH envs: registration, env checker, reset semantics, scoring, a gold-answer policy."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_info
from rollgym.envs.math.datasets import BUILTIN, MathDataset

SINGLE_IDS = ["MATH500-v0", "AIME24-v0", "AMC23-v0"]
TOOL_IDS = ["MATH500Tool-v0", "AIME24Tool-v0", "AMC23Tool-v0"]


@pytest.fixture(autouse=True)
def _data_dir(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))


def gold_policy(env_id: str, task_id: str) -> str:
    """Test-only oracle: looks the published answer up in the dataset file by task id (never in info)."""
    dataset = next(name for name, spec in BUILTIN.items() if env_id.startswith(spec.env_id.split("-")[0]))
    ds = MathDataset(BUILTIN[dataset], hub=False)
    return f"The answer is $\\boxed{{{ds.task(ds.index_of(task_id)).answer}}}$."


@pytest.mark.parametrize("env_id", SINGLE_IDS + TOOL_IDS)
def test_env_checker_passes_without_warnings(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    info = env_info(env_id)
    assert info.family == "math" and "rollgym.envs.math.prompts" in info.hashed_modules


def test_prefixed_ids_and_rollgym_make_work() -> None:
    assert gym.make("rollgym:AIME24-v0").unwrapped.env_id == "AIME24-v0"
    with pytest.raises(ConfigError, match="has no option 'nonsense'"):
        rollgym.make("MATH500-v0", nonsense=1)


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_gold_answers_score_one_on_every_row(env_id: str) -> None:
    env = gym.make(env_id)
    size = env.unwrapped.source.size("test")
    rewards = []
    for index in range(size):
        _, info = env.reset(options={"task_index": index})
        assert "answer" not in json.dumps(info["task_meta"])
        _, reward, terminated, truncated, step_info = env.step(gold_policy(env_id, info["task_id"]))
        assert terminated and not truncated
        rewards.append(reward)
        assert step_info["correct"] is (reward == 1.0)
    assert rewards == [1.0] * size


def test_wrong_and_empty_answers_score_zero() -> None:
    env = gym.make("AIME24-v0")
    env.reset(options={"task_index": 0})
    obs, reward, terminated, truncated, step_info = env.step("I do not know.")
    assert (obs, reward, terminated, truncated, step_info["error"]) == ("", 0.0, True, False, "no_answer")
    env.reset(options={"task_index": 0})
    _, reward, *_ , step_info = env.step("\\boxed{1000}")
    assert reward == 0.0 and step_info["error"] == "wrong" and step_info["parsed"] == "1000"


def test_reset_with_a_seed_is_deterministic_and_stays_in_the_test_split() -> None:
    env = gym.make("MATH500-v0")
    first = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    again = [env.reset(seed=7)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(3)]
    assert first == again and len(set(first)) > 1
    assert env.reset(seed=7)[1]["split"] == "test"


def test_train_and_validation_splits_are_refused() -> None:
    with pytest.raises(ConfigError, match="only a 'test' split"):
        gym.make("MATH500-v0", split="train")
    env = gym.make("AMC23-v0")
    with pytest.raises(ConfigError, match="only a 'test' split"):
        env.reset(options={"split": "validation"})


def test_general_env_takes_any_jsonl_with_named_fields(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    rows = [{"q": "What is 3*4?", "a": "12", "key": "p1"}, {"q": "Name the shape.", "a": "\\text{circle}", "key": "p2"}]
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    env = gym.make("MATH-v0", path=str(data), problem_field="q", answer_field="a", id_field="key")
    obs, info = env.reset(options={"task_index": 1})
    assert info["task_id"] == "mine/p2" and obs.startswith("Name the shape.")
    assert env.step("\\boxed{Circle}")[1] == 1.0
    bare = gym.make("MATH-v0")  # without data arguments it serves the MATH500 rows
    assert bare.reset(options={"task_index": 0})[1]["task_id"] == "math500/test/precalculus/807.json"
    assert bare.unwrapped.env_id == "MATH-v0" and bare.unwrapped.task.env_id == "MATH-v0"


def test_env_options_reach_the_verifier() -> None:
    env = gym.make("AIME24-v0", box_policy="last", allow_final_answer_line=True)
    _, info = env.reset(options={"task_index": 0})
    answer = gold_policy("AIME24-v0", info["task_id"]).split("boxed{")[1].split("}")[0]
    assert env.step(f"\\boxed{{1}} no... \\boxed{{{answer}}}")[1] == 1.0
    env.reset(options={"task_index": 0})
    assert env.step(f"Final answer: {answer}")[1] == 1.0
    with pytest.raises(ConfigError, match="box_policy"):
        gym.make("AIME24-v0", box_policy="first")


def test_spec_hashes_differ_between_single_and_tool_variants() -> None:
    hashes: dict[str, Any] = {i: env_info(i).content_hash for i in SINGLE_IDS + TOOL_IDS + ["MATH-v0", "MATHTool-v0"]}
    assert len(set(hashes.values())) == len(hashes)

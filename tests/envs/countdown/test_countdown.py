"""Countdown-v0: Gymnasium conformance, determinism, split disjointness, generator, oracle and random policy."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.agents.base import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import split_of_key
from rollgym.envs.countdown import (
    CountdownConfig,
    CountdownEnv,
    CountdownGenerator,
    content_key,
    countdown_oracle,
    countdown_random_policy,
    countdown_task,
    solve_countdown,
)
from rollgym.verifiers.countdown import verify_countdown

ENV_ID = "Countdown-v0"


def test_check_env_passes_without_warnings() -> None:
    for kwargs in ({}, {"num_numbers": 6, "usage": "at_most", "operators": "+*"}):
        env = gym.make(ENV_ID, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        env.close()


def test_make_with_and_without_import_prefix() -> None:
    assert isinstance(gym.make(ENV_ID).unwrapped, CountdownEnv)
    assert isinstance(gym.make(f"rollgym:{ENV_ID}").unwrapped, CountdownEnv)
    env = rollgym.make(ENV_ID, num_numbers=5, usage="at_most", operators="+-")
    _, info = env.reset(seed=3)
    meta = info["task_meta"]
    assert len(meta["numbers"]) == 5 and meta["usage"] == "at_most" and meta["operators"] == ["+", "-"]
    assert "at most once" in env.unwrapped.task.prompt


def test_make_vec_returns_tuples_of_strings() -> None:
    envs = gym.make_vec(ENV_ID, num_envs=8, vectorization_mode="sync")
    observations, infos = envs.reset(seed=0)
    assert isinstance(observations, tuple) and len(observations) == 8
    assert all(isinstance(o, str) and "<answer>" in o for o in observations)
    assert len(set(infos["task_id"])) == 8
    oracle_actions = tuple(
        countdown_oracle(obs, {"task_meta": env.unwrapped.task.meta}) for obs, env in zip(observations, envs.envs)
    )
    _, rewards, terminated, truncated, _ = envs.step(oracle_actions)
    assert rewards.tolist() == [1.0] * 8 and terminated.all() and not truncated.any()
    envs.close()


def test_step_reports_the_score_and_ends_the_episode() -> None:
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=1)
    assert obs == env.unwrapped.task.prompt and info["task_id"] == env.unwrapped.task.id
    assert info["system_prompt"] and info["env_id"] == ENV_ID
    assert "answer" not in info["task_meta"] and env.unwrapped.task.answer not in obs
    obs, reward, terminated, truncated, info = env.step("<answer>1 + 1</answer>")
    assert (obs, reward, terminated, truncated) == ("", 0.0, True, False)
    assert info["correct"] is False and info["error"] == "illegal" and info["parsed"] == "1 + 1"
    with pytest.raises(RuntimeError):
        env.step("<answer>1</answer>")


def test_same_seed_gives_the_same_task_across_instances() -> None:
    first = [gym.make(ENV_ID).reset(seed=s)[1]["task_id"] for s in range(20)]
    second = [gym.make(ENV_ID).reset(seed=s)[1]["task_id"] for s in range(20)]
    assert first == second and len(set(first)) == 20
    env = gym.make(ENV_ID)
    env.reset(seed=5)
    stream = [env.reset()[1]["task_id"] for _ in range(3)]
    env.reset(seed=5)
    assert [env.reset()[1]["task_id"] for _ in range(3)] == stream


PINNED_PROMPT = (
    "Countdown: combine the numbers 7, 37, 68, 55 to make 167.\n\n"
    "Rules:\n"
    "- Use every number exactly once; a number listed twice must be used twice.\n"
    "- Allowed operations: + - * / and parentheses. Nothing else: no unary minus, no exponents, "
    "no decimals, and no joining digits into new numbers.\n"
    "- Arithmetic is exact: intermediate results may be fractions or negative; "
    "only the final value must equal the target.\n\n"
    "Answer format: give one expression inside <answer></answer>, for example <answer>(6 + 4) * 3</answer> "
    "(format only). You may end it with '= 167'. Only the last <answer> block is read."
)


def test_pinned_tasks_catch_a_silent_generator_change() -> None:
    """If this fails, the generator or prompt changed: bump the env id to -v1 instead of editing the pins."""
    env = gym.make(ENV_ID)
    _, info = env.reset(options={"task_index": 0})
    task = env.unwrapped.task
    assert task.id == "Countdown-v0:train:0:d5368497eb"
    assert task.prompt == PINNED_PROMPT
    assert task.answer == "37 + 7 + 55 + 68"
    _, info = env.reset(seed=0)
    assert info["task_id"] == "Countdown-v0:train:1826701615:dd51261a15"
    assert info["task_meta"]["numbers"] == [85, 90, 49, 96] and info["task_meta"]["target"] == 725


def test_splits_are_disjoint_by_content() -> None:
    gen = CountdownGenerator()
    keys = {}
    for split in ("train", "test"):
        tasks = [gen.task(i, split) for i in range(3000)]
        keys[split] = {(tuple(sorted(t.meta["numbers"])), t.meta["target"]) for t in tasks}
        assert all(t.id.startswith(f"{ENV_ID}:{split}:") for t in tasks)
        assert len(keys[split]) > 2900  # tasks within a split are nearly all distinct
    assert not keys["train"] & keys["test"]


def test_split_membership_follows_the_content_key() -> None:
    gen = CountdownGenerator()
    for split in ("train", "validation", "test"):
        for index in range(30):
            task = gen.task(index, split)
            meta = task.meta
            assert split_of_key(content_key(meta["numbers"], meta["target"], meta["operators"], meta["usage"])) == split


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"num_numbers": 3},
        {"num_numbers": 6, "usage": "at_most"},
        {"num_numbers": 5, "operators": "+-", "min_target": 10, "max_target": 200},
        {"num_numbers": 4, "operators": "*/", "min_value": 2, "max_value": 12},
        {"num_numbers": 2, "min_value": 1, "max_value": 10, "min_target": 1, "max_target": 100},
    ],
)
def test_generated_tasks_respect_the_config_and_their_reference_solves_them(kwargs: dict) -> None:
    config = CountdownConfig(**kwargs)
    gen = CountdownGenerator(config)
    for index in range(200):
        task = gen.task(index, "train")
        numbers, target = task.meta["numbers"], task.meta["target"]
        assert len(numbers) == config.num_numbers
        assert all(config.min_value <= n <= config.max_value for n in numbers)
        assert config.min_target <= target <= config.max_target and target not in numbers
        assert task.meta["operators"] == list(config.operators) and task.meta["usage"] == config.usage
        assert str(target) in task.prompt and task.answer not in str(task.meta)
        assert verify_countdown(task, f"<answer>{task.answer}</answer>").correct, task


def test_oracle_solves_1000_default_tasks() -> None:
    env = gym.make(ENV_ID)
    agent = OracleAgent()
    wins = 0
    for index in range(1000):
        obs, info = env.reset(options={"task_index": index})
        wins += env.step(agent.act(obs, info))[1] == 1.0
    assert wins == 1000


@pytest.mark.parametrize(
    ("kwargs", "count"),
    [
        ({"num_numbers": 3}, 300),
        ({"num_numbers": 5}, 200),
        ({"num_numbers": 6}, 60),
        ({"num_numbers": 4, "usage": "at_most"}, 300),
        ({"num_numbers": 6, "usage": "at_most"}, 60),
        ({"num_numbers": 4, "operators": "+-", "min_target": 10, "max_target": 300}, 200),
    ],
)
def test_oracle_solves_other_configs(kwargs: dict, count: int) -> None:
    env = gym.make(ENV_ID, **kwargs, split="test")
    for index in range(count):
        obs, info = env.reset(options={"task_index": index})
        assert env.step(countdown_oracle(obs, info))[1] == 1.0, info["task_meta"]


def test_oracle_on_given_tasks() -> None:
    assert verify_countdown(countdown_task([1, 3, 4, 6], 24), f"<answer>{solve_countdown([1, 3, 4, 6], 24)}</answer>")
    assert solve_countdown([2, 2], 5) is None  # no solution: the oracle answers empty and scores 0
    env = gym.make(ENV_ID)
    obs, info = env.reset(options={"task": countdown_task([2, 2], 5)})
    assert env.step(countdown_oracle(obs, info))[2:4] == (True, False)


def test_random_policy_is_well_formed_and_scores_near_zero() -> None:
    env = gym.make(ENV_ID)
    agent = RandomAgent(seed=0)
    rewards, errors = [], set()
    for index in range(500):
        obs, info = env.reset(options={"task_index": index})
        _, reward, _, _, step_info = env.step(agent.act(obs, info))
        rewards.append(reward)
        errors.add(step_info["error"])
    assert np.mean(rewards) < 0.05
    assert errors <= {None, "wrong", "division_by_zero"}  # random answers are valid expressions
    rng = np.random.default_rng(1)
    _, info = gym.make(ENV_ID, usage="at_most").reset(seed=0)
    assert countdown_random_policy("", info, rng).startswith("<answer>")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_numbers": 1}, "num_numbers"),
        ({"num_numbers": 9}, "num_numbers"),
        ({"num_numbers": 4.0}, "num_numbers"),
        ({"min_value": 0}, "min_value"),
        ({"min_value": 50, "max_value": 10}, "max_value"),
        ({"min_target": 0}, "min_target"),
        ({"min_target": 500, "max_target": 100}, "max_target"),
        ({"operators": "+^"}, "operators"),
        ({"operators": ""}, "operators"),
        ({"operators": 3}, "operators"),
        ({"usage": "twice"}, "usage"),
        ({"split": "dev"}, "split"),
    ],
)
def test_bad_config_is_one_clear_sentence(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        gym.make(ENV_ID, **kwargs)
    message = str(excinfo.value)
    assert field in message and message.endswith(".") and message.count(". ") == 0


def test_unreachable_config_fails_at_construction() -> None:
    for _ in range(2):  # every time: only configurations that drew a task are remembered
        with pytest.raises(ConfigError, match="widen the target"):
            gym.make(ENV_ID, num_numbers=3, max_value=10, operators="+", min_target=100, max_target=999)


def test_a_configuration_is_checked_by_one_draw_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building many envs of one configuration (a collector's workers) draws the check task once."""
    from rollgym.envs.countdown.generator import CountdownGenerator

    draws: list[tuple[int, str]] = []
    task = CountdownGenerator.task
    monkeypatch.setattr(CountdownGenerator, "task", lambda self, i, split="train": draws.append((i, split))
                        or task(self, i, split))
    for _ in range(3):
        gym.make(ENV_ID, num_numbers=3, max_value=37, split="test")
    assert draws == [(0, "test")]
    gym.make(ENV_ID, num_numbers=3, max_value=37, split="train")
    assert draws == [(0, "test"), (0, "train")]


def test_unknown_keyword_is_rejected() -> None:
    with pytest.raises(ConfigError, match="has no option 'num_number'; did you mean 'num_numbers'"):
        rollgym.make(ENV_ID, num_number=5)


def test_usage_alias_and_operator_spellings() -> None:
    assert CountdownConfig(usage="at most").usage == "at_most"
    assert CountdownConfig(operators=("/", "+")).operators == ("+", "/")
    assert CountdownConfig(operators="+, *").operators == ("+", "*")


@pytest.mark.parametrize("config", [
    CountdownConfig(), CountdownConfig(usage="at_most", num_numbers=5),
    CountdownConfig(operators="-/", num_numbers=3, max_value=12, min_target=1, max_target=20),
    CountdownConfig(operators="+*", num_numbers=6, max_target=9999),
])
def test_value_screen_follows_the_expression_builder_draw_for_draw(config: CountdownConfig) -> None:
    """Candidates are screened by value (_target) and only the accepted one is built (_build): they must agree."""
    from rollgym.envs.countdown.generator import CountdownGenerator

    gen = CountdownGenerator(config)
    rng = np.random.default_rng(0)
    n, span = config.num_numbers, config.max_value - config.min_value + 1
    agreed = 0
    for row in rng.random((3000, 4 * n + 1)).tolist():
        numbers = [config.min_value + int(x * span) for x in row[:n]]
        built = gen._build(numbers, row[n:])
        assert gen._target(numbers, row[n:]) == (None if built is None else built[0])
        agreed += built is not None
    assert agreed > 0

"""ToolGen envs: the Gymnasium contract per split and per app, the oracle on every split (test_unseen included),
the random policy, the score fields, configuration errors, and a sweep of every template of every app."""

from __future__ import annotations

import json
import warnings
from collections import Counter
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym
from rollgym.agents.base import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.envs.tools.generated import SCENARIO_IDS, catalog
from rollgym.envs.tools.generated.policies import solve_every_template
from rollgym.verifiers.tools import GATE

from .helpers import play

IDS = ["ToolGen-v0", *SCENARIO_IDS.values()]
SPLITS = ("train", "test", "test_unseen")


def _checked(env: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]


@pytest.mark.parametrize("split", SPLITS)
def test_check_env_passes_on_every_split_and_on_sample_apps(split):
    _checked(gym.make("ToolGen-v0", split=split))
    for app_id in catalog.app_ids(split)[:: 70 if split != "test_unseen" else 24]:
        _checked(gym.make("ToolGen-v0", split=split, apps=[app_id]))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_check_env_passes_for_a_quarter_of_the_apps_of_each_split():
    """Every fourth app (``bench/bench_toolgen.py --sweep`` runs check_env on all 256)."""
    for split in ("train", "test_unseen"):
        for app_id in catalog.app_ids(split)[::4]:
            env = gym.make("ToolGen-v0", split=split, apps=[app_id], distractors=0)
            _checked(env)
            env.close()


@pytest.mark.parametrize("split", SPLITS)
def test_the_oracle_solves_every_task_through_the_text_interface(split):
    for env_id in IDS:
        env = gym.make(env_id, split=split)
        for index in range(8 if env_id == "ToolGen-v0" else 4):
            reward, terminated, _, info = play(env, OracleAgent(), {"task_index": index})
            assert terminated and reward == 1.0 and info["correct"] is True, (env_id, split, index, info["details"])
            assert info["task_meta"]["unseen"] is (split == "test_unseen")
        env.close()


def test_the_oracle_covers_every_kind_on_train_and_test_unseen():
    for split in ("train", "test_unseen"):
        env = gym.make("ToolGen-v0", split=split)
        kinds: Counter[str] = Counter()
        for index in range(120):
            reward, _, _, info = play(env, OracleAgent(), {"task_index": index})
            assert reward == 1.0, (split, index, info["task_meta"]["template"], info["details"])
            kinds[info["task_meta"]["kind"]] += 1
        assert len(kinds) >= 16, kinds
        env.close()


def test_the_random_policy_stays_near_zero():
    for split in SPLITS:
        env = gym.make("ToolGen-v0", split=split, max_turns=12)
        wins = sum(play(env, RandomAgent(seed), {"task_index": seed}, seed)[0] for seed in range(40))
        assert wins <= 1, (split, wins)
        env.close()


def test_terminal_steps_carry_the_score_fields():
    env = gym.make("ToolGen-v0", max_turns=3)
    reward, terminated, truncated, info = play(env, RandomAgent(1), {"task_index": 2})
    for key in ("reward", "correct", "parsed", "error", "details"):
        assert key in info
    assert set(info["details"]["criteria"]) >= {"required_changes", GATE}
    if truncated:
        assert info["error"] == "not_completed" and info["details"]["completed"] is False and reward == 0.0
    reward, terminated, _, info = play(env, OracleAgent(), {"task_index": 2})
    assert terminated and info["correct"] is True and info["error"] is None and type(info["reward"]) is float


def test_a_world_shows_its_apps_tools_and_request():
    env = gym.make("ToolGen-v0", split="test", distractors=2)
    obs, info = env.reset(options={"task_index": 5})
    world = info["task_meta"]["world"]
    assert len(world) == len(info["task_meta"]["apps"]) + 2
    names = {t["function"]["name"] for t in info["tools"]}
    assert "complete_task" in names and all(any(n.startswith(a + "_") for n in names) for a in world)
    assert all(catalog.schema(a).title in obs for a in world) and "Task:" in obs
    env.close()


def test_a_question_s_answer_is_never_in_the_public_parameters():
    env = gym.make("ToolGen-Lookup-v0", split="test")
    for index in range(60):
        _, info = env.reset(options={"task_index": index})
        answer = env.unwrapped.task.answer
        shown = json.dumps(info["task_meta"])
        values = answer if isinstance(answer, list) else [answer]
        if info["task_meta"]["kind"] != "filter_list":  # a list of names may include a name the filter mentions
            assert all(str(v) not in shown for v in values), (info["task_meta"], answer)
    env.close()


def test_the_same_seed_gives_the_same_task_and_world():
    a, b = gym.make("ToolGen-v0", split="test_unseen"), gym.make("ToolGen-v0", split="test_unseen")
    assert a.reset(seed=11)[1]["task_meta"] == b.reset(seed=11)[1]["task_meta"]


def test_configuration_mistakes_get_one_clear_sentence():
    unseen = catalog.app_ids("test_unseen")[0]
    cases = [({"split": "holdout"}, "Unknown split"), ({"apps": ["no_such_app"]}, "no generated app"),
             ({"apps": [unseen]}, "do not belong to the train split"), ({"groups": ["poetry"]}, "Unknown scenario"),
             ({"apps": "maple_library"}, "non-empty list"), ({"distractors": 9}, "distractors"),
             ({"max_turns": 0}, "positive integer")]
    for kwargs, words in cases:
        with pytest.raises(ConfigError, match=words):
            rollgym.make("ToolGen-v0", **kwargs)
    with pytest.raises(ConfigError, match="at least two apps"):
        env = gym.make("ToolGen-CrossApp-v0", apps=[catalog.app_ids("train")[0]])
        env.reset(seed=0)
    env = gym.make("ToolGen-v0", split="test_unseen")
    with pytest.raises(ConfigError):
        env.reset(options={"task": Task("x", "ToolGen-v0", "p", None, {})})


def test_sampled_templates_of_sample_apps_are_solved_by_their_reference():
    ids = [*catalog.app_ids("train")[::50], *catalog.app_ids("test_unseen")[::24]]
    solved, failures = solve_every_template(ids, per_app=20)
    assert not failures and sum(solved.values()) >= 80, failures


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_template_of_every_app_samples_and_is_solved_by_its_reference():
    """The counts in ``stats()`` are honest: every counted template draws an instance and its reference solves it."""
    solved, failures = solve_every_template(catalog.app_ids())
    assert not failures, failures[:10]
    assert sum(solved.values()) == catalog.stats()["templates"]


def test_test_unseen_is_a_split_only_where_the_source_declares_it():
    """TextEnv accepts a task source's ``extra_splits``; every other env still refuses the name."""
    env = gym.make("ToolGen-v0")
    _, info = env.reset(options={"task_index": 0, "split": "test_unseen"})
    assert info["task_meta"]["unseen"] is True
    with pytest.raises(ConfigError, match="Unknown or empty split"):
        rollgym.make("ToolWorld-v1", split="test_unseen")
    with pytest.raises(ConfigError, match="Unknown or empty split"):
        rollgym.make("ToolWorld-v1").reset(options={"task_index": 0, "split": "test_unseen"})
